// `padless train --nproc-per-node 2` on the CPU (Gloo): the job trains, rank 0 alone writes the
// model, the log and the checkpoints, which a single process refuses to resume; a worker killed in
// the middle of a checkpoint write (PADLESS_FAULT_INJECT) fails the whole job at once, naming the
// rank; --resume then finishes the run from the last complete checkpoint, on both ranks.
#include <gtest/gtest.h>
#include <unistd.h>

#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cli_runner.h"

namespace padless::cli::testing {
namespace {

// 240 short labeled lines: label 1 iff the word "good" occurs.
std::string SyntheticTsv() {
  const std::vector<std::string> words = {"the",   "movie", "plot", "actor",  "scene", "long",
                                          "music", "story", "film", "ending", "dull",  "fine"};
  std::mt19937 rng(5);
  std::string tsv = "label\ttext\n";
  for (int i = 0; i < 240; ++i) {
    const bool positive = i % 2 == 0;
    std::string text;
    const int n = 4 + static_cast<int>(rng() % 12);
    for (int w = 0; w < n; ++w) text += words[rng() % words.size()] + " ";
    if (positive) text += "good";
    tsv += absl::StrCat(positive ? 1 : 0, "\t", text, "\n");
  }
  return tsv;
}

std::vector<std::string> TrainArgs(const std::string& dir) {
  return {"train",
          "--nproc-per-node",
          "2",
          "--data",
          dir + "/d.tsv",
          "--out",
          dir + "/model",
          "--preset",
          "tiny",
          "--epochs",
          "2",
          "--max-len",
          "24",
          "--max-tokens",
          "192",
          "--vocab-size",
          "30",
          "--device",
          "cpu",
          "--threads",
          "1",
          "--dev-fraction",
          "0.2",
          "--checkpoint-every",
          "3",
          "--keep-checkpoints",
          "5",
          "--dist-timeout",
          "20"};
}

TEST(TrainCliDistTest, TwoLocalWorkersTrainAndRankZeroWrites) {
  const std::string dir = ScratchDir("dist_train");
  WriteFile(dir + "/d.tsv", SyntheticTsv());
  std::vector<std::string> args = TrainArgs(dir);
  args.insert(args.end(), {"--metrics-json", dir + "/m.json"});
  const CliResult r = RunPadless(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(absl::StrContains(r.err, "[rank 0] data parallel: 2 ranks (gloo)")) << r.err;
  EXPECT_TRUE(absl::StrContains(r.out + r.err, "model written to")) << r.out << r.err;
  EXPECT_FALSE(ReadFile(dir + "/model/model.safetensors").empty());
  EXPECT_FALSE(ReadFile(dir + "/model/train_log.csv").empty());
  EXPECT_TRUE(absl::StrContains(ReadFile(dir + "/m.json"), "accuracy"));

  // Its checkpoints resume only at the same world size: a single process refuses them.
  std::vector<std::string> alone = TrainArgs(dir);
  alone.erase(alone.begin() + 1, alone.begin() + 3);  // --nproc-per-node 2
  alone.push_back("--resume");
  const CliResult refused = RunPadless(alone);
  EXPECT_EQ(refused.exit_code, 1) << refused.err;
  EXPECT_TRUE(absl::StrContains(refused.err, "was written by a job of 2 ranks, this one has 1"))
      << refused.err;
}

TEST(TrainCliDistTest, AKilledWorkerFailsTheJobAndResumeFinishesIt) {
  const std::string dir = ScratchDir("dist_kill");
  WriteFile(dir + "/d.tsv", SyntheticTsv());
  // Rank 0 (the checkpoint writer) is SIGKILLed in the middle of its second checkpoint.
  std::vector<std::string> args = TrainArgs(dir);
  setenv("PADLESS_FAULT_INJECT", "kill_during_checkpoint:2", 1);
  const CliResult r = RunPadless(args);
  unsetenv("PADLESS_FAULT_INJECT");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(absl::StrContains(r.err, "rank 0 of 2 failed (signal 9)")) << r.err;

  args.push_back("--resume");
  const CliResult resumed = RunPadless(args);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_TRUE(absl::StrContains(resumed.err, "resuming from")) << resumed.err;
  EXPECT_FALSE(ReadFile(dir + "/model/model.safetensors").empty());
}

}  // namespace
}  // namespace padless::cli::testing
