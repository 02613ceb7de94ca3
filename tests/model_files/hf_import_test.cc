// Hugging Face import and export (issue 14): config mapping and its errors, sharded checkpoints,
// a new head for another label count, and clear errors naming the file and the tensor or field
// for a missing tensor, a shape that disagrees with config.json, an unknown or unrepresentable
// architecture, and a pickle-only checkpoint.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "padless/model_files/hf_weights.h"
#include "padless/model_files/hf_config.h"
#include "padless/model_files/model_io.h"
#include "padless/model_files/safetensors.h"
#include "tiny_wordpiece.h"

namespace padless::model_files {
namespace {

models::EncoderConfig SmallBert() {
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

class HfImportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(::testing::TempDir(), "hf_import_", ::getpid(), "_",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    ASSERT_EQ(std::system(absl::StrCat("rm -rf '", dir_, "'").c_str()), 0);
    at::manual_seed(3);
    model_ = models::EncoderClassifier(SmallBert());
    model_->eval();
    ASSERT_TRUE(ExportHuggingFace(model_, {"neg", "pos"}, dir_).ok());
  }
  nlohmann::json Config() const {
    std::ifstream in(dir_ + "/config.json");
    return nlohmann::json::parse(in);
  }
  void WriteConfig(const nlohmann::json& j) const {
    std::ofstream(dir_ + "/config.json") << j.dump();
  }
  std::map<std::string, at::Tensor> Weights() const {
    absl::StatusOr<SafetensorsFile> f = SafetensorsFile::Open(dir_ + "/model.safetensors");
    std::map<std::string, at::Tensor> out;
    for (const auto& e : f->entries()) out[e.first] = *f->Tensor(e.first, true);
    return out;
  }
  void WriteWeights(const std::map<std::string, at::Tensor>& w, const std::string& file) const {
    ASSERT_TRUE(WriteSafetensors(dir_ + "/" + file, {w.begin(), w.end()}).ok());
  }
  // Import fails with a message that contains every one of `parts`.
  void ExpectError(std::initializer_list<std::string> parts, int64_t num_labels = 0) const {
    absl::StatusOr<ImportedModel> m = ImportHuggingFace(dir_, num_labels);
    ASSERT_FALSE(m.ok());
    for (const std::string& p : parts) {
      EXPECT_TRUE(absl::StrContains(m.status().message(), p)) << m.status() << " lacks " << p;
    }
  }
  std::string dir_;
  models::EncoderClassifier model_{nullptr};
};

TEST_F(HfImportTest, RoundTripIsExact) {
  EXPECT_TRUE(IsHuggingFaceModelDir(dir_));
  absl::StatusOr<ImportedModel> m = ImportHuggingFace(dir_);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_TRUE(m->head_loaded);
  EXPECT_EQ(m->hf.labels, (std::vector<std::string>{"neg", "pos"}));
  EXPECT_EQ(m->hf.encoder.ToJson(), SmallBert().ToJson());
  auto want = model_->named_parameters();
  for (const auto& p : m->model->named_parameters()) {
    EXPECT_TRUE(p.value().equal(want[p.key()])) << p.key();
  }
  // Q, K and V are split on export: transformers' names, each [hidden, hidden].
  EXPECT_EQ(Weights().at("bert.encoder.layer.1.attention.self.key.weight").sizes(),
            (c10::IntArrayRef{16, 16}));
}

// LoadModelDir serves a Hugging Face directory as it is (what `padless serve`, `predict` and the
// engine load): the same weights, id2label as the labels, the directory's tokenizer.json.
TEST_F(HfImportTest, LoadModelDirReadsAHuggingFaceDirectory) {
  absl::StatusOr<LoadedModel> missing_tokenizer = LoadModelDir(dir_, c10::Device(c10::kCPU));
  EXPECT_FALSE(missing_tokenizer.ok());
  std::ofstream(dir_ + "/tokenizer.json") << tokenize::testing::TinyWordPieceJson().dump();
  absl::StatusOr<LoadedModel> loaded = LoadModelDir(dir_, c10::Device(c10::kCPU));
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->labels.Name(0), "neg");
  EXPECT_EQ(loaded->labels.Name(1), "pos");
  EXPECT_FALSE(loaded->model->is_training());
  auto want = model_->named_parameters();
  for (const auto& p : loaded->model->named_parameters()) {
    EXPECT_TRUE(p.value().equal(want[p.key()])) << p.key();
  }
  // Without id2label, transformers' names.
  nlohmann::json config = Config();
  config.erase("id2label");
  config.erase("label2id");
  WriteConfig(config);
  loaded = LoadModelDir(dir_, c10::Device(c10::kCPU));
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->labels.Name(1), "LABEL_1");
}

TEST_F(HfImportTest, AnotherLabelCountGetsANewHead) {
  absl::StatusOr<ImportedModel> m = ImportHuggingFace(dir_, 5);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_FALSE(m->head_loaded);
  EXPECT_EQ(m->hf.encoder.num_labels(), 5);
  EXPECT_TRUE(m->hf.labels.empty());
  // The encoder and the pooler come across all the same.
  EXPECT_TRUE(m->model->named_parameters()["head_dense_weight"].equal(
      model_->named_parameters()["head_dense_weight"]));
}

TEST_F(HfImportTest, ShardedCheckpointLoads) {
  std::map<std::string, at::Tensor> all = Weights(), first, second;
  nlohmann::json map;
  for (const auto& [name, t] : all) {
    const bool in_first = absl::StrContains(name, "layer.0") || absl::StrContains(name, "embed");
    (in_first ? first : second)[name] = t;
    map[name] = in_first ? "model-00001-of-00002.safetensors" : "model-00002-of-00002.safetensors";
  }
  ASSERT_EQ(::unlink((dir_ + "/model.safetensors").c_str()), 0);
  WriteWeights(first, "model-00001-of-00002.safetensors");
  WriteWeights(second, "model-00002-of-00002.safetensors");
  std::ofstream(dir_ + "/model.safetensors.index.json")
      << nlohmann::json{{"weight_map", map}}.dump();
  absl::StatusOr<ImportedModel> m = ImportHuggingFace(dir_);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_TRUE(m->model->named_parameters()["layer1.ffn_in_weight"].equal(
      model_->named_parameters()["layer1.ffn_in_weight"]));
  map["x"] = "../escape.safetensors";
  std::ofstream(dir_ + "/model.safetensors.index.json")
      << nlohmann::json{{"weight_map", map}}.dump();
  ExpectError({"model.safetensors.index.json", "'x'", "shard"});
}

TEST_F(HfImportTest, MissingTensorAndWrongShapeNameTheTensor) {
  std::map<std::string, at::Tensor> w = Weights();
  w.erase("bert.encoder.layer.1.attention.self.value.weight");
  WriteWeights(w, "model.safetensors");
  ExpectError({dir_, "'bert.encoder.layer.1.attention.self.value.weight' is missing"});
  w = Weights();
  WriteWeights(Weights(), "model.safetensors");
  nlohmann::json c = Config();
  c["intermediate_size"] = 48;
  WriteConfig(c);
  ExpectError({"'bert.encoder.layer.0.intermediate.dense.weight'", "[32, 16]", "[48, 16]"});
}

TEST_F(HfImportTest, UnrepresentableConfigsNameTheField) {
  const nlohmann::json good = Config();
  const std::vector<std::pair<std::pair<std::string, nlohmann::json>, std::string>> cases = {
      {{"model_type", "deberta-v2"}, "'model_type'"},
      {{"model_type", "albert"}, "shared"},
      {{"model_type", "gpt2"}, "supported: bert"},
      {{"position_embedding_type", "relative_key"}, "'position_embedding_type'"},
      {{"embedding_size", 8}, "'embedding_size'"},
      {{"hidden_act", "swish"}, "'hidden_act'"},
      {{"num_attention_heads", 3}, "hidden"},
      {{"hidden_size", "16"}, "'hidden_size' must be an integer"},
  };
  for (const auto& [change, expect] : cases) {
    nlohmann::json c = good;
    c[change.first] = change.second;
    WriteConfig(c);
    ExpectError({"config.json", expect});
  }
  nlohmann::json c = good;
  c.erase("model_type");
  c["architectures"] = {"DebertaV2ForSequenceClassification"};
  WriteConfig(c);
  ExpectError({"'architectures'", "DebertaV2"});
  c.erase("architectures");
  WriteConfig(c);
  ExpectError({"model_type"});
  EXPECT_FALSE(IsHuggingFaceModelDir(dir_));
}

TEST_F(HfImportTest, PickleOnlyCheckpointIsRefusedWithAHint) {
  ASSERT_EQ(::rename((dir_ + "/model.safetensors").c_str(), (dir_ + "/pytorch_model.bin").c_str()),
            0);
  ExpectError({"pytorch_model.bin", "safe_serialization=True"});
  ASSERT_EQ(::unlink((dir_ + "/pytorch_model.bin").c_str()), 0);
  ExpectError({"no model.safetensors"});
}

TEST_F(HfImportTest, ExportRefusesWhatHuggingFaceCannotRepresent) {
  models::EncoderClassifier plain(models::EncoderConfig(SmallBert()).classifier_hidden(models::ClassifierHidden::kNone));
  absl::Status s = ExportHuggingFace(plain, {"a", "b"}, dir_ + "_plain");
  EXPECT_TRUE(absl::StrContains(s.message(), "classifier_hidden")) << s;
  models::EncoderClassifier pre(SmallBert().pre_ln(true));
  EXPECT_TRUE(
      absl::StrContains(ExportHuggingFace(pre, {"a", "b"}, dir_ + "_pre").message(), "pre_ln"));
  EXPECT_FALSE(ExportHuggingFace(model_, {"a"}, dir_ + "_labels").ok());
}

TEST(HfConfigTest, OlderPadlessConfigsLoadWithDefaults) {
  absl::StatusOr<models::EncoderConfig> c =
      models::EncoderConfig::FromJson(R"({"hidden": 16, "heads": 2, "type_vocab_size": 2})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->position_offset(), 0);
  EXPECT_EQ(c->classifier_hidden(), models::ClassifierHidden::kNone);
  EXPECT_FALSE(models::EncoderConfig::FromJson(R"({"classifier_hidden": "gelu"})").ok());
  EXPECT_FALSE(models::EncoderConfig::FromJson(R"({"position_offset": 600})").ok());
}

}  // namespace
}  // namespace padless::model_files
