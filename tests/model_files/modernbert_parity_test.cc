// ModernBERT import and export parity with transformers (issue 45): a tiny random ModernBERT
// (4 layers, hidden 64, 4 heads, intermediate 96, a +-4 window, global attention in layers 0 and
// 3) made by padless from a fixed seed and exported with ExportHuggingFace; transformers
// (tests/model_files/modernbert_reference.py, eager attention, fp32, in one worker process for the
// whole binary: python_worker.h) loads that directory, refusing any missing or unexpected tensor,
// computes the reference and re-saves it in its own config form; padless imports transformers'
// copy and must give its logits, last hidden states and loss gradients within 1e-4, on the varlen
// layout (grouped and reference attention), packed rows and padded rows, for sequences of 1 to 40
// tokens whose windows would cross sequence boundaries if they could. Without Python's
// transformers the golden files in data/modernbert_golden/ stand in (PADLESS_UPDATE_GOLDEN=1
// rewrites them), and padless imports its own export. A poisoned model (layer 0's Q and K swapped)
// must fail the comparison.
// Pruned ModernBERTs (fewer heads and FFN neurons per layer) export at full width with the removed
// units zero (model_files/full_width.h: transformers' ModernBERT has no pruned_heads), transformers
// loads that with the pruned model's logits, and padless imports it back as the pruned model.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "batch_factory.h"
#include "padless/model_files/hf_weights.h"
#include "padless/model_files/safetensors.h"
#include "python_worker.h"

namespace padless::model_files::modernbert_parity {
namespace {

using models::testing::MakePacked;
using models::testing::MakePadded;
using models::testing::MakeVarlen;
using models::testing::Sequences;
using testing::PythonWorkerReady;
using testing::RunPythonJob;

const std::string kGoldenDir =
    std::string(PADLESS_SOURCE_DIR) + "/tests/model_files/data/modernbert_golden";
const std::string kScript =
    std::string(PADLESS_SOURCE_DIR) + "/tests/model_files/modernbert_reference.py";

bool HavePython() { return PythonWorkerReady(kScript); }

std::string TempDir(const std::string& name) {
  const std::string d =
      absl::StrCat(::testing::TempDir(), "modernbert_parity_", ::getpid(), "_", name);
  ::mkdir(d.c_str(), 0700);
  return d;
}

// The sequences whose hidden states the golden files keep (kept small).
constexpr char kHiddenOf[] = "2,4";

// Lengths 1 to 40 (ids in [5, vocab)) against a +-4 window.
Sequences FixedIds(int64_t vocab) {
  Sequences s;
  uint64_t x = 4545;
  for (int64_t len : {40, 1, 17, 33, 9, 26}) {
    std::vector<int64_t> seq;
    for (int64_t i = 0; i < len; ++i) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      seq.push_back(5 + static_cast<int64_t>((x >> 33) % static_cast<uint64_t>(vocab - 5)));
    }
    s.tokens.push_back(seq);
    s.labels.push_back(static_cast<int64_t>(s.labels.size() % 3));
  }
  return s;
}

// transformers' tensor -> padless's parameter, for the gradients the reference keeps.
const std::map<std::string, std::string> kGradParams = {
    {"model.embeddings.norm.weight", "embedding_norm_weight"},
    {"model.layers.0.mlp.Wi.weight", "layer0.ffn_in_weight"},
    {"model.layers.1.attn.Wqkv.weight", "layer1.attention_qkv_weight"},
    {"model.layers.2.mlp_norm.weight", "layer2.ffn_norm_weight"},
    {"model.layers.3.attn.Wo.weight", "layer3.attention_out_weight"},
    {"head.dense.weight", "head_dense_weight"},
    {"classifier.weight", "head_weight"}};

nlohmann::json LoadReference(const std::string& name, const std::string& dir, const Sequences& s,
                             const std::string& resave, bool python) {
  const std::string golden = kGoldenDir + "/" + name + ".json";
  if (!python) {
    std::ifstream in(golden);
    EXPECT_TRUE(in.good()) << golden;
    return nlohmann::json::parse(in);
  }
  const std::string ids = dir + "_ids.json", out = dir + "_reference.json";
  std::ofstream(ids) << nlohmann::json({{"ids", s.tokens}, {"labels", s.labels}}).dump();
  const absl::Status job = RunPythonJob(kScript, {"--model", dir, "--ids", ids, "--out", out,
                                                  "--resave", resave, "--hidden-of", kHiddenOf});
  EXPECT_TRUE(job.ok()) << job;
  std::ifstream in(out);
  const nlohmann::json fresh = nlohmann::json::parse(in);
  if (std::getenv("PADLESS_UPDATE_GOLDEN") != nullptr) std::ofstream(golden) << fresh.dump();
  return fresh;
}

at::Tensor Values(const nlohmann::json& j) { return at::tensor(j.get<std::vector<float>>()); }

double RelativeError(const at::Tensor& got, const at::Tensor& want) {
  return (got - want).abs().max().item<double>() / std::max(want.abs().max().item<double>(), 1e-6);
}

// Largest relative error of logits, hidden states and gradients over the layouts and backends.
double MaxError(models::EncoderClassifier& model, const Sequences& s, const nlohmann::json& ref) {
  double worst = 0;
  struct Run {
    batching::Batch batch;
    models::AttentionBackend backend;
  };
  const std::vector<Run> runs = {{MakeVarlen(s), models::AttentionBackend::kAuto},
                                 {MakeVarlen(s), models::AttentionBackend::kVarlenReference},
                                 {MakePacked(s, 64), models::AttentionBackend::kAuto},
                                 {MakePadded(s), models::AttentionBackend::kAuto}};
  for (const Run& run : runs) {
    models::ModelRuntime runtime = model->runtime();
    runtime.attention = run.backend;
    model->set_runtime(runtime);
    model->zero_grad();
    const at::Tensor logits = model->forward(run.batch);
    models::ClassificationLoss(logits, run.batch.labels).backward();
    for (size_t i = 0; i < s.tokens.size(); ++i) {
      worst = std::max(worst, RelativeError(logits[i].detach(), Values(ref["logits"][i])));
    }
    const auto params = model->named_parameters();
    for (const auto& [hf, padless] : kGradParams) {
      const at::Tensor want = Values(ref["grads"][hf]);
      const at::Tensor got = params[padless].grad().reshape(-1).narrow(0, 0, want.numel());
      worst = std::max(worst, RelativeError(got, want));
    }
    at::NoGradGuard no_grad;
    const at::Tensor tokens = model->EncodeTokens(run.batch);
    int64_t at_token = 0;
    for (size_t i = 0; i < s.tokens.size(); ++i) {
      const int64_t len = static_cast<int64_t>(s.tokens[i].size());
      if (ref["hidden"].contains(std::to_string(i))) {
        worst = std::max(worst, RelativeError(tokens.narrow(0, at_token, len).reshape(-1),
                                              Values(ref["hidden"][std::to_string(i)])));
      }
      at_token += len;
    }
  }
  return worst;
}

void ExpectParity(models::EncoderClassifier& model, const Sequences& s, const nlohmann::json& ref) {
  ASSERT_EQ(ref["logits"].size(), s.tokens.size());
  ASSERT_FALSE(ref["hidden"].empty());
  EXPECT_LT(MaxError(model, s, ref), 1e-4);
  at::Tensor qkv = model->named_parameters()["layer0.attention_qkv_weight"];
  const int64_t h = qkv.size(0) / 3;
  const at::Tensor saved = qkv.detach().clone();
  {
    at::NoGradGuard no_grad;
    qkv.narrow(0, 0, h).copy_(saved.narrow(0, h, h));
    qkv.narrow(0, h, h).copy_(saved.narrow(0, 0, h));
  }
  EXPECT_GT(MaxError(model, s, ref), 1e-3) << "the comparison cannot fail";
  at::NoGradGuard no_grad;
  qkv.copy_(saved);
}

// Every parameter random from `seed` (norm gains near 1).
models::EncoderClassifier RandomModel(const models::EncoderConfig& config, uint64_t seed) {
  at::manual_seed(seed);
  models::EncoderClassifier model(config);
  at::NoGradGuard no_grad;
  for (auto& p : model->named_parameters()) {
    const bool gain = p.key().find("norm_weight") != std::string::npos;
    p.value().copy_(gain ? 1 + 0.1 * at::randn(p.value().sizes())
                         : 0.05 * at::randn(p.value().sizes()));
  }
  model->eval();
  return model;
}

struct Shape {
  const char* name;
  models::EncoderConfig config;
};

std::vector<Shape> Shapes() {
  const models::EncoderConfig tiny = models::EncoderConfig::ModernBertBase()
                                         .vocab_size(120)
                                         .hidden(64)
                                         .layers(4)
                                         .heads(4)
                                         .ffn(96)
                                         .max_positions(128)
                                         .num_labels(3)
                                         .local_attention(8);
  return {{"modernbert_cls", tiny},
          {"modernbert_mean_biases", models::EncoderConfig(tiny)
                                         .pooling(models::Pooling::kMean)
                                         .attention_bias(true)
                                         .mlp_bias(true)
                                         .norm_bias(true)
                                         .classifier_bias(true)
                                         .activation(models::Activation::kGeluTanh)
                                         .global_attn_every_n_layers(2)
                                         .local_rope_theta(500.0)}};
}

TEST(ModernBertParityTest, ImportedModelMatchesTransformers) {
  for (const Shape& shape : Shapes()) {
    SCOPED_TRACE(shape.name);
    models::EncoderClassifier source = RandomModel(shape.config, 20270045);
    const std::string written = TempDir(std::string(shape.name) + "_padless");
    const absl::Status s = ExportHuggingFace(source, {"a", "b", "c"}, written);
    ASSERT_TRUE(s.ok()) << s;
    const Sequences ids = FixedIds(shape.config.vocab_size());
    const std::string resaved = TempDir(std::string(shape.name) + "_transformers");
    const bool python = HavePython();
    const nlohmann::json ref = LoadReference(shape.name, written, ids, resaved, python);
    absl::StatusOr<ImportedModel> imported = ImportHuggingFace(python ? resaved : written);
    ASSERT_TRUE(imported.ok()) << imported.status();
    EXPECT_TRUE(imported->head_loaded) << imported->new_head_reason;
    EXPECT_EQ(imported->hf.family, HfFamily::kModernBert);
    EXPECT_EQ(imported->hf.labels, (std::vector<std::string>{"a", "b", "c"}));
    EXPECT_EQ(imported->hf.encoder.ToJson(), shape.config.ToJson());
    ExpectParity(imported->model, ids, ref);
  }
}

TEST(ModernBertParityTest, UnrepresentableConfigsNameTheField) {
  const std::string base =
      R"({"model_type": "modernbert", "num_hidden_layers": 4, "hidden_size": 64,
          "num_attention_heads": 4, "intermediate_size": 96, "vocab_size": 100, )";
  const std::pair<const char*, const char*> cases[] = {
      {R"("layer_types": ["full_attention", "full_attention", "sliding_attention",
          "full_attention"]})",
       "layer_types"},
      {R"("rope_parameters": {"full_attention": {"rope_type": "linear", "factor": 2.0}}})",
       "rope_type"},
      {R"("classifier_activation": "silu"})", "classifier_activation"},
      {R"("hidden_activation": "swish"})", "hidden_activation"},
      {R"("norm_bias": "yes"})", "norm_bias"}};
  for (const auto& [tail, field] : cases) {
    absl::StatusOr<HfConfig> c = ParseHfConfig(base + tail, "dir/config.json");
    ASSERT_FALSE(c.ok()) << tail;
    EXPECT_NE(std::string(c.status().message()).find(field), std::string::npos) << c.status();
  }
  // The Hub's form and transformers 5's form of the same layer pattern.
  absl::StatusOr<HfConfig> hub = ParseHfConfig(
      base + R"("global_attn_every_n_layers": 2, "global_rope_theta": 1000.0})", "hub");
  absl::StatusOr<HfConfig> saved = ParseHfConfig(
      base + R"("layer_types": ["full_attention", "sliding_attention", "full_attention",
          "sliding_attention"], "rope_parameters": {"full_attention": {"rope_type": "default",
          "rope_theta": 1000.0}, "sliding_attention": {"rope_type": "default",
          "rope_theta": 10000.0}}})",
      "saved");
  ASSERT_TRUE(hub.ok()) << hub.status();
  ASSERT_TRUE(saved.ok()) << saved.status();
  EXPECT_EQ(hub->encoder.ToJson(), saved->encoder.ToJson());
  EXPECT_EQ(hub->encoder.global_attn_every_n_layers(), 2);
  EXPECT_EQ(hub->encoder.global_rope_theta(), 1000.0);
}

// Tiny's shapes pruned: layer 0 loses heads 1 and 3, layer 1 head 2, layer 2 three of four, layer
// 3 none; the FFNs keep 64, 96, 32 and 48 of their 96 neurons. The gradient slices the reference
// keeps (layer 1's first Q rows, layer 3's attention output row, layer 0's first FFN-in row) sit
// at the same places in the narrow and the wide model.
std::vector<Shape> PrunedShapes() {
  std::vector<Shape> out;
  for (const Shape& s : Shapes()) {
    out.push_back({s.name == std::string("modernbert_cls") ? "pruned_modernbert_cls"
                                                           : "pruned_modernbert_mean_biases",
                   models::EncoderConfig(s.config)
                       .pruned_heads({{1, 3}, {2}, {0, 1, 2}, {}})
                       .layer_ffn({64, 96, 32, 48})});
  }
  return out;
}

// The export holds layer 0's removed heads (1 and 3) and layer 2's removed neurons (32 of 96) as
// zeros, the kept ones as padless has them: value rows from 0, gate rows from 96.
void ExpectFullWidthZeros(const std::string& dir, models::EncoderClassifier& pruned) {
  const nlohmann::json config = nlohmann::json::parse(std::ifstream(dir + "/config.json"));
  EXPECT_FALSE(config.contains("pruned_heads"));
  EXPECT_EQ(config["num_attention_heads"], 4);
  EXPECT_EQ(config["intermediate_size"], 96);
  absl::StatusOr<SafetensorsFile> weights = SafetensorsFile::Open(dir + "/model.safetensors");
  ASSERT_TRUE(weights.ok()) << weights.status();
  const at::Tensor qkv = *weights->Tensor("model.layers.0.attn.Wqkv.weight", true);
  const at::Tensor out = *weights->Tensor("model.layers.0.attn.Wo.weight", true);
  ASSERT_EQ(qkv.sizes().vec(), (std::vector<int64_t>{3 * 64, 64}));
  for (int64_t block = 0; block < 3; ++block) {
    for (int64_t removed : {1, 3}) {
      EXPECT_EQ(qkv.narrow(0, (block * 4 + removed) * 16, 16).count_nonzero().item<int64_t>(), 0);
    }
  }
  for (int64_t removed : {1, 3}) {
    EXPECT_EQ(out.narrow(1, removed * 16, 16).count_nonzero().item<int64_t>(), 0);
  }
  const std::vector<at::TensorList> layers = pruned->LayerWeights();
  const at::Tensor narrow_qkv = layers[0][models::kQkvWeight];
  EXPECT_TRUE(qkv.narrow(0, 64 + 32, 16).equal(narrow_qkv.narrow(0, 32 + 16, 16)))
      << "K of head 2: the second K head of the pruned layer";
  const at::Tensor wi = *weights->Tensor("model.layers.2.mlp.Wi.weight", true);
  const at::Tensor wo = *weights->Tensor("model.layers.2.mlp.Wo.weight", true);
  ASSERT_EQ(wi.sizes().vec(), (std::vector<int64_t>{2 * 96, 64}));
  const at::Tensor narrow_wi = layers[2][models::kFfnInWeight];
  EXPECT_TRUE(wi.narrow(0, 0, 32).equal(narrow_wi.narrow(0, 0, 32)));
  EXPECT_TRUE(wi.narrow(0, 96, 32).equal(narrow_wi.narrow(0, 32, 32)));
  EXPECT_EQ(wi.narrow(0, 32, 64).count_nonzero().item<int64_t>(), 0);
  EXPECT_EQ(wi.narrow(0, 128, 64).count_nonzero().item<int64_t>(), 0);
  EXPECT_EQ(wo.narrow(1, 32, 64).count_nonzero().item<int64_t>(), 0);
}

TEST(ModernBertParityTest, PrunedExportMatchesTransformers) {
  for (const Shape& shape : PrunedShapes()) {
    SCOPED_TRACE(shape.name);
    models::EncoderClassifier source = RandomModel(shape.config, 20270145);
    const std::string written = TempDir(std::string(shape.name) + "_padless");
    const absl::Status s = ExportHuggingFace(source, {"a", "b", "c"}, written);
    ASSERT_TRUE(s.ok()) << s;
    ASSERT_NO_FATAL_FAILURE(ExpectFullWidthZeros(written, source));
    const Sequences ids = FixedIds(shape.config.vocab_size());
    const std::string resaved = TempDir(std::string(shape.name) + "_transformers");
    const bool python = HavePython();
    const nlohmann::json ref = LoadReference(shape.name, written, ids, resaved, python);
    // transformers' logits are the pruned padless model's.
    {
      at::NoGradGuard no_grad;
      const at::Tensor logits = source->forward(MakeVarlen(ids));
      ASSERT_EQ(ref["logits"].size(), ids.tokens.size());
      for (size_t i = 0; i < ids.tokens.size(); ++i) {
        EXPECT_LT(RelativeError(logits[i], Values(ref["logits"][i])), 1e-4) << i;
      }
    }
    // Imported back (transformers' save_pretrained copy when Python ran): the narrow model again.
    absl::StatusOr<ImportedModel> imported = ImportHuggingFace(python ? resaved : written);
    ASSERT_TRUE(imported.ok()) << imported.status();
    EXPECT_EQ(imported->hf.encoder.ToJson(), shape.config.ToJson());
    auto want = source->named_parameters();
    ASSERT_EQ(imported->model->named_parameters().size(), want.size());
    for (const auto& p : imported->model->named_parameters()) {
      EXPECT_TRUE(p.value().equal(want[p.key()])) << p.key();
    }
    {
      at::NoGradGuard no_grad;
      EXPECT_TRUE(imported->model->forward(MakePacked(ids, 64))
                      .equal(source->forward(MakePacked(ids, 64))));
    }
    ExpectParity(imported->model, ids, ref);
  }
}

}  // namespace
}  // namespace padless::model_files::modernbert_parity
