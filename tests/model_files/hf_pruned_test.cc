// Hugging Face interop of pruned models (issues 27 and 45): a model with fewer heads in some
// layers (a different count per layer) and FFN widths that differ per layer exports at full width
// (full_width.h): no `pruned_heads`, the original intermediate_size, the removed heads' Q, K, V
// rows and output-projection columns and the removed neurons' FFN rows and columns zero. It imports
// back pruned, with the pruning record, identical parameters and identical logits (BERT, RoBERTa
// and DistilBERT; RoBERTa also through `padless export-hf` and LoadModelDir). FullWidthModel and
// DropZeroUnits on their own; the smaller form transformers 4.x wrote (`pruned_heads`) still
// imports, and a damaged `pruned_heads` is an error naming the file and the field. ModernBERT's
// GeGLU layers (value and gate rows, optional biases) widen and narrow the same way.
// (transformers' view of these exports: hf_parity_test.cc.)
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "batch_factory.h"
#include "padless/corpus/label_map.h"
#include "padless/model_files/full_width.h"
#include "padless/model_files/hf_weights.h"
#include "padless/model_files/model_io.h"
#include "padless/model_files/safetensors.h"
#include "padless/tokenize/tokenizer.h"

namespace padless::model_files {
namespace {

using models::testing::MakePacked;
using models::testing::MakePadded;
using models::testing::MakeVarlen;

// Layer 0 loses heads 1 and 3, layer 1 none, layer 2 three of four; the FFNs keep 40, 64 and 48
// of their 64 neurons.
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
      .layer_ffn({40, 64, 48});
}

models::EncoderConfig PrunedRoberta() {
  return PrunedBert().type_vocab_size(1).position_offset(2).max_positions(26).layer_norm_eps(1e-5);
}

models::EncoderConfig PrunedDistilBert() {
  return PrunedBert().type_vocab_size(0).classifier_hidden(models::ClassifierHidden::kRelu);
}

// What transformers 4.x's pruned checkpoints keep of `c` (one FFN width for every layer): the
// heads record, that width as intermediate_size and no per-layer list.
models::EncoderConfig AsTransformers4KeepsIt(models::EncoderConfig c) {
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
    // The full-width form: what transformers 5 builds from the config alone.
    const nlohmann::json config = ReadJson(dir + "/config.json");
    EXPECT_FALSE(config.contains("pruned_heads"));
    EXPECT_EQ(config[c.ffn_field], 64);
    absl::StatusOr<SafetensorsFile> weights = SafetensorsFile::Open(dir + "/model.safetensors");
    ASSERT_TRUE(weights.ok()) << weights.status();
    auto tensor = [&](const std::string& module, const char* part) {
      return *weights->Tensor(c.layer0 + module + "." + part, true);
    };
    // Layer 0 keeps heads 0 and 2 (width 8) and 40 neurons: Q's rows 8-15 and 24-31 are zero and
    // rows 0-7 and 16-23 hold padless's two heads; the output projection's columns likewise.
    const at::Tensor query = tensor(c.query, "weight"), out = tensor(c.attention_out, "weight");
    EXPECT_EQ(query.sizes().vec(), (std::vector<int64_t>{32, 32}));
    EXPECT_EQ(out.sizes().vec(), (std::vector<int64_t>{32, 32}));
    const at::Tensor qkv = model->LayerWeights()[0][models::kQkvWeight];
    const at::Tensor attended = model->LayerWeights()[0][models::kOutWeight];
    for (int64_t removed : {1, 3}) {
      EXPECT_EQ(query.narrow(0, removed * 8, 8).count_nonzero().item<int64_t>(), 0);
      const at::Tensor bias = tensor(c.query, "bias").narrow(0, removed * 8, 8);
      EXPECT_EQ(bias.count_nonzero().item<int64_t>(), 0);
      EXPECT_EQ(out.narrow(1, removed * 8, 8).count_nonzero().item<int64_t>(), 0);
    }
    EXPECT_TRUE(query.narrow(0, 16, 8).equal(qkv.narrow(0, 8, 8)));
    EXPECT_TRUE(out.narrow(1, 16, 8).equal(attended.narrow(1, 8, 8)));
    const at::Tensor ffn_in = tensor(c.ffn_in, "weight");
    EXPECT_EQ(ffn_in.sizes().vec(), (std::vector<int64_t>{64, 32}));
    EXPECT_EQ(ffn_in.narrow(0, 40, 24).count_nonzero().item<int64_t>(), 0);
    EXPECT_TRUE(ffn_in.narrow(0, 0, 40).equal(model->LayerWeights()[0][models::kFfnInWeight]));

    absl::StatusOr<ImportedModel> back = ImportHuggingFace(dir);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_TRUE(back->head_loaded);
    EXPECT_EQ(back->hf.encoder.ToJson(), c.config.ToJson());
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

// Logits of `a` and `b` on padded, packed and varlen batches agree within fp32 rounding: what
// removing a unit whose weights are zero may change (GEMMs of another width).
void ExpectSameLogits(models::EncoderClassifier& a, models::EncoderClassifier& b) {
  const models::testing::Sequences s =
      models::testing::RandomSequences(6, 6, 1, 20, a->config().vocab_size(), 3);
  at::NoGradGuard no_grad;
  for (const batching::Batch& batch : {MakePadded(s), MakeVarlen(s), MakePacked(s, 24)}) {
    EXPECT_TRUE(at::allclose(a->forward(batch), b->forward(batch), 1e-5, 1e-5));
  }
}

// The widening itself: every kept head at its original index, the kept neurons first, zeros where
// units were removed, everything else as it was; the same logits.
TEST(HfPrunedTest, FullWidthModelZeroesTheRemovedUnits) {
  for (const models::EncoderConfig& config : {PrunedBert(), PrunedDistilBert()}) {
    models::EncoderClassifier pruned = RandomPrunedModel(config);
    absl::StatusOr<models::EncoderClassifier> full = FullWidthModel(pruned);
    ASSERT_TRUE(full.ok()) << full.status();
    EXPECT_EQ((*full)->config().ToJson(),
              models::EncoderConfig(config).pruned_heads({}).layer_ffn({}).ToJson());
    auto narrow_params = pruned->named_parameters();
    for (const auto& p : (*full)->named_parameters()) {
      if (p.key().rfind("layer", 0) == 0) continue;  // compared below
      EXPECT_TRUE(p.value().equal(narrow_params[p.key()])) << p.key();
    }
    using namespace models;  // the LayerWeight names
    for (int64_t l = 0; l < config.layers(); ++l) {
      SCOPED_TRACE(l);
      const at::TensorList w = pruned->LayerWeights()[l], wide = (*full)->LayerWeights()[l];
      const std::vector<int64_t> kept = config.kept_heads(l);
      const int64_t heads_now = config.heads_in_layer(l);
      for (int64_t h = 0; h < 4; ++h) {
        const auto it = std::find(kept.begin(), kept.end(), h);
        const bool removed = it == kept.end();
        const int64_t k = it - kept.begin();           // its place among the pruned layer's heads
        for (int64_t block = 0; block < 3; ++block) {  // Q, K, V
          for (int weight : {kQkvWeight, kQkvBias}) {
            const at::Tensor got = wide[weight].narrow(0, (block * 4 + h) * 8, 8);
            EXPECT_TRUE(removed ? got.count_nonzero().item<int64_t>() == 0
                                : got.equal(w[weight].narrow(0, (block * heads_now + k) * 8, 8)))
                << "head " << h << " block " << block;
          }
        }
        const at::Tensor columns = wide[kOutWeight].narrow(1, h * 8, 8);
        EXPECT_TRUE(removed ? columns.count_nonzero().item<int64_t>() == 0
                            : columns.equal(w[kOutWeight].narrow(1, k * 8, 8)));
      }
      const int64_t n = config.ffn_in_layer(l);
      EXPECT_TRUE(wide[kFfnInWeight].narrow(0, 0, n).equal(w[kFfnInWeight]));
      EXPECT_TRUE(wide[kFfnInBias].narrow(0, 0, n).equal(w[kFfnInBias]));
      EXPECT_TRUE(wide[kFfnOutWeight].narrow(1, 0, n).equal(w[kFfnOutWeight]));
      EXPECT_EQ(wide[kFfnInWeight].narrow(0, n, 64 - n).count_nonzero().item<int64_t>(), 0);
      EXPECT_EQ(wide[kFfnInBias].narrow(0, n, 64 - n).count_nonzero().item<int64_t>(), 0);
      EXPECT_EQ(wide[kFfnOutWeight].narrow(1, n, 64 - n).count_nonzero().item<int64_t>(), 0);
      for (int weight :
           {kOutBias, kAttnNormWeight, kAttnNormBias, kFfnOutBias, kFfnNormWeight, kFfnNormBias}) {
        EXPECT_TRUE(wide[weight].equal(w[weight])) << weight;
      }
    }
    ExpectSameLogits(*full, pruned);
    absl::StatusOr<models::EncoderClassifier> back = DropZeroUnits(*full);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ((*back)->config().ToJson(), config.ToJson());
    ExpectSameModel(*back, pruned);
  }
  models::EncoderClassifier whole = RandomPrunedModel(PrunedBert().pruned_heads({}).layer_ffn({}));
  EXPECT_EQ(FullWidthModel(whole)->ptr(), whole.ptr()) << "an unpruned model is exported as it is";
}

// Zeroes head `h` of `layer` (of `heads` heads of width 8 in that layer): its Q, K, V rows and
// biases and its output-projection columns.
void ZeroHead(models::EncoderClassifier& model, int64_t layer, int64_t h, int64_t heads) {
  using namespace models;
  const at::TensorList w = model->LayerWeights()[layer];
  at::NoGradGuard no_grad;
  for (int64_t block = 0; block < 3; ++block) {
    w[kQkvWeight].narrow(0, (block * heads + h) * 8, 8).zero_();
    w[kQkvBias].narrow(0, (block * heads + h) * 8, 8).zero_();
  }
  w[kOutWeight].narrow(1, h * 8, 8).zero_();
}

// A checkpoint's all-zero units go, whatever wrote them; a unit with any nonzero (or NaN) weight
// stays, and every layer keeps a head.
TEST(HfPrunedTest, DropZeroUnitsRemovesOnlyAllZeroUnits) {
  models::EncoderClassifier model = RandomPrunedModel(PrunedBert().pruned_heads({}).layer_ffn({}));
  EXPECT_EQ(DropZeroUnits(model)->ptr(), model.ptr()) << "nothing zero: the model as it is";
  using namespace models;
  ZeroHead(model, 1, 2, 4);
  for (int64_t h = 0; h < 4; ++h) ZeroHead(model, 2, h, 4);  // a layer of zero heads keeps head 0
  ZeroHead(model, 0, 1, 4);
  ZeroHead(model, 0, 3, 4);
  {
    at::NoGradGuard no_grad;
    const at::TensorList w0 = model->LayerWeights()[0];
    w0[kOutWeight][5][3 * 8 + 2] = 0.5;  // head 3 of layer 0 still writes to the output
    w0[kQkvBias][2 * 32 + 8] = NAN;      // head 1's V bias: NaN is not zero
    for (int64_t neuron : {5, 60}) {
      w0[kFfnInWeight][neuron].zero_();
      w0[kFfnInBias][neuron].zero_();
      w0[kFfnOutWeight].select(1, neuron).zero_();
    }
    const at::TensorList w1 = model->LayerWeights()[1];
    w1[kFfnInWeight][7].zero_();  // its bias and FFN-out column are not: it stays
  }
  absl::StatusOr<models::EncoderClassifier> dropped = DropZeroUnits(model);
  ASSERT_TRUE(dropped.ok()) << dropped.status();
  const EncoderConfig& c = (*dropped)->config();
  EXPECT_EQ(c.pruned_heads(), (std::vector<std::vector<int64_t>>{{}, {2}, {1, 2, 3}}));
  EXPECT_EQ(c.layer_ffn(), (std::vector<int64_t>{62, 64, 64}));
  EXPECT_TRUE((*dropped)->LayerWeights()[0][kFfnInWeight][5].equal(
      model->LayerWeights()[0][kFfnInWeight][6]));
  {
    at::NoGradGuard no_grad;  // the NaN out again, to compare outputs
    model->LayerWeights()[0][kQkvBias][2 * 32 + 8] = 0;
    (*dropped)->LayerWeights()[0][kQkvBias][2 * 32 + 8] = 0;
  }
  ExpectSameLogits(*dropped, model);
}

// A ModernBERT of PrunedBert's sizes: every bias, or none (ModernBERT-base's default).
models::EncoderConfig PrunedModernBert(bool biases) {
  return models::EncoderConfig::ModernBertBase()
      .vocab_size(60)
      .hidden(32)
      .heads(4)
      .ffn(64)
      .layers(3)
      .max_positions(64)
      .num_labels(3)
      .local_attention(8)
      .attention_bias(biases)
      .mlp_bias(biases)
      .norm_bias(biases)
      .classifier_bias(biases)
      .pruned_heads({{1, 3}, {}, {0, 1, 2}})
      .layer_ffn({40, 64, 48});
}

// ModernBERT widens to zeros (a kept neuron's value row at n, its gate row at 64 + n) and narrows
// back to the same model; the biases it has not stay absent. A neuron whose value row and output
// column are zero but whose gate row is not stays: only all-zero units go.
TEST(HfPrunedTest, ModernBertFullWidthAndBack) {
  using namespace models;  // the LayerWeight names
  for (bool biases : {true, false}) {
    SCOPED_TRACE(biases ? "biases" : "no biases");
    const EncoderConfig config = PrunedModernBert(biases);
    models::EncoderClassifier pruned = RandomPrunedModel(config);
    absl::StatusOr<models::EncoderClassifier> full = FullWidthModel(pruned);
    ASSERT_TRUE(full.ok()) << full.status();
    EXPECT_EQ((*full)->config().ToJson(),
              EncoderConfig(config).pruned_heads({}).layer_ffn({}).ToJson());
    const at::TensorList narrow = pruned->LayerWeights()[2], wide = (*full)->LayerWeights()[2];
    EXPECT_TRUE(wide[kFfnInWeight].narrow(0, 0, 48).equal(narrow[kFfnInWeight].narrow(0, 0, 48)));
    EXPECT_TRUE(wide[kFfnInWeight].narrow(0, 64, 48).equal(narrow[kFfnInWeight].narrow(0, 48, 48)));
    EXPECT_EQ(wide[kFfnInWeight].narrow(0, 48, 16).count_nonzero().item<int64_t>(), 0);
    EXPECT_EQ(wide[kFfnInWeight].narrow(0, 112, 16).count_nonzero().item<int64_t>(), 0);
    EXPECT_EQ(wide[kFfnInBias].defined(), biases);
    EXPECT_FALSE((*full)->LayerWeights()[0][kAttnNormWeight].defined());
    ExpectSameLogits(*full, pruned);
    absl::StatusOr<models::EncoderClassifier> back = DropZeroUnits(*full);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ((*back)->config().ToJson(), config.ToJson());
    ExpectSameModel(*back, pruned);
  }
  models::EncoderClassifier model =
      RandomPrunedModel(PrunedModernBert(false).pruned_heads({}).layer_ffn({}));
  {
    at::NoGradGuard no_grad;
    const at::TensorList w = model->LayerWeights()[1];
    for (int64_t row : {5, 9, 64 + 9}) w[kFfnInWeight][row].zero_();  // neuron 5's gate stays
    for (int64_t neuron : {5, 9}) w[kFfnOutWeight].select(1, neuron).zero_();
  }
  absl::StatusOr<models::EncoderClassifier> dropped = DropZeroUnits(model);
  ASSERT_TRUE(dropped.ok()) << dropped.status();
  EXPECT_EQ((*dropped)->config().layer_ffn(), (std::vector<int64_t>{64, 63, 64}));
  EXPECT_TRUE((*dropped)->config().pruned_heads().empty());
  EXPECT_TRUE((*dropped)->LayerWeights()[1][kFfnInWeight][63 + 9].equal(
      model->LayerWeights()[1][kFfnInWeight][64 + 10]))
      << "neuron 10's gate row: the 10th kept neuron's";
  ExpectSameLogits(*dropped, model);
}

// transformers 4.x's pruned form of `model` (uniform FFN width) in `dir`: config.json with
// `pruned_heads` and the kept width, Q, K, V and output projections holding the kept heads only.
void WriteTransformers4Form(models::EncoderClassifier& model, const std::string& dir) {
  ASSERT_TRUE(ExportHuggingFace(model, {"a", "b", "c"}, dir).ok());
  const models::EncoderConfig& c = model->config();
  nlohmann::json config = ReadJson(dir + "/config.json");
  config["pruned_heads"] = nlohmann::json::parse(c.ToJson())["pruned_heads"];
  config[c.type_vocab_size() == 0 ? "hidden_dim" : "intermediate_size"] = c.ffn_in_layer(0);
  std::ofstream(dir + "/config.json") << config.dump();
  absl::StatusOr<SafetensorsFile> full = SafetensorsFile::Open(dir + "/model.safetensors");
  ASSERT_TRUE(full.ok()) << full.status();
  std::vector<std::pair<std::string, at::Tensor>> tensors;
  for (const auto& entry : full->entries()) {
    const std::string& name = entry.first;
    at::Tensor t = *full->Tensor(name, true);
    const size_t pos = name.find("layer.");
    if (pos != std::string::npos) {
      const int64_t layer = std::stoll(name.substr(pos + 6));
      const std::string part = name.substr(name.find('.', pos + 6) + 1);
      std::vector<int64_t> rows;
      for (int64_t h : c.kept_heads(layer)) {
        for (int64_t d = 0; d < c.head_dim(); ++d) rows.push_back(h * c.head_dim() + d);
      }
      const at::Tensor heads = at::tensor(rows, at::kLong);
      bool qkv = false;
      for (const char* module :
           {"attention.self.", "attention.q_lin.", "attention.k_lin.", "attention.v_lin."}) {
        qkv = qkv || absl::StartsWith(part, module);
      }
      if (qkv) {
        t = t.index_select(0, heads);
      } else if (part == "attention.output.dense.weight" || part == "attention.out_lin.weight") {
        t = t.index_select(1, heads);
      } else if (absl::StartsWith(part, "intermediate.dense.") ||
                 absl::StartsWith(part, "ffn.lin1.")) {
        t = t.narrow(0, 0, c.ffn_in_layer(layer));
      } else if (part == "output.dense.weight" || part == "ffn.lin2.weight") {
        t = t.narrow(1, 0, c.ffn_in_layer(layer));
      }
    }
    tensors.emplace_back(name, t.contiguous());
  }
  ASSERT_TRUE(WriteSafetensors(dir + "/model.safetensors", tensors).ok());
}

// A pruned checkpoint in transformers 4.x's form imports with its smaller weights, as it was.
TEST(HfPrunedTest, Transformers4PrunedFormImports) {
  for (const models::EncoderConfig& config :
       {PrunedBert().layer_ffn({40, 40, 40}), PrunedRoberta().layer_ffn({40, 40, 40}),
        PrunedDistilBert().layer_ffn({40, 40, 40})}) {
    models::EncoderClassifier model = RandomPrunedModel(config);
    const std::string dir = FreshDir("transformers4");
    ASSERT_NO_FATAL_FAILURE(WriteTransformers4Form(model, dir));
    absl::StatusOr<ImportedModel> back = ImportHuggingFace(dir);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(back->hf.encoder.ToJson(), AsTransformers4KeepsIt(config).ToJson());
    ExpectSameModel(back->model, model);
  }
}

TEST(HfPrunedTest, DamagedPrunedHeadsNameTheFileAndField) {
  models::EncoderClassifier model = RandomPrunedModel(PrunedBert().layer_ffn({40, 40, 40}));
  const std::string dir = FreshDir("damaged");
  ASSERT_NO_FATAL_FAILURE(WriteTransformers4Form(model, dir));
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
