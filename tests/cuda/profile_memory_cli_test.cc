// End-to-end: `padless profile-memory` on the CPU (counting allocator) with the tiny preset.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string ReadFile(const std::string& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(ProfileMemoryCliTest, SweepsWritesCsvSvgAndFits) {
  // No std::filesystem here: libtorch.so exports a broken copy of some of its symbols.
  const std::string cli = PADLESS_CLI_PATH;
  if (access(cli.c_str(), X_OK) != 0) GTEST_SKIP() << "padless binary not built: " << cli;
  const std::string prefix = absl::StrCat(::testing::TempDir(), "padless_profile_", getpid(), "_");
  const std::string csv = prefix + "m.csv", svg_path = prefix + "m.svg", log = prefix + "out.txt";
  // One intra-op thread: on a busy 2-core machine torch's thread pool otherwise spins for minutes.
  // A small vocabulary keeps the embedding gradient from hiding the activations.
  const std::string cmd = absl::StrCat(
      "OMP_NUM_THREADS=1 ", cli,
      " profile-memory --sweep_device=cpu --sweep_preset=tiny --sweep_vocab_size=500 "
      "--sweep_seq_lens=16,32,64,128 --sweep_batch_sizes=4 --sweep_amp=off "
      "--sweep_checkpoint=none,all --sweep_attention=padded,varlen --held_out_lens=32 --quiet "
      "--csv=",
      csv, " --svg=", svg_path, " > ", log, " 2>&1");
  ASSERT_EQ(std::system(cmd.c_str()), 0) << ReadFile(log);
  const std::string out = ReadFile(log);
  EXPECT_THAT(out, HasSubstr("memory model per config"));
  EXPECT_THAT(out, HasSubstr("fp32/ckpt=all/varlen"));
  EXPECT_THAT(out, Not(HasSubstr("not fitted")));

  const std::vector<std::string> lines = absl::StrSplit(ReadFile(csv), '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 1u + 4 * 2 * 2);  // lengths x checkpointing x attention
  // Peak allocated per (config, batch, seq_len).
  std::map<std::string, int64_t> peak;
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::vector<std::string> f = absl::StrSplit(lines[i], ',');
    ASSERT_EQ(f.size(), 10u) << lines[i];
    EXPECT_EQ(f[9], "0") << "no OOM on the CPU: " << lines[i];
    int64_t v = 0;
    ASSERT_TRUE(absl::SimpleAtoi(f[6], &v));
    EXPECT_GT(v, 0);
    peak[absl::StrCat(f[0], " ", f[1], " ", f[2])] = v;
  }
  for (const char* attention : {"padded", "varlen"}) {
    // Memory grows with length, and checkpointing every layer lowers the peak.
    const std::string none = absl::StrCat("fp32/ckpt=none/", attention, " 4 ");
    const std::string all = absl::StrCat("fp32/ckpt=all/", attention, " 4 ");
    EXPECT_GT(peak[none + "128"], peak[none + "64"]) << attention;
    EXPECT_GT(peak[none + "64"], peak[none + "16"]) << attention;
    EXPECT_LT(peak[all + "128"], peak[none + "128"]) << attention;
  }
  const std::string svg = ReadFile(svg_path);
  EXPECT_THAT(svg, HasSubstr("<svg"));
  EXPECT_THAT(svg, HasSubstr("fp32/ckpt=none/padded b=4"));
  for (const std::string& f : {csv, svg_path, log}) std::remove(f.c_str());
}

// --verify_budget plans every configuration as `train --memory-budget` does and runs the planned
// batch: on the CPU's counting allocator each must stay within the budget and use >= 85% of it.
TEST(ProfileMemoryCliTest, VerifyBudgetPlansLikeTrainAndEveryPlanFits) {
  const std::string cli = PADLESS_CLI_PATH;
  if (access(cli.c_str(), X_OK) != 0) GTEST_SKIP() << "padless binary not built: " << cli;
  const std::string log =
      absl::StrCat(::testing::TempDir(), "padless_profile_verify_", getpid(), ".txt");
  const std::string cmd = absl::StrCat(
      "OMP_NUM_THREADS=1 ", cli,
      " profile-memory --sweep_device=cpu --sweep_preset=tiny --sweep_vocab_size=500 "
      "--sweep_seq_lens=64,128 --sweep_batch_sizes=2 --sweep_amp=off "
      "--sweep_checkpoint=none,all --sweep_attention=padded,varlen --held_out_lens=64 --quiet "
      "--verify_budget=48MiB > ",
      log, " 2>&1");
  const int rc = std::system(cmd.c_str());
  const std::string out = ReadFile(log);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_THAT(out, HasSubstr("budget check: 0 plan(s) failed")) << out;
  // 2 policies x 2 attention paths x 2 lengths, each judged.
  int verdicts = 0;
  for (absl::string_view line : absl::StrSplit(out, '\n')) {
    if (absl::EndsWith(line, " ok")) ++verdicts;
  }
  EXPECT_EQ(verdicts, 8) << out;
  std::remove(log.c_str());
}

TEST(ProfileMemoryCliTest, BadFlagsAreUsageErrors) {
  const std::string cli = PADLESS_CLI_PATH;
  if (access(cli.c_str(), X_OK) != 0) GTEST_SKIP() << "padless binary not built: " << cli;
  const std::string log =
      absl::StrCat(::testing::TempDir(), "padless_profile_bad_", getpid(), ".txt");
  const std::pair<const char*, const char*> cases[] = {
      {"--verify_budget=lots", "--verify_budget"},
      {"--sweep_seq_lens=64,-1", "sweep_seq_lens"},
      {"--sweep_attention=sparse", "--sweep_attention"},
      {"--sweep_checkpoint=sometimes", "--sweep_checkpoint"},
      {"--sweep_device=tpu", "--sweep_device"},
  };
  for (const auto& [flag, message] : cases) {
    const std::string cmd =
        absl::StrCat(cli, " profile-memory --sweep_device=cpu ", flag, " > ", log, " 2>&1");
    const int rc = std::system(cmd.c_str());
    ASSERT_TRUE(WIFEXITED(rc)) << flag;
    EXPECT_EQ(WEXITSTATUS(rc), 2) << flag << ": " << ReadFile(log);
    EXPECT_THAT(ReadFile(log), HasSubstr(message)) << flag;
  }
  std::remove(log.c_str());
}

}  // namespace
