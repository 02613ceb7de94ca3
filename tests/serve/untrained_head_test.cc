// A Hugging Face directory whose checkpoint has no trained classification head (a plain encoder,
// as sentence-transformers models are) is never served as a classifier (issue 44):
// InferenceEngine::Load and TextClassifier::Load, what `padless serve` and `padless predict` load
// with, refuse it with FailedPrecondition naming the directory and the missing weights, where
// they used to answer from a freshly initialised head. The same directory with its head serves.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "padless/model_files/hf_weights.h"
#include "padless/model_files/safetensors.h"
#include "padless/serve/inference_engine.h"
#include "padless/serve/text_classifier.h"
#include "serve_fixtures.h"

namespace padless::serve {
namespace {

// A seeded random BERT-family sequence classifier (labels neg, pos) exported in Hugging Face's
// layout with the fixtures' SentencePiece tokenizer; without `with_head` its classifier.weight
// and classifier.bias are left out of model.safetensors, as in a BertModel checkpoint.
std::string WriteHfDirForServing(const std::string& name, bool with_head) {
  const std::string dir = testing::ScratchDir(name);
  tokenize::Tokenizer tokenizer = testing::SmallTokenizer();
  at::manual_seed(5);
  models::EncoderClassifier model(testing::SmallConfig(tokenizer.vocab_size(), 2)
                                      .classifier_hidden(models::ClassifierHidden::kTanh));
  absl::Status s = model_files::ExportHuggingFace(model, {"neg", "pos"}, dir);
  EXPECT_TRUE(s.ok()) << s;
  s = tokenizer.Save(dir + "/" + tokenizer.file_name());
  EXPECT_TRUE(s.ok()) << s;
  if (with_head) return dir;
  const std::string weights = dir + "/" + model_files::kHfWeightsFile;
  std::vector<std::pair<std::string, at::Tensor>> encoder_only;
  {
    absl::StatusOr<model_files::SafetensorsFile> f = model_files::SafetensorsFile::Open(weights);
    EXPECT_TRUE(f.ok()) << f.status();
    if (!f.ok()) return dir;
    for (const auto& entry : f->entries()) {
      if (!absl::StartsWith(entry.first, "classifier.")) {
        encoder_only.emplace_back(entry.first, *f->Tensor(entry.first, /*copy=*/true));
      }
    }
    EXPECT_EQ(encoder_only.size() + 2, f->entries().size());  // classifier.weight and .bias
  }
  s = model_files::WriteSafetensors(weights, encoder_only);
  EXPECT_TRUE(s.ok()) << s;
  return dir;
}

// The status names the directory, what is missing and how to get a trained head.
void ExpectNoTrainedHeadError(const absl::Status& s, const std::string& dir) {
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  for (const std::string& part :
       {dir + ": ", std::string("no trained classification head"),
        std::string("classifier.weight, classifier.bias"), std::string("model.safetensors"),
        std::string("padless train --init-from ") + dir}) {
    EXPECT_TRUE(absl::StrContains(s.message(), part)) << s << " lacks " << part;
  }
}

TEST(UntrainedHeadTest, EngineAndClassifierRefuseACheckpointWithoutAHead) {
  const std::string dir = WriteHfDirForServing("hf_without_head", /*with_head=*/false);
  absl::StatusOr<std::unique_ptr<InferenceEngine>> engine = InferenceEngine::Load(dir);
  ASSERT_FALSE(engine.ok()) << "served a classifier head the checkpoint does not have";
  ExpectNoTrainedHeadError(engine.status(), dir);
  absl::StatusOr<std::unique_ptr<TextClassifier>> classifier = TextClassifier::Load(dir);
  ASSERT_FALSE(classifier.ok());
  ExpectNoTrainedHeadError(classifier.status(), dir);
}

TEST(UntrainedHeadTest, CheckpointWithItsHeadServes) {
  const std::string dir = WriteHfDirForServing("hf_with_head", /*with_head=*/true);
  absl::StatusOr<std::unique_ptr<TextClassifier>> classifier = TextClassifier::Load(dir);
  ASSERT_TRUE(classifier.ok()) << classifier.status();
  EXPECT_TRUE((*classifier)->engine().model().head_from_checkpoint);
  const std::vector<std::string> texts = {testing::Words(6, 1)};
  absl::StatusOr<std::vector<Prediction>> predictions = (*classifier)->Predict(texts);
  ASSERT_TRUE(predictions.ok()) << predictions.status();
  ASSERT_EQ(predictions->size(), 1u);
  EXPECT_TRUE((*predictions)[0].label == "neg" || (*predictions)[0].label == "pos");
}

}  // namespace
}  // namespace padless::serve
