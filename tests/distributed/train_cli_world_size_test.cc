// `padless train --nproc-per-node 3` and `4` on the CPU (Gloo) at --max-tokens 512 (issue 47):
// the training set packs into one row of many sequences, which no rank count above 1 could share
// before the planner learned to halve a packed row between its sequences. The ranks' first step
// holds every example, so its loss (the mean over the step's sequences across the ranks) must
// equal the loss of one process's first step on the same examples. Then ranks left short get
// empty batches (single-sequence batches cannot be halved): with --grad-accum 2 the one optimizer
// step again holds every example, and its loss matches one process's; without accumulation whole
// steps of some ranks are empty, and the job still runs in step.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cli_runner.h"

namespace padless::distributed {
namespace {

using cli::testing::CliResult;
using cli::testing::ReadFile;
using cli::testing::RunPadless;
using cli::testing::ScratchDir;
using cli::testing::WriteFile;

// `lines` labeled texts of 2 to 4 one-letter words (label 1 iff "g" occurs): one token a word
// whatever the vocabulary, so 60 lines ([CLS] and [SEP] included) stay under 512 tokens.
std::string OneLetterTsv(int lines) {
  const std::vector<std::string> words = {"a", "b", "c", "d", "e", "f", "h", "i"};
  std::mt19937 rng(47);
  std::string tsv = "label\ttext\n";
  for (int i = 0; i < lines; ++i) {
    const bool positive = i % 2 == 0;
    std::string text = positive ? "g" : words[rng() % words.size()];
    const int n = 1 + static_cast<int>(rng() % 3);
    for (int w = 0; w < n; ++w) text += " " + words[rng() % words.size()];
    tsv += absl::StrCat(positive ? 1 : 0, "\t", text, "\n");
  }
  return tsv;
}

// `padless train` on `dir`/d.tsv into `dir`/`out` by `ranks` processes (1: no launcher), no
// dropout (the ranks' masks would differ from one process's), one epoch.
std::vector<std::string> TrainArgs(const std::string& dir, const std::string& out, int ranks) {
  std::vector<std::string> args = {"train",
                                   "--data",
                                   dir + "/d.tsv",
                                   "--out",
                                   dir + "/" + out,
                                   "--preset",
                                   "tiny",
                                   "--epochs",
                                   "1",
                                   "--dropout",
                                   "0",
                                   "--vocab-size",
                                   "40",
                                   "--device",
                                   "cpu",
                                   "--threads",
                                   "1",
                                   "--dist-timeout",
                                   "20"};
  if (ranks > 1) args.insert(args.begin() + 1, {"--nproc-per-node", std::to_string(ranks)});
  return args;
}

// The loss of the first step in `out`/train_log.csv (rank 0 writes it; the loss is the ranks').
double FirstStepLoss(const std::string& dir, const std::string& out) {
  const std::vector<std::string> lines =
      absl::StrSplit(ReadFile(dir + "/" + out + "/train_log.csv"), '\n');
  EXPECT_GE(lines.size(), 2u);
  if (lines.size() < 2) return -1;
  const std::vector<std::string> fields = absl::StrSplit(lines[1], ',');
  EXPECT_EQ(fields[0], "1") << lines[1];
  return std::stod(fields[2]);
}

TEST(TrainCliWorldSizeTest, ThreeAndFourRanksShareOnePackedRowAndMatchOneProcess) {
  const std::string dir = ScratchDir("dist_world_sizes");
  WriteFile(dir + "/d.tsv", OneLetterTsv(60));
  std::vector<std::string> single = TrainArgs(dir, "one", 1);
  single.insert(single.end(), {"--max-tokens", "512"});
  const CliResult one = RunPadless(single);
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const double reference = FirstStepLoss(dir, "one");
  for (int ranks : {3, 4}) {
    const std::string out = absl::StrCat("ranks", ranks);
    std::vector<std::string> args = TrainArgs(dir, out, ranks);
    args.insert(args.end(), {"--max-tokens", "512"});
    const CliResult r = RunPadless(args);
    ASSERT_EQ(r.exit_code, 0) << ranks << " ranks: " << r.err;
    EXPECT_TRUE(absl::StrContains(
        r.err, absl::StrCat("[rank 0] data parallel: ", ranks, " ranks on 1 node (gloo)")))
        << r.err;
    EXPECT_NEAR(FirstStepLoss(dir, out), reference, 2e-6) << ranks << " ranks";
  }
}

TEST(TrainCliWorldSizeTest, ShortRanksTakeEmptyBatchesAndTheLossStaysTheMean) {
  const std::string dir = ScratchDir("dist_empty_batches");
  WriteFile(dir + "/d.tsv", OneLetterTsv(5));
  // One process, one batch of all 5 examples.
  std::vector<std::string> single = TrainArgs(dir, "one", 1);
  single.insert(single.end(), {"--batching", "padded", "--batch-size", "5"});
  const CliResult one = RunPadless(single);
  ASSERT_EQ(one.exit_code, 0) << one.err;
  // 4 ranks, one example a batch: 5 batches become 8 with 3 empty ones, 2 a rank, one optimizer
  // step of all 5 examples (3 ranks run one example and one empty batch).
  std::vector<std::string> four = TrainArgs(dir, "four", 4);
  four.insert(four.end(), {"--batching", "padded", "--batch-size", "1", "--grad-accum", "2"});
  const CliResult r = RunPadless(four);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NEAR(FirstStepLoss(dir, "four"), FirstStepLoss(dir, "one"), 2e-6);

  // Without accumulation the epoch has 2 steps, and in the one of the shortest example 3 ranks
  // have no data at all: they add zeros to the all-reduces and the job goes on in step.
  std::vector<std::string> steps = TrainArgs(dir, "four_steps", 4);
  steps.insert(steps.end(), {"--batching", "padded", "--batch-size", "1"});
  const CliResult two_steps = RunPadless(steps);
  ASSERT_EQ(two_steps.exit_code, 0) << two_steps.err;
  const std::string log = ReadFile(dir + "/four_steps/train_log.csv");
  EXPECT_TRUE(absl::StrContains(log, "\n2,0,")) << log;
  EXPECT_FALSE(absl::StrContains(log, "nan")) << log;
}

}  // namespace
}  // namespace padless::distributed
