// End-to-end: `padless profile-memory` on the CPU (counting allocator) with the tiny preset.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

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

}  // namespace
