// `padless train --nproc-per-node 2` on the CPU (Gloo): the job trains, rank 0 alone writes the
// model, the log and the checkpoints, which a single process refuses to resume; a worker killed in
// the middle of a checkpoint write (PADLESS_FAULT_INJECT) fails the whole job at once, naming the
// rank; --resume then finishes the run from the last complete checkpoint, on both ranks. Two
// launchers as two nodes train as one node of four; the launcher's flags are checked first; a
// checkpoint resumes at another world size.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cli_runner.h"

namespace padless::distributed {
namespace {

// `padless` runs as a child process (tests/cli/cli_runner.h).
using cli::testing::CliResult;
using cli::testing::RunPadless;
using cli::testing::ScratchDir;
using cli::testing::ReadFile;
using cli::testing::WriteFile;

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
  EXPECT_TRUE(absl::StrContains(
      r.err, "[rank 0] data parallel: 2 ranks on 1 node (gloo), 192 tokens a batch per rank"))
      << r.err;
  EXPECT_TRUE(absl::StrContains(r.out + r.err, "model written to")) << r.out << r.err;
  EXPECT_FALSE(ReadFile(dir + "/model/model.safetensors").empty());
  EXPECT_FALSE(ReadFile(dir + "/model/train_log.csv").empty());
  EXPECT_TRUE(absl::StrContains(ReadFile(dir + "/m.json"), "accuracy"));
}

// Tokenize once: rank 0 builds the token cache and rank 1 only maps it (each rank's cache line says
// which); a second job with the same --token-cache hits it and trains to the same weights.
TEST(TrainCliDistTest, RankZeroTokenizesOnceAndEveryRankMapsTheCache) {
  const std::string dir = ScratchDir("dist_token_cache");
  WriteFile(dir + "/d.tsv", SyntheticTsv());
  const std::string cache = dir + "/tokens.cache";
  std::vector<std::string> args = TrainArgs(dir);
  args.insert(args.end(), {"--token-cache", cache});
  const CliResult built = RunPadless(args);
  ASSERT_EQ(built.exit_code, 0) << built.err;
  EXPECT_TRUE(absl::StrContains(built.err, "[rank 0] token cache: built " + cache)) << built.err;
  EXPECT_TRUE(absl::StrContains(
      built.err, "[rank 1] token cache: mapped (rank 0's; not tokenized here) " + cache))
      << built.err;
  EXPECT_FALSE(absl::StrContains(built.err, "[rank 1] token cache: build")) << built.err;
  EXPECT_FALSE(ReadFile(cache).empty());

  args[std::find(args.begin(), args.end(), "--out") - args.begin() + 1] = dir + "/model2";
  const CliResult hit = RunPadless(args);
  ASSERT_EQ(hit.exit_code, 0) << hit.err;
  EXPECT_TRUE(absl::StrContains(hit.err, "[rank 0] token cache: hit " + cache)) << hit.err;
  EXPECT_FALSE(absl::StrContains(hit.err, "token cache: build")) << hit.err;
  EXPECT_EQ(ReadFile(dir + "/model2/model.safetensors"),
            ReadFile(dir + "/model/model.safetensors"));
}

// The schedule line of a run: "... steps per epoch, T steps in all" -> T.
int64_t TotalSteps(const std::string& err) {
  const size_t at = err.find(" steps in all");
  const size_t start = err.rfind(' ', at - 1) + 1;
  return std::stoll(err.substr(start, at - start));
}

// A 2-rank job killed after its checkpoint of step 3 resumes on 1 rank and on 3: the epoch in
// progress continues at the same share of its batches and the learning-rate schedule at the same
// share of the run (this job's schedule, whose global batch differs), and both finish.
TEST(TrainCliDistTest, ACheckpointResumesAtAnotherWorldSize) {
  const std::string dir = ScratchDir("dist_reshape");
  WriteFile(dir + "/d.tsv", SyntheticTsv());
  std::vector<std::string> args = TrainArgs(dir);
  setenv("PADLESS_FAULT_INJECT", "kill_during_checkpoint:2", 1);
  const CliResult killed = RunPadless(args);
  unsetenv("PADLESS_FAULT_INJECT");
  ASSERT_EQ(killed.exit_code, 1) << killed.err;
  const int64_t two_rank_total = TotalSteps(killed.err);
  ASSERT_GT(two_rank_total, 6);
  std::filesystem::copy(dir + "/model", dir + "/model3", std::filesystem::copy_options::recursive);

  for (int world : {1, 3}) {
    std::vector<std::string> resume = TrainArgs(dir);
    const std::string out = dir + (world == 1 ? "/model" : "/model3");
    resume[6] = out;
    if (world == 1) {
      resume.erase(resume.begin() + 1, resume.begin() + 3);  // one process, no launcher
    } else {
      resume[2] = "3";
    }
    resume.push_back("--resume");
    const CliResult r = RunPadless(resume);
    ASSERT_EQ(r.exit_code, 0) << world << " ranks: " << r.err;
    const std::string line = absl::StrCat(
        "resume: the checkpoint was written by a job of 2 ranks, "
        "this one has ",
        world, ": epoch 0 continues at batch ");
    const size_t at = r.err.find(line);
    ASSERT_NE(at, std::string::npos) << r.err;
    // "... the schedule at step X of Y": X / Y is the share of the run done at the checkpoint
    // (step 3 of the 2-rank schedule), within one step of this schedule.
    const size_t sched = r.err.find("the schedule at step ", at) + 21;
    const size_t of = r.err.find(" of ", sched);
    const int64_t x = std::stoll(r.err.substr(sched, of - sched));
    const int64_t y = std::stoll(r.err.substr(of + 4));
    EXPECT_EQ(y, TotalSteps(r.err));
    EXPECT_NEAR(static_cast<double>(x) / y, 3.0 / two_rank_total, 1.0 / y) << r.err;
    EXPECT_FALSE(ReadFile(out + "/model.safetensors").empty());
  }
}

// Two "nodes" of two workers (two launchers, as two hosts would run them, meeting at node 0's
// port) train exactly as one node of four: the same ranks, the same model, bit for bit. The
// metrics JSON says what ran.
TEST(TrainCliDistTest, TwoNodesOfTwoWorkersTrainLikeOneNodeOfFour) {
  const std::string dir = ScratchDir("dist_nodes");
  WriteFile(dir + "/d.tsv", SyntheticTsv());
  std::vector<std::string> four = TrainArgs(dir);
  four[2] = "4";  // --nproc-per-node 4
  four[6] = dir + "/one_node";
  four.insert(four.end(), {"--metrics-json", dir + "/one_node.json"});
  const CliResult one = RunPadless(four);
  ASSERT_EQ(one.exit_code, 0) << one.err;

  const std::string port = std::to_string(4000 + getpid() % 20000);
  std::vector<CliResult> node(2);
  std::vector<std::thread> threads;
  for (int k = 0; k < 2; ++k) {
    threads.emplace_back([&, k] {
      std::vector<std::string> args = TrainArgs(dir);
      args[6] = dir + "/two_nodes";
      args.insert(args.end(),
                  {"--nnodes", "2", "--node-rank", std::to_string(k), "--master-addr", "127.0.0.1",
                   "--master-port", port, "--metrics-json", dir + "/two_nodes.json"});
      node[k] = RunPadless(args);
    });
  }
  for (std::thread& t : threads) t.join();
  ASSERT_EQ(node[0].exit_code, 0) << node[0].err;
  ASSERT_EQ(node[1].exit_code, 0) << node[1].err;
  EXPECT_TRUE(absl::StrContains(node[0].err, "[rank 0] data parallel: 4 ranks on 2 nodes (gloo)"))
      << node[0].err;
  const std::string weights = ReadFile(dir + "/two_nodes/model.safetensors");
  EXPECT_FALSE(weights.empty());
  EXPECT_TRUE(weights == ReadFile(dir + "/one_node/model.safetensors"))
      << "two nodes of two must train exactly as one node of four";
  const std::string metrics = ReadFile(dir + "/two_nodes.json");
  for (const char* field :
       {"\"world_size\": 4", "\"nodes\": 2", "\"backend\": \"gloo\"", "\"rank_max_tokens\": 192"}) {
    EXPECT_TRUE(absl::StrContains(metrics, field)) << field << " in " << metrics;
  }
  EXPECT_TRUE(absl::StrContains(ReadFile(dir + "/one_node.json"), "\"nodes\": 1"));
}

TEST(TrainCliDistTest, LauncherFlagsAreCheckedBeforeAnythingRuns) {
  const std::string dir = ScratchDir("dist_flags");
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--nnodes", "2", "--node-rank", "0"}, "a job of 2 nodes needs --master-addr and"},
      {{"--nnodes", "0"}, "--nnodes must be >= 1, got 0"},
      {{"--nnodes", "2", "--node-rank", "2", "--master-addr", "h", "--master-port", "1"},
       "--node-rank must be in [0, 2), got 2"},
      {{"--master-port", "70000"}, "--master-port must be in [1, 65535], got 70000"},
      {{"--grad-comm", "fp16"}, "--grad-comm must be fp32 or bf16, not 'fp16'"},
  };
  for (const auto& [flags, message] : cases) {
    std::vector<std::string> args = TrainArgs(dir);  // d.tsv does not exist: flags come first
    args.insert(args.end(), flags.begin(), flags.end());
    const CliResult r = RunPadless(args);
    EXPECT_EQ(r.exit_code, 2) << flags[0] << ": " << r.err;
    EXPECT_TRUE(absl::StrContains(r.err, message)) << flags[0] << ": " << r.err;
  }
  std::vector<std::string> alone = TrainArgs(dir);
  alone.erase(alone.begin() + 1, alone.begin() + 3);  // no --nproc-per-node
  alone.insert(alone.end(), {"--nnodes", "2"});
  const CliResult r = RunPadless(alone);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(absl::StrContains(r.err, "go with --nproc-per-node")) << r.err;
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
  const std::string weights = ReadFile(dir + "/model/model.safetensors");
  EXPECT_FALSE(weights.empty());

  // Each rank resumed its own random stream (dropout masks), so the resumed job ends exactly where
  // the uninterrupted one does.
  std::vector<std::string> whole = TrainArgs(dir);
  whole[6] = dir + "/uninterrupted";
  const CliResult uninterrupted = RunPadless(whole);
  ASSERT_EQ(uninterrupted.exit_code, 0) << uninterrupted.err;
  EXPECT_TRUE(weights == ReadFile(dir + "/uninterrupted/model.safetensors"))
      << "the resumed job must train exactly as the uninterrupted one";
}

}  // namespace
}  // namespace padless::distributed
