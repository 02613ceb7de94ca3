// Hugging Face interop of pruned models (issue 27): a model with fewer heads in some layers (a
// different count per layer) and a uniformly narrower FFN exports with config.json's
// `pruned_heads` and a reduced intermediate_size, with the pruned weight shapes, and imports back
// with the pruning record, identical parameters and identical logits (BERT, RoBERTa and
// DistilBERT; RoBERTa also through `padless export-hf` and LoadModelDir). FFN widths that differ
// between layers cannot be exported, and a damaged `pruned_heads` in a Hugging Face config.json is
// an error naming the file and the field. (transformers' view of these exports: hf_parity_test.cc.)
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "batch_factory.h"
#include "padless/corpus/label_map.h"
#include "padless/model_files/hf_weights.h"
#include "padless/model_files/model_io.h"
#include "padless/model_files/safetensors.h"
#include "padless/tokenize/tokenizer.h"

namespace padless::model_files {
namespace {

using models::testing::MakePacked;
using models::testing::MakePadded;
using models::testing::MakeVarlen;

// Layer 0 loses heads 1 and 3, layer 1 none, layer 2 three of four; every FFN keeps 40 of 64.
models::EncoderConfig PrunedBert() {
  return models::EncoderConfig()
      .vocab_size(60)
      .hidden(32)
      .heads(4)
      .ffn(64)
      .layers(3)
      .max_positions(24)
      .num_labels(3)
      .dropout(0)
      .attention_dropout(0)
      .classifier_hidden(models::ClassifierHidden::kTanh)
      .pruned_heads({{1, 3}, {}, {0, 1, 2}})
      .layer_ffn({40, 40, 40});
}

models::EncoderConfig PrunedRoberta() {
  return PrunedBert().type_vocab_size(1).position_offset(2).max_positions(26).layer_norm_eps(1e-5);
}

models::EncoderConfig PrunedDistilBert() {
  return PrunedBert().type_vocab_size(0).classifier_hidden(models::ClassifierHidden::kRelu);
}

// What Hugging Face's format keeps of `c`: the heads record, one FFN width and no per-layer list.
models::EncoderConfig AsHuggingFaceKeepsIt(models::EncoderConfig c) {
  return c.ffn(c.ffn_in_layer(0)).layer_ffn({});
}

// A model of `config` whose every parameter (biases and LayerNorm included) is random, so that a
// swapped or misplaced tensor changes the comparison.
models::EncoderClassifier RandomPrunedModel(const models::EncoderConfig& config) {
  at::manual_seed(27);
  models::EncoderClassifier model(config);
  at::NoGradGuard no_grad;
  for (at::Tensor& p : model->parameters()) p.normal_(0, 0.2);
  model->eval();
  return model;
}

std::string FreshDir(const std::string& name) {
  const std::string d = absl::StrCat(::testing::TempDir(), "hf_pruned_", ::getpid(), "_", name);
  EXPECT_EQ(std::system(absl::StrCat("rm -rf '", d, "'").c_str()), 0);
  return d;
}

nlohmann::json ReadJson(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

// `got` has `want`'s parameters, bit for bit, and the same logits on padded, packed and varlen
// batches.
void ExpectSameModel(models::EncoderClassifier& got, models::EncoderClassifier& want) {
  auto expected = want->named_parameters();
  ASSERT_EQ(got->named_parameters().size(), expected.size());
  for (const auto& p : got->named_parameters()) {
    EXPECT_TRUE(p.value().equal(expected[p.key()])) << p.key();
  }
  const models::testing::Sequences s =
      models::testing::RandomSequences(5, 6, 1, 20, want->config().vocab_size(), 3);
  at::NoGradGuard no_grad;
  for (const batching::Batch& b : {MakePadded(s), MakeVarlen(s), MakePacked(s, 24)}) {
    EXPECT_TRUE(got->forward(b).equal(want->forward(b)));
  }
}

TEST(HfPrunedTest, RoundTripKeepsPruningParametersAndLogits) {
  struct Case {
    const char* name;
    models::EncoderConfig config;
    std::string layer0;  // layer 0's names in the checkpoint
    const char* query;
    const char* attention_out;
    const char* ffn_in;
    const char* ffn_field;
  };
  const std::vector<Case> cases = {
      {"bert", PrunedBert(), "bert.encoder.layer.0.", "attention.self.query",
       "attention.output.dense", "intermediate.dense", "intermediate_size"},
      {"roberta", PrunedRoberta(), "roberta.encoder.layer.0.", "attention.self.query",
       "attention.output.dense", "intermediate.dense", "intermediate_size"},
      {"distilbert", PrunedDistilBert(), "distilbert.transformer.layer.0.", "attention.q_lin",
       "attention.out_lin", "ffn.lin1", "hidden_dim"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    models::EncoderClassifier model = RandomPrunedModel(c.config);
    const std::string dir = FreshDir(c.name);
    ASSERT_TRUE(ExportHuggingFace(model, {"a", "b", "c"}, dir).ok());
    // transformers' convention: only the layers that lost heads, keyed by the layer index.
    const nlohmann::json config = ReadJson(dir + "/config.json");
    EXPECT_EQ(config["pruned_heads"], nlohmann::json::parse(R"({"0": [1, 3], "2": [0, 1, 2]})"));
    EXPECT_EQ(config[c.ffn_field], 40);
    absl::StatusOr<SafetensorsFile> weights = SafetensorsFile::Open(dir + "/model.safetensors");
    ASSERT_TRUE(weights.ok()) << weights.status();
    auto shape = [&](const std::string& module, const char* part) {
      return weights->Tensor(c.layer0 + module + "." + part, true)->sizes().vec();
    };
    // Layer 0 keeps two heads of width 8: Q, K and V are [16, 32], the output projection [32, 16].
    EXPECT_EQ(shape(c.query, "weight"), (std::vector<int64_t>{16, 32}));
    EXPECT_EQ(shape(c.query, "bias"), (std::vector<int64_t>{16}));
    EXPECT_EQ(shape(c.attention_out, "weight"), (std::vector<int64_t>{32, 16}));
    EXPECT_EQ(shape(c.ffn_in, "weight"), (std::vector<int64_t>{40, 32}));

    absl::StatusOr<ImportedModel> back = ImportHuggingFace(dir);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_TRUE(back->head_loaded);
    EXPECT_EQ(back->hf.encoder.ToJson(), AsHuggingFaceKeepsIt(c.config).ToJson());
    EXPECT_EQ(back->hf.encoder.kept_heads(2), (std::vector<int64_t>{3}));
    ExpectSameModel(back->model, model);
  }
}

// The command line's path: a pruned padless model directory through `padless export-hf`, then
// served as it is by LoadModelDir (RoBERTa with its byte-level BPE tokenizer).
TEST(HfPrunedTest, ExportHfCommandRoundTrip) {
  absl::StatusOr<tokenize::Tokenizer> tokenizer = tokenize::Tokenizer::Load(
      std::string(PADLESS_SOURCE_DIR) + "/tests/tokenize/data/bytelevel_bpe/tokenizer.json");
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  models::EncoderClassifier model = RandomPrunedModel(PrunedRoberta().vocab_size(tokenizer->vocab_size()));
  absl::StatusOr<corpus::LabelMap> labels = corpus::LabelMap::FromNames({"x", "y", "z"});
  ASSERT_TRUE(labels.ok());
  const std::string dir = FreshDir("cli_padless"), out = FreshDir("cli_hf");
  ASSERT_TRUE(SaveModelDir(dir, model, *tokenizer, *labels).ok());
  const std::string cmd =
      absl::StrCat(PADLESS_CLI_PATH, " export-hf --model ", dir, " --out ", out);
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  absl::StatusOr<LoadedModel> loaded = LoadModelDir(out, c10::Device(c10::kCPU));
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->labels.names(), labels->names());
  EXPECT_EQ(loaded->model->config().pruned_heads(), model->config().pruned_heads());
  ExpectSameModel(loaded->model, model);
}

TEST(HfPrunedTest, PerLayerFfnWidthsCannotBeExported) {
  for (const models::EncoderConfig& config :
       {PrunedBert().layer_ffn({40, 64, 48}), PrunedDistilBert().layer_ffn({40, 64, 48})}) {
    models::EncoderClassifier model(config);
    const std::string dir = FreshDir("ffn");
    const absl::Status s = ExportHuggingFace(model, {"a", "b", "c"}, dir);
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
    const bool distil = config.type_vocab_size() == 0;
    for (const char* part : {"layer_ffn", "cannot represent per-layer FFN widths",
                             distil ? "hidden_dim" : "intermediate_size", "layer 0: 40",
                             "layer 1: 64", "layer 2: 48"}) {
      EXPECT_TRUE(absl::StrContains(s.message(), part)) << s << " lacks " << part;
    }
    EXPECT_NE(::access(dir.c_str(), F_OK), 0) << "nothing is written";
  }
}

TEST(HfPrunedTest, DamagedPrunedHeadsNameTheFileAndField) {
  models::EncoderClassifier model = RandomPrunedModel(PrunedBert());
  const std::string dir = FreshDir("damaged");
  ASSERT_TRUE(ExportHuggingFace(model, {"a", "b", "c"}, dir).ok());
  const nlohmann::json good = ReadJson(dir + "/config.json");
  auto import_with = [&](const nlohmann::json& pruned_heads) {
    nlohmann::json c = good;
    c["pruned_heads"] = pruned_heads;
    std::ofstream(dir + "/config.json") << c.dump();
    return ImportHuggingFace(dir);
  };
  // transformers keeps a layer's heads as a set: any order, any repeats, the same pruning.
  absl::StatusOr<ImportedModel> unordered =
      import_with(nlohmann::json::parse(R"({"0": [3, 1, 3], "2": [2, 0, 1], "1": []})"));
  ASSERT_TRUE(unordered.ok()) << unordered.status();
  ExpectSameModel(unordered->model, model);
  const std::vector<std::pair<const char*, std::string>> cases = {
      {R"([[1, 3], [], [0, 1, 2]])", "must be an object"},
      {R"({"first": [1]})", "'first' is not a layer index"},
      {R"({"3": [1]})", "'3' is not a layer index in [0, 3)"},
      {R"({"-1": [1]})", "'-1' is not a layer index"},
      {R"({"0": 1})", "layer 0 must list head indices"},
      {R"({"0": [1, "3"]})", "non-integer head"},
      {R"({"0": [1, 4], "2": [0, 1, 2]})", "head 4 is not in [0, 4)"},
      {R"({"0": [1, 3], "2": [0, 1, 2, 3]})", "layer 2 would keep no head"},
  };
  for (const auto& [value, expect] : cases) {
    absl::StatusOr<ImportedModel> m = import_with(nlohmann::json::parse(value));
    ASSERT_FALSE(m.ok()) << value;
    for (const std::string& part : {dir + "/config.json", std::string("pruned_heads"), expect}) {
      EXPECT_TRUE(absl::StrContains(m.status().message(), part)) << m.status() << " lacks " << part;
    }
  }
  // A record that disagrees with the weights: the tensor whose shape it contradicts.
  absl::StatusOr<ImportedModel> m =
      import_with(nlohmann::json::parse(R"({"0": [1], "2": [0, 1, 2]})"));
  ASSERT_FALSE(m.ok());
  EXPECT_TRUE(absl::StrContains(m.status().message(),
                                "'bert.encoder.layer.0.attention.self.query.weight' has shape"))
      << m.status();
}

}  // namespace
}  // namespace padless::model_files
