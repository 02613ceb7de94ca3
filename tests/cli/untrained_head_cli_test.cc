// `padless predict` and `padless eval` on a Hugging Face directory whose checkpoint has no trained
// classification head (a plain encoder such as all-MiniLM-L6-v2: no classifier.weight or
// classifier.bias) exit 1 with an error that names the directory and the missing weights, instead
// of classifying with a freshly initialised head (issue 44); the same directory with its head
// works. The directories are tiny random BERT classifiers exported here.
#include <ATen/ATen.h>

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cli_runner.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "padless/model_files/hf_weights.h"
#include "padless/model_files/safetensors.h"
#include "padless/models/encoder.h"
#include "padless/tokenize/tokenizer.h"

namespace padless::cli {
namespace {

using ::testing::HasSubstr;
using testing::CliResult;
using testing::RunPadless;
using testing::ScratchDir;
using testing::WriteFile;

constexpr const char* kHeadTestWords[] = {"good",   "bad",    "film", "plot", "great",
                                          "awful",  "actors", "the",  "a",    "story",
                                          "boring", "funny",  "and",  "was",  "very"};

// A SentencePiece tokenizer of 40 pieces over kHeadTestWords (tests/serve's recipe).
tokenize::Tokenizer HeadTestTokenizer() {
  std::vector<std::string> sentences;
  for (int i = 0; i < 400; ++i) {
    std::string s;
    for (int k = 0; k < 8; ++k) s += std::string(kHeadTestWords[(i * 7 + k * 3) % 15]) + " ";
    sentences.push_back(s);
  }
  tokenize::TrainOptions options;
  options.vocab_size = 40;
  absl::StatusOr<tokenize::Tokenizer> t =
      tokenize::Tokenizer::TrainFromSentences(sentences, options);
  EXPECT_TRUE(t.ok()) << t.status();
  return std::move(*t);
}

// A random BERT sequence classifier (labels neg, pos) in Hugging Face's layout in `dir`; without
// `with_head`, model.safetensors lacks classifier.weight and classifier.bias.
void WriteHfModelDir(const std::string& dir, bool with_head) {
  tokenize::Tokenizer tokenizer = HeadTestTokenizer();
  at::manual_seed(7);
  models::EncoderClassifier model(models::EncoderConfig()
                                      .vocab_size(tokenizer.vocab_size())
                                      .hidden(16)
                                      .heads(2)
                                      .ffn(32)
                                      .layers(1)
                                      .max_positions(64)
                                      .num_labels(2)
                                      .classifier_hidden(models::ClassifierHidden::kTanh));
  absl::Status s = model_files::ExportHuggingFace(model, {"neg", "pos"}, dir);
  ASSERT_TRUE(s.ok()) << s;
  s = tokenizer.Save(dir + "/" + tokenizer.file_name());
  ASSERT_TRUE(s.ok()) << s;
  if (with_head) return;
  const std::string weights = dir + "/" + model_files::kHfWeightsFile;
  std::vector<std::pair<std::string, at::Tensor>> encoder_only;
  {
    absl::StatusOr<model_files::SafetensorsFile> f = model_files::SafetensorsFile::Open(weights);
    ASSERT_TRUE(f.ok()) << f.status();
    for (const auto& entry : f->entries()) {
      if (!absl::StartsWith(entry.first, "classifier.")) {
        encoder_only.emplace_back(entry.first, *f->Tensor(entry.first, /*copy=*/true));
      }
    }
    ASSERT_EQ(encoder_only.size() + 2, f->entries().size());  // classifier.weight and .bias
  }
  s = model_files::WriteSafetensors(weights, encoder_only);
  ASSERT_TRUE(s.ok()) << s;
}

class UntrainedHeadCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    scratch_ = ScratchDir("untrained_head");
    with_head_ = scratch_ + "/with_head";
    without_head_ = scratch_ + "/without_head";
    ASSERT_NO_FATAL_FAILURE(WriteHfModelDir(with_head_, /*with_head=*/true));
    ASSERT_NO_FATAL_FAILURE(WriteHfModelDir(without_head_, /*with_head=*/false));
    texts_ = scratch_ + "/texts.txt";
    WriteFile(texts_, "good film\nawful plot\n");
    labeled_ = scratch_ + "/labeled.tsv";
    WriteFile(labeled_, "text\tlabel\ngood film\tpos\nawful plot\tneg\n");
  }
  // Exit 1 and the message that names the directory, the missing weights and the way out.
  void ExpectRefused(const CliResult& r) const {
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_THAT(r.err, HasSubstr(without_head_ + ": the checkpoint has no trained classification "
                                                 "head"));
    EXPECT_THAT(r.err, HasSubstr("no classifier.weight, classifier.bias in model.safetensors"));
    EXPECT_THAT(r.err, HasSubstr("padless train --init-from " + without_head_));
    EXPECT_EQ(r.out, "");
  }
  std::string scratch_, with_head_, without_head_, texts_, labeled_;
};

TEST_F(UntrainedHeadCliTest, PredictRefusesACheckpointWithoutAHead) {
  ExpectRefused(
      RunPadless({"predict", "--model", without_head_, "--data", texts_, "--device", "cpu"}));
  // From stdin too (empty here): the model is refused before any text is read.
  ExpectRefused(RunPadless({"predict", "--model", without_head_, "--device", "cpu"}));
}

TEST_F(UntrainedHeadCliTest, EvalRefusesACheckpointWithoutAHead) {
  ExpectRefused(
      RunPadless({"eval", "--model", without_head_, "--data", labeled_, "--device", "cpu"}));
}

TEST_F(UntrainedHeadCliTest, CheckpointWithItsHeadPredictsAndEvaluates) {
  CliResult r = RunPadless({"predict", "--model", with_head_, "--data", texts_, "--device", "cpu"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> lines = absl::StrSplit(r.out, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 2u) << r.out;
  for (const std::string& line : lines) {
    EXPECT_TRUE(absl::StartsWith(line, "neg\t") || absl::StartsWith(line, "pos\t")) << line;
  }
  r = RunPadless({"eval", "--model", with_head_, "--data", labeled_, "--device", "cpu"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("(2 examples)"));
}

}  // namespace
}  // namespace padless::cli
