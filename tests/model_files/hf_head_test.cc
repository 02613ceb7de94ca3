// Whether a Hugging Face checkpoint's classification head is trained (issue 44): a plain encoder
// (a sentence-transformers or BertModel checkpoint: no classifier weights) loads with
// LoadedModel::head_from_checkpoint false and the missing tensors named, and LoadClassifierDir
// (what serve, predict and eval load with) refuses it with FailedPrecondition; a checkpoint with
// its head, and padless's own model directories, load as classifiers.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "padless/corpus/label_map.h"
#include "padless/model_files/hf_weights.h"
#include "padless/model_files/model_io.h"
#include "padless/model_files/safetensors.h"
#include "padless/tokenize/tokenizer.h"
#include "tiny_wordpiece.h"

namespace padless::model_files {
namespace {

models::EncoderConfig HeadBertConfig() {
  return models::EncoderConfig()
      .vocab_size(50)
      .hidden(16)
      .heads(2)
      .ffn(32)
      .layers(2)
      .max_positions(20)
      .num_labels(2)
      .dropout(0)
      .attention_dropout(0)
      .classifier_hidden(models::ClassifierHidden::kTanh);
}

// The same shape as RoBERTa (position offset 2, one token type) and as DistilBERT (no token
// types, a ReLU pre_classifier).
models::EncoderConfig HeadRobertaConfig() {
  return HeadBertConfig().type_vocab_size(1).position_offset(2).max_positions(22);
}
models::EncoderConfig HeadDistilBertConfig() {
  return HeadBertConfig().type_vocab_size(0).classifier_hidden(models::ClassifierHidden::kRelu);
}

bool MessageHas(const absl::Status& s, const std::string& part) {
  return absl::StrContains(s.message(), part);
}

class HfHeadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(::testing::TempDir(), "hf_head_", ::getpid(), "_",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    ASSERT_EQ(std::system(absl::StrCat("rm -rf '", dir_, "'").c_str()), 0);
    Export(HeadBertConfig());
    std::ofstream(dir_ + "/tokenizer.json") << tokenize::testing::TinyWordPieceJson().dump();
  }
  // A seeded random model of `config` exported into dir_ as a sequence classifier.
  void Export(const models::EncoderConfig& config) {
    at::manual_seed(3);
    model_ = models::EncoderClassifier(config);
    model_->eval();
    const absl::Status s = ExportHuggingFace(model_, {"neg", "pos"}, dir_);
    ASSERT_TRUE(s.ok()) << s;
  }
  // Rewrites dir_'s model.safetensors: tensors for which `drop` holds are left out, and the
  // others renamed by `rename`.
  void RewriteWeights(const std::function<bool(const std::string&)>& drop,
                      const std::function<std::string(const std::string&)>& rename =
                          [](const std::string& name) { return name; }) const {
    const std::string path = dir_ + "/model.safetensors";
    std::vector<std::pair<std::string, at::Tensor>> kept;
    {
      absl::StatusOr<SafetensorsFile> f = SafetensorsFile::Open(path);
      ASSERT_TRUE(f.ok()) << f.status();
      for (const auto& e : f->entries()) {
        if (!drop(e.first)) kept.emplace_back(rename(e.first), *f->Tensor(e.first, true));
      }
    }
    ASSERT_TRUE(WriteSafetensors(path, kept).ok());
  }
  // What a sentence-transformers model (all-MiniLM-L6-v2) holds: BertModel's names, without the
  // "bert." prefix, and the pooler but no classifier.
  void MakeBareEncoder() const {
    RewriteWeights([](const std::string& n) { return absl::StartsWith(n, "classifier."); },
                   [](const std::string& n) {
                     return absl::StartsWith(n, "bert.") ? n.substr(5) : n;
                   });
  }
  bool SameParameter(const LoadedModel& m, const std::string& name) {
    return m.model->named_parameters()[name].equal(model_->named_parameters()[name]);
  }
  std::string dir_;
  models::EncoderClassifier model_{nullptr};
};

TEST_F(HfHeadTest, CheckpointWithItsHeadIsAClassifier) {
  absl::StatusOr<LoadedModel> loaded = LoadModelDir(dir_, c10::Device(c10::kCPU));
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_TRUE(loaded->head_from_checkpoint);
  EXPECT_EQ(loaded->new_head_reason, "");
  EXPECT_TRUE(RequireTrainedHead(*loaded, dir_).ok());
  absl::StatusOr<LoadedModel> classifier = LoadClassifierDir(dir_, c10::Device(c10::kCPU));
  ASSERT_TRUE(classifier.ok()) << classifier.status();
  EXPECT_TRUE(SameParameter(*classifier, "head_weight"));
}

// all-MiniLM-L6-v2's case: the encoder and the pooler load, the classifier is new, and no
// classifier user takes it.
TEST_F(HfHeadTest, BareEncoderLoadsWithoutATrainedHead) {
  MakeBareEncoder();
  absl::StatusOr<ImportedModel> imported = ImportHuggingFace(dir_);
  ASSERT_TRUE(imported.ok()) << imported.status();
  EXPECT_FALSE(imported->head_loaded);
  absl::StatusOr<LoadedModel> loaded = LoadModelDir(dir_, c10::Device(c10::kCPU));
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_FALSE(loaded->head_from_checkpoint);
  EXPECT_EQ(loaded->new_head_reason, "no classifier.weight, classifier.bias in model.safetensors");
  EXPECT_TRUE(SameParameter(*loaded, "layer1.ffn_in_weight"));
  EXPECT_TRUE(SameParameter(*loaded, "head_dense_weight"));  // the pooler
  EXPECT_FALSE(SameParameter(*loaded, "head_weight"));

  const absl::Status refused = RequireTrainedHead(*loaded, dir_);
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition) << refused;
  absl::StatusOr<LoadedModel> classifier = LoadClassifierDir(dir_, c10::Device(c10::kCPU));
  ASSERT_FALSE(classifier.ok());
  EXPECT_EQ(classifier.status().code(), absl::StatusCode::kFailedPrecondition);
  for (const std::string& part :
       {dir_ + ": ", std::string("no trained classification head"),
        std::string("classifier.weight, classifier.bias"), std::string("model.safetensors"),
        absl::StrCat("padless train --init-from ", dir_)}) {
    EXPECT_TRUE(MessageHas(classifier.status(), part)) << classifier.status() << " lacks " << part;
  }
}

// A classifier layer without the head's hidden layer (BERT's pooler) would classify from a random
// projection: not a trained head either.
TEST_F(HfHeadTest, MissingPoolerIsAnUntrainedHead) {
  RewriteWeights([](const std::string& n) { return absl::StartsWith(n, "bert.pooler."); });
  absl::StatusOr<LoadedModel> loaded = LoadModelDir(dir_, c10::Device(c10::kCPU));
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_FALSE(loaded->head_from_checkpoint);
  EXPECT_TRUE(absl::StrContains(loaded->new_head_reason, "bert.pooler.dense.weight"))
      << loaded->new_head_reason;
  EXPECT_FALSE(absl::StrContains(loaded->new_head_reason, "classifier.weight"))
      << loaded->new_head_reason;
  EXPECT_FALSE(LoadClassifierDir(dir_, c10::Device(c10::kCPU)).ok());
}

// config.json's labels disagree with the checkpoint's classifier: the head cannot be loaded, and
// the message gives both shapes.
TEST_F(HfHeadTest, ClassifierForAnotherLabelCountIsAnUntrainedHead) {
  nlohmann::json config;
  {
    std::ifstream in(dir_ + "/config.json");
    config = nlohmann::json::parse(in);
  }
  config["id2label"] = {{"0", "a"}, {"1", "b"}, {"2", "c"}};
  config["label2id"] = {{"a", 0}, {"b", 1}, {"c", 2}};
  config.erase("num_labels");
  std::ofstream(dir_ + "/config.json") << config.dump();
  absl::StatusOr<LoadedModel> loaded = LoadModelDir(dir_, c10::Device(c10::kCPU));
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->labels.size(), 3);
  EXPECT_FALSE(loaded->head_from_checkpoint);
  absl::StatusOr<LoadedModel> classifier = LoadClassifierDir(dir_, c10::Device(c10::kCPU));
  ASSERT_FALSE(classifier.ok());
  for (const char* part : {"'classifier.weight'", "[2, 16]", "[3, 16]"}) {
    EXPECT_TRUE(MessageHas(classifier.status(), part)) << classifier.status() << " lacks " << part;
  }
}

// RoBERTa's head is classifier.dense + classifier.out_proj, DistilBERT's pre_classifier +
// classifier: the reason names the checkpoint's own tensors.
TEST_F(HfHeadTest, EachFamilyNamesItsHeadTensors) {
  const std::vector<std::pair<models::EncoderConfig, std::vector<std::string>>> cases = {
      {HeadRobertaConfig(),
       {"classifier.dense.weight", "classifier.dense.bias", "classifier.out_proj.weight",
        "classifier.out_proj.bias"}},
      {HeadDistilBertConfig(),
       {"pre_classifier.weight", "pre_classifier.bias", "classifier.weight", "classifier.bias"}},
  };
  for (const auto& [config, head] : cases) {
    ASSERT_EQ(std::system(absl::StrCat("rm -rf '", dir_, "'").c_str()), 0);
    Export(config);
    absl::StatusOr<ImportedModel> full = ImportHuggingFace(dir_);
    ASSERT_TRUE(full.ok()) << full.status();
    EXPECT_TRUE(full->head_loaded) << head[0];
    EXPECT_EQ(full->new_head_reason, "");
    RewriteWeights([&head = head](const std::string& n) {
      for (const std::string& h : head) {
        if (n == h) return true;
      }
      return false;
    });
    absl::StatusOr<ImportedModel> bare = ImportHuggingFace(dir_);
    ASSERT_TRUE(bare.ok()) << bare.status();
    EXPECT_FALSE(bare->head_loaded);
    for (const std::string& h : head) {
      EXPECT_TRUE(absl::StrContains(bare->new_head_reason, h)) << bare->new_head_reason;
    }
  }
}

// `train --init-from` asks for another label count: a new head, as before, with the reason said.
TEST_F(HfHeadTest, InitFromAnotherLabelCountStillGetsANewHead) {
  absl::StatusOr<ImportedModel> m = ImportHuggingFace(dir_, 5);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_FALSE(m->head_loaded);
  EXPECT_TRUE(absl::StrContains(m->new_head_reason, "classifier.weight")) << m->new_head_reason;
  EXPECT_TRUE(m->model->named_parameters()["head_dense_weight"].equal(
      model_->named_parameters()["head_dense_weight"]));
}

// padless's own directories (SaveModelDir) always hold their head.
TEST_F(HfHeadTest, PadlessModelDirectoryHasItsHead) {
  absl::StatusOr<tokenize::Tokenizer> tokenizer =
      tokenize::Tokenizer::Load(dir_ + "/tokenizer.json");
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  absl::StatusOr<corpus::LabelMap> labels = corpus::LabelMap::FromNames({"neg", "pos"});
  ASSERT_TRUE(labels.ok());
  const std::string own = dir_ + "_padless";
  ASSERT_TRUE(SaveModelDir(own, model_, *tokenizer, *labels).ok());
  absl::StatusOr<LoadedModel> loaded = LoadClassifierDir(own, c10::Device(c10::kCPU));
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_TRUE(loaded->head_from_checkpoint);
  EXPECT_TRUE(SameParameter(*loaded, "head_weight"));
}

}  // namespace
}  // namespace padless::model_files
