// End-to-end: `padless train` on an SST-2 subset reaches >= 78% dev accuracy with the tiny preset;
// `padless eval` and `padless predict` use the model directory; bad input (unknown labels, missing
// or corrupt model directories, a 1 MB text, bad flags) gives a clear error or is handled;
// --init-from starts from the given weights and refuses another preset or vocabulary.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cli_runner.h"

namespace padless::train {
namespace {

// `padless` runs as a child process (tests/cli/cli_runner.h).
using cli::testing::CliResult;
using cli::testing::ReadFile;
using cli::testing::RunPadless;
using cli::testing::ScratchDir;
using cli::testing::WriteFile;

const std::string kData = PADLESS_SHARED_DATA;

// PADLESS_TEST_QUICK_MODEL (set by scripts/sanitize.sh and CI's no-toolkit stage): the suite's
// model is trained on a tenth of the rows for one epoch, and the checks of its accuracy skip. The
// sanitizer builds check memory, not accuracy, and spent about 60 s on the full training under
// ASan; every test that reads the model still runs.
bool QuickModel() { return std::getenv("PADLESS_TEST_QUICK_MODEL") != nullptr; }

bool HaveSst2() {
  std::FILE* f = std::fopen((kData + "/sst2_train.tsv").c_str(), "r");
  if (f == nullptr) return false;
  std::fclose(f);
  return true;
}

// The model every test of the suite uses, trained once per build of the CLI: ctest runs each test
// in its own process (possibly in parallel), so the run is cached in the build tree, keyed by the
// binary's size and mtime, and guarded by a file lock.
class TrainCliTest : public ::testing::Test {
 protected:
  // The first 20k SST-2 training rows, 2 epochs, tiny preset, packed batches of 4096 tokens on the
  // CPU, dev evaluation every 20 steps keeping the best (about 35 s on two cores; 1.2 s on an
  // H200). QuickModel(): the first 2k rows, 1 epoch (about 7 steps), dev evaluation every 2.
  static void SetUpTestSuite() {
    if (!HaveSst2()) return;
    struct stat st = {};
    ::stat(PADLESS_CLI_PATH, &st);
    dir_ = new std::string(
        absl::StrCat(PADLESS_TRAIN_TEST_CACHE, "/sst2_tiny_", static_cast<int64_t>(st.st_mtime),
                     "_", static_cast<int64_t>(st.st_size), QuickModel() ? "_quick" : ""));
    ASSERT_EQ(std::system(absl::StrCat("mkdir -p '", *dir_, "'").c_str()), 0);
    const int lock = ::open((*dir_ + ".lock").c_str(), O_CREAT | O_RDWR, 0644);
    ASSERT_GE(lock, 0);
    ::flock(lock, LOCK_EX);
    if (ReadFile(*dir_ + "/exit_code") != "0") {
      const std::string subset = *dir_ + "/sst2_subset.tsv";
      const int rows = QuickModel() ? 2000 : 20000;
      ASSERT_EQ(
          std::system(
              absl::StrCat("head -", rows + 1, " ", kData, "/sst2_train.tsv > ", subset).c_str()),
          0);
      const CliResult r = RunPadless({"train",
                                      "--data",
                                      subset,
                                      "--dev",
                                      kData + "/sst2_dev.tsv",
                                      "--out",
                                      *dir_ + "/model",
                                      "--preset",
                                      "tiny",
                                      "--epochs",
                                      QuickModel() ? "1" : "2",
                                      "--max-len",
                                      "64",
                                      "--max-tokens",
                                      "4096",
                                      "--vocab-size",
                                      "8000",
                                      "--lr",
                                      "1e-3",
                                      "--eval-every",
                                      QuickModel() ? "2" : "20",
                                      "--device",
                                      "cpu",
                                      "--quiet",
                                      "--metrics-json",
                                      *dir_ + "/metrics.json"});
      WriteFile(*dir_ + "/stdout", r.out);
      WriteFile(*dir_ + "/stderr", r.err);
      WriteFile(*dir_ + "/exit_code", std::to_string(r.exit_code));
    }
    ::flock(lock, LOCK_UN);
    ::close(lock);
  }
  static void TearDownTestSuite() { delete dir_; }
  void SetUp() override {
    if (!HaveSst2()) GTEST_SKIP() << "no SST-2 data under " << kData;
    ASSERT_EQ(ReadFile(*dir_ + "/exit_code"), "0") << ReadFile(*dir_ + "/stderr");
  }
  static std::string Model() { return *dir_ + "/model"; }

  static std::string* dir_;
};
std::string* TrainCliTest::dir_ = nullptr;

TEST_F(TrainCliTest, TinyPresetLearnsSst2) {
  if (QuickModel())
    GTEST_SKIP() << "PADLESS_TEST_QUICK_MODEL: the model is not trained to its target";
  const nlohmann::json m = nlohmann::json::parse(ReadFile(*dir_ + "/metrics.json"));
  for (const char* key :
       {"accuracy", "macro_f1", "padding_efficiency", "real_tokens_per_s", "peak_allocated_bytes",
        "peak_reserved_bytes", "train_seconds", "device"}) {
    EXPECT_TRUE(m.contains(key)) << key;
  }
  EXPECT_GE(m["accuracy"].get<double>(), 0.78);
  EXPECT_GE(m["macro_f1"].get<double>(), 0.75);
  EXPECT_GT(m["padding_efficiency"].get<double>(), 0.95) << "packed batches";
  EXPECT_GT(m["peak_allocated_bytes"].get<int64_t>(), 0);
  EXPECT_EQ(m["device"].get<std::string>(), "cpu");
  const std::string out = ReadFile(*dir_ + "/stdout");
  EXPECT_NE(out.find("dev accuracy"), std::string::npos) << out;
  EXPECT_NE(ReadFile(Model() + "/train_log.csv").find("padding_efficiency"), std::string::npos);
}

TEST_F(TrainCliTest, EvalReproducesDevAccuracy) {
  const std::string scratch = ScratchDir("eval");
  const CliResult r = RunPadless({"eval", "--model", Model(), "--data", kData + "/sst2_dev.tsv",
                                  "--device", "cpu", "--metrics-json", scratch + "/eval.json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json train = nlohmann::json::parse(ReadFile(*dir_ + "/metrics.json"));
  const nlohmann::json eval = nlohmann::json::parse(ReadFile(scratch + "/eval.json"));
  EXPECT_NEAR(eval["accuracy"].get<double>(), train["accuracy"].get<double>(), 1e-9);
  EXPECT_EQ(eval["examples"].get<int64_t>(), 872);
}

TEST_F(TrainCliTest, PredictWritesLabelAndProbability) {
  const std::string texts = ScratchDir("predict") + "/texts.txt";
  WriteFile(texts, "a wonderful , moving film\nthe worst movie i have ever seen\n\n");
  const CliResult r =
      RunPadless({"predict", "--model", Model(), "--data", texts, "--device", "cpu"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> lines = absl::StrSplit(r.out, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 3u) << r.out;
  if (!QuickModel()) {  // the quick model's labels may be wrong; the output's form is the same
    EXPECT_EQ(lines[0].substr(0, 2), "1\t") << lines[0];
    EXPECT_EQ(lines[1].substr(0, 2), "0\t") << lines[1];
  }
  for (const std::string& line : lines) {
    const std::vector<std::string> f = absl::StrSplit(line, '\t');
    ASSERT_EQ(f.size(), 2u) << line;
    const double p = std::stod(f[1]);
    EXPECT_GE(p, 0.5);
    EXPECT_LE(p, 1.0);
  }
  // The same through stdin.
  const std::string cmd = absl::StrCat("'", PADLESS_CLI_PATH, "' predict --model '", Model(),
                                       "' --device cpu < '", texts, "'");
  std::FILE* pipe = ::popen(cmd.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string out;
  char buf[256];
  while (std::fgets(buf, sizeof buf, pipe) != nullptr) out += buf;
  EXPECT_EQ(::pclose(pipe), 0);
  EXPECT_EQ(out, r.out);
}

// predict --data takes unlabeled input (issue 13.5): plain text, TSV/CSV with or without a header
// and with no label column, JSONL without a label field, and a labeled file (labels ignored) all
// give the same predictions for the same texts.
TEST_F(TrainCliTest, PredictAcceptsUnlabeledFilesInEveryFormat) {
  const std::string dir = ScratchDir("predict_unlabeled");
  const std::vector<std::string> texts = {"a wonderful , moving film", "the worst movie , sadly",
                                          "it is a film"};
  std::string txt, tsv = "text\n", csv = "id,text\n", jsonl, labeled = "label\ttext\n";
  for (size_t i = 0; i < texts.size(); ++i) {
    absl::StrAppend(&txt, texts[i], "\n");
    absl::StrAppend(&tsv, texts[i], "\n");
    absl::StrAppend(&csv, i, ",\"", texts[i], "\"\n");
    absl::StrAppend(&jsonl, "{\"text\": \"", texts[i], "\"}\n");
    absl::StrAppend(&labeled, i % 2, "\t", texts[i], "\n");
  }
  const std::vector<std::pair<std::string, std::string>> files = {
      {"texts.txt", txt},  {"texts", txt},         {"header.tsv", tsv},     {"bare.tsv", txt},
      {"header.csv", csv}, {"texts.jsonl", jsonl}, {"labeled.tsv", labeled}};
  std::string expected;
  for (const auto& [name, content] : files) {
    WriteFile(dir + "/" + name, content);
    const CliResult r =
        RunPadless({"predict", "--model", Model(), "--data", dir + "/" + name, "--device", "cpu"});
    ASSERT_EQ(r.exit_code, 0) << name << ": " << r.err;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 3) << name << ": " << r.out;
    if (expected.empty()) expected = r.out;
    EXPECT_EQ(r.out, expected) << name;
  }
}

TEST_F(TrainCliTest, MegabyteTextIsHandled) {
  std::string big;
  while (big.size() < (1 << 20)) big += "an utterly charming and funny film , ";
  const std::string texts = ScratchDir("big") + "/big.txt";
  WriteFile(texts, big + "\nshort one\n");
  for (const char* mode : {"head_tail", "windows"}) {
    const CliResult r = RunPadless({"predict", "--model", Model(), "--data", texts, "--device",
                                    "cpu", "--long-text", mode, "--window-stride", "16"});
    ASSERT_EQ(r.exit_code, 0) << mode << ": " << r.err;
    const std::vector<std::string> lines = absl::StrSplit(r.out, '\n', absl::SkipEmpty());
    EXPECT_EQ(lines.size(), 2u) << mode;
    EXPECT_EQ(lines[0].substr(0, 2), "1\t") << mode << ": " << lines[0];
  }
}

TEST_F(TrainCliTest, UnknownLabelAtEvalIsAClearError) {
  const std::string data = ScratchDir("bad_label") + "/bad_label.tsv";
  WriteFile(data, "label\ttext\n1\tgood\nneutral\tfine i guess\n");
  const CliResult r = RunPadless({"eval", "--model", Model(), "--data", data, "--device", "cpu"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("bad_label.tsv:3"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("'neutral'"), std::string::npos) << r.err;
}

TEST_F(TrainCliTest, MissingOrCorruptModelDirectoryIsAClearError) {
  const std::string data = kData + "/sst2_dev.tsv";
  CliResult r = RunPadless({"eval", "--model", *dir_ + "/nope", "--data", data, "--device", "cpu"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("nope"), std::string::npos) << r.err;

  // Copies of the model with one file damaged each.
  struct Damage {
    const char* file;
    const char* content;
    const char* expect;
  };
  for (const Damage& d :
       {Damage{"model.safetensors", "garbage", "model.safetensors"},
        Damage{"config.json", "{\"hidden\": ", "config.json"},
        Damage{"config.json", "{\"hidden\": 64, \"heads\": 2}", "model.safetensors"},
        Damage{"labels.json", "[]", "labels.json"},
        Damage{"tokenizer.model", "", "tokenizer.model"}}) {
    const std::string copy = ScratchDir("corrupt");
    ASSERT_EQ(std::system(absl::StrCat("cp -r '", Model(), "/.' '", copy, "'").c_str()), 0);
    WriteFile(copy + "/" + d.file, d.content);
    for (const char* command : {"eval", "predict"}) {
      r = RunPadless({command, "--model", copy, "--data", data, "--device", "cpu"});
      EXPECT_EQ(r.exit_code, 1) << command << " " << d.file << ": " << r.err;
      EXPECT_NE(r.err.find(d.expect), std::string::npos)
          << command << " " << d.file << ": " << r.err;
    }
  }
  // A missing file.
  const std::string copy = ScratchDir("missing");
  ASSERT_EQ(std::system(absl::StrCat("cp -r '", Model(), "/.' '", copy, "' && rm '", copy,
                                     "/tokenizer.model'")
                            .c_str()),
            0);
  r = RunPadless({"predict", "--model", copy, "--data", data, "--device", "cpu"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("tokenizer.model"), std::string::npos) << r.err;
}

// With lr 0 AdamW changes nothing (the update and the decay are both scaled by lr), so the model a
// --init-from run writes must be its initial weights: the weights of --init-from, exactly.
TEST_F(TrainCliTest, InitFromStartsFromTheGivenWeights) {
  const std::string scratch = ScratchDir("init_from");
  const std::string dev = kData + "/sst2_dev.tsv";
  const CliResult r =
      RunPadless({"train", "--data", dev, "--out", scratch + "/model", "--init-from", Model(),
                  "--lr", "0", "--max-steps", "1", "--max-len", "64", "--device", "cpu"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("tokenizer: " + Model() + "/tokenizer.model"), std::string::npos) << r.err;
  for (const std::string& model : {Model(), scratch + "/model"}) {
    const CliResult e = RunPadless({"eval", "--model", model, "--data", dev, "--device", "cpu",
                                    "--metrics-json", model + ".eval.json"});
    ASSERT_EQ(e.exit_code, 0) << model << ": " << e.err;
  }
  const nlohmann::json init = nlohmann::json::parse(ReadFile(Model() + ".eval.json"));
  const nlohmann::json again = nlohmann::json::parse(ReadFile(scratch + "/model.eval.json"));
  if (!QuickModel()) {
    EXPECT_GE(again["accuracy"].get<double>(), 0.78) << "a fresh model would be near 0.5";
  }
  EXPECT_EQ(again["accuracy"].get<double>(), init["accuracy"].get<double>());
  EXPECT_EQ(again["loss"].get<double>(), init["loss"].get<double>());
  EXPECT_EQ(ReadFile(scratch + "/model/tokenizer.model"), ReadFile(Model() + "/tokenizer.model"));
}

TEST_F(TrainCliTest, InitFromWithAnotherPresetOrVocabularyIsAClearError) {
  const std::string scratch = ScratchDir("init_from_mismatch");
  const std::string dev = kData + "/sst2_dev.tsv";
  CliResult r = RunPadless({"train", "--data", dev, "--out", scratch + "/a", "--init-from", Model(),
                            "--preset", "small", "--max-steps", "1", "--device", "cpu"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("--preset small"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(Model() + "/config.json"), std::string::npos) << r.err;

  // An --out directory that already holds a tokenizer of another vocabulary.
  const std::string out = ScratchDir("init_from_other_vocab");
  r = RunPadless(
      {"tokenize", "train", "--input", dev, "--out", out + "/tokenizer", "--vocab-size", "500"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = RunPadless({"train", "--data", dev, "--out", out, "--init-from", Model(), "--max-steps", "1",
                  "--device", "cpu"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const int64_t vocab =
      nlohmann::json::parse(ReadFile(Model() + "/config.json"))["vocab_size"].get<int64_t>();
  ASSERT_NE(vocab, 500);
  EXPECT_NE(r.err.find(absl::StrCat("vocabulary of ", vocab)), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(out + "/tokenizer.model has 500"), std::string::npos) << r.err;
}

TEST(TrainCliFlagsTest, BadFlagsAreUsageErrors) {
  EXPECT_EQ(RunPadless({"train", "--out", "/tmp/x"}).exit_code, 2);
  EXPECT_EQ(RunPadless({"train", "--data", "x.tsv"}).exit_code, 2);
  for (const std::vector<std::string>& extra : {std::vector<std::string>{"--amp", "fp4"},
                                                {"--checkpoint", "every:0"},
                                                {"--preset", "huge"},
                                                {"--batching", "magic"},
                                                {"--layers", "fast"},
                                                {"--dev-fraction", "1.5"}}) {
    std::vector<std::string> args = {"train", "--data", "x.tsv", "--out", "/tmp/x"};
    args.insert(args.end(), extra.begin(), extra.end());
    const CliResult r = RunPadless(args);
    EXPECT_EQ(r.exit_code, 2) << extra[0] << ": " << r.err;
  }
  EXPECT_EQ(RunPadless({"eval", "--data", "x.tsv"}).exit_code, 2);
  EXPECT_EQ(RunPadless({"predict"}).exit_code, 2);
}

// Issue 13.4: with no sizing flag, `train` on a small corpus does not stop at SentencePiece's
// vocabulary limit, and says which vocabulary, batch geometry, schedule and learning rate it chose.
TEST(TrainCliDefaultsTest, DefaultsAreChosenAndSaid) {
  const std::string dir = ScratchDir("train_defaults");
  std::string tsv = "label\ttext\n";
  for (int i = 0; i < 64; ++i) {
    tsv += absl::StrCat(
        i % 2 ? "1\ta fine and lovely film number " : "0\ta dull and weak plot scene ", i, "\n");
  }
  WriteFile(dir + "/train.tsv", tsv);
  const CliResult r = RunPadless({"train", "--data", dir + "/train.tsv", "--out", dir + "/model",
                                  "--device", "cpu", "--max-steps", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* line :
       {"is more than this corpus supports; using ", "batches: packed, ",
        "(default: 32 sequences x mean length ", "schedule: ", " optimizer steps per epoch",
        "learning rate 0.0005 (default for tiny), warmup 0.06 of the steps (default)"}) {
    EXPECT_NE(r.err.find(line), std::string::npos) << line << "\n" << r.err;
  }
  const CliResult given = RunPadless(
      {"train", "--data", dir + "/train.tsv", "--out", dir + "/model2", "--device", "cpu",
       "--max-steps", "2", "--max-tokens", "4096", "--lr", "1e-3", "--vocab-size", "40"});
  ASSERT_EQ(given.exit_code, 0) << given.err;
  EXPECT_NE(given.err.find("4096 tokens per batch (--max-tokens)"), std::string::npos) << given.err;
  EXPECT_NE(given.err.find("learning rate 0.001, warmup"), std::string::npos) << given.err;
  EXPECT_EQ(RunPadless({"train", "--data", dir + "/train.tsv", "--out", dir + "/model3",
                        "--max-tokens", "0"})
                .exit_code,
            2);
}

}  // namespace
}  // namespace padless::train
