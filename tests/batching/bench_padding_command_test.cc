// Runs the built `padless bench-padding` on a small generated data set: a good run writes one
// row per strategy to stdout, CSV and SVG; broken flags exit with 2 and bad inputs with 1.
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "padless/batching/padding_report.h"
#include "padless/tokenize/tokenizer.h"

namespace padless::batching {
namespace {

using ::testing::HasSubstr;

struct Result {
  int code = -1;
  std::string output;  // stdout and stderr
};

Result RunCli(const std::string& args) {
  Result r;
  const std::string cmd = std::string(PADLESS_CLI_PATH) + " bench-padding " + args + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) r.output.append(buf, n);
  const int status = pclose(pipe);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class BenchPaddingCommandTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = ::testing::TempDir() + "/bench_padding_test";
    std::system(("mkdir -p " + dir_).c_str());
    // Sentences of 3-120 words from a small vocabulary: lengths spread enough to pad.
    std::mt19937 rng(17);
    const std::vector<std::string> words = {"the",   "movie", "was",    "good",  "bad", "plot",
                                            "actor", "great", "boring", "scene", "and", "not"};
    std::vector<std::string> sentences;
    std::ofstream tsv(dir_ + "/data.tsv");
    tsv << "label\ttext\n";
    for (int i = 0; i < 300; ++i) {
      std::string s;
      const int n = 3 + static_cast<int>(rng() % 118);
      for (int w = 0; w < n; ++w) s += (w ? " " : "") + words[rng() % words.size()];
      sentences.push_back(s);
      tsv << (i % 2 ? "pos" : "neg") << "\t" << s << "\n";
    }
    tsv.close();
    tokenize::TrainOptions train;
    train.vocab_size = 40;
    train.num_threads = 1;
    absl::StatusOr<tokenize::Tokenizer> tok =
        tokenize::Tokenizer::TrainFromSentences(sentences, train);
    ASSERT_TRUE(tok.ok()) << tok.status();
    ASSERT_TRUE(tok->Save(dir_ + "/m.model").ok());
  }
  static std::string dir_;
};
std::string BenchPaddingCommandTest::dir_;

TEST_F(BenchPaddingCommandTest, GoodRunWritesOneRowPerStrategy) {
  const std::string csv = dir_ + "/out.csv", svg = dir_ + "/out.svg";
  std::remove(csv.c_str());
  std::remove(svg.c_str());
  const Result r = RunCli("--data " + dir_ + "/data.tsv --model " + dir_ +
                          "/m.model --max-len 64 --batch-size 8 --max-tokens 512 --csv " + csv +
                          " --svg " + svg + " --quiet");
  ASSERT_EQ(r.code, 0) << r.output;
  const std::vector<NamedStrategy> strategies = StandardStrategies(64, 8, 512, 1);
  for (const NamedStrategy& s : strategies) EXPECT_THAT(r.output, HasSubstr(s.name));
  const std::vector<std::string> lines = absl::StrSplit(ReadAll(csv), '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), strategies.size() + 1);
  EXPECT_EQ(lines[0],
            "strategy,padding_efficiency,batches,distinct_shapes,tokens_per_batch_p50,"
            "tokens_per_batch_p99,plan_ms,collate_ms");
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::vector<std::string> f = absl::StrSplit(lines[i], ',');
    ASSERT_EQ(f.size(), 8u) << lines[i];
    EXPECT_EQ(f[0], strategies[i - 1].name);
    const double eff = std::stod(f[1]);
    EXPECT_GT(eff, 0.0);
    EXPECT_LE(eff, 1.0);
    EXPECT_GT(std::stoll(f[2]), 0) << "batches";
    EXPECT_LE(std::stoll(f[5]), 512) << "p99 tokens per batch within max_tokens or 8*64";
  }
  // Padding to max_len is the least efficient; varlen has no padding at all.
  EXPECT_THAT(lines[1], ::testing::StartsWith("pad_to_max_len,"));
  EXPECT_THAT(lines.back(), ::testing::StartsWith("varlen_bfd,1.000000,"));
  const std::string chart = ReadAll(svg);
  EXPECT_THAT(chart, ::testing::StartsWith("<svg"));
  EXPECT_THAT(chart, HasSubstr("packed_bfd"));
  EXPECT_THAT(chart, HasSubstr("</svg>"));
}

TEST_F(BenchPaddingCommandTest, BrokenFlagsAreUsageErrors) {
  const std::string data = "--data " + dir_ + "/data.tsv --model " + dir_ + "/m.model";
  EXPECT_EQ(RunCli("--model " + dir_ + "/m.model").code, 2);
  EXPECT_EQ(RunCli("--data " + dir_ + "/data.tsv").code, 2);
  EXPECT_EQ(RunCli(data + " --max-len 2").code, 2);
  EXPECT_EQ(RunCli(data + " --batch-size 0").code, 2);
  EXPECT_EQ(RunCli(data + " --max-tokens 10").code, 2);
  EXPECT_EQ(RunCli(data + " --max-len abc").code, 2);
  EXPECT_EQ(RunCli(data + " --no-such-flag 1").code, 2);
  EXPECT_EQ(RunCli(data + " stray").code, 2);
  const Result help = RunCli("--help");
  EXPECT_EQ(help.code, 0);
  EXPECT_THAT(help.output, HasSubstr("--max-tokens"));
}

TEST_F(BenchPaddingCommandTest, BadInputsAreRuntimeFailures) {
  Result r = RunCli("--data " + dir_ + "/missing.tsv --model " + dir_ + "/m.model");
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.output, HasSubstr("missing.tsv"));
  r = RunCli("--data " + dir_ + "/data.tsv --model " + dir_ + "/data.tsv");
  EXPECT_EQ(r.code, 1);
  r = RunCli("--data " + dir_ + "/data.tsv --model " + dir_ +
             "/m.model --csv /nonexistent/dir/x.csv");
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.output, HasSubstr("/nonexistent/dir/x.csv"));
}

}  // namespace
}  // namespace padless::batching
