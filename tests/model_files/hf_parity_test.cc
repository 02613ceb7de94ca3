// Hugging Face import parity (issue 14): padless's encoder on an imported checkpoint gives the
// hidden states and logits of transformers, fp32 on the CPU, within 1e-4 relative, on the packed
// varlen path and on the padded path. Models: BERT-base-shaped, RoBERTa-shaped and
// DistilBERT-shaped ones with random weights (generated here from a fixed seed, written as a
// Hugging Face directory, loaded and re-saved by transformers, then imported from that copy), and
// the real all-MiniLM-L6-v2 when its files are present.
// The reference outputs come from tests/model_files/hf_reference.py (one worker process for the
// whole binary: python_worker.h) when Python has transformers, and from the golden files in
// tests/model_files/data/hf_golden/ otherwise (PADLESS_UPDATE_GOLDEN=1 rewrites them from the
// fresh reference; nothing compares them with it otherwise). Every comparison is also run on a
// poisoned model (layer 0's Q and K weights swapped), which must fail it.
// Pruned exports (issues 27 and 45) are written at full width, removed heads and FFN neurons as
// zeros (model_files/full_width.h), which transformers 5 loads; padless drops the zeros again when
// it imports transformers' copy.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "batch_factory.h"
#include "padless/corpus/label_map.h"
#include "padless/model_files/hf_weights.h"
#include "padless/model_files/model_io.h"
#include "padless/model_files/safetensors.h"
#include "padless/tokenize/tokenizer.h"
#include "python_worker.h"

namespace padless::model_files {
namespace {

using models::testing::MakePacked;
using models::testing::MakePadded;
using models::testing::MakeVarlen;
using models::testing::Sequences;
using testing::PythonWorkerReady;
using testing::RunPythonJob;

const std::string kGoldenDir = std::string(PADLESS_SOURCE_DIR) + "/tests/model_files/data/hf_golden";
const std::string kReferenceScript =
    std::string(PADLESS_SOURCE_DIR) + "/tests/model_files/hf_reference.py";

bool HavePython() { return PythonWorkerReady(kReferenceScript); }

std::string TempDir(const std::string& name) {
  const std::string d = absl::StrCat(::testing::TempDir(), "hf_parity_", ::getpid(), "_", name);
  ::mkdir(d.c_str(), 0700);
  return d;
}

// Fixed id sequences in [5, vocab): clear of the special and padding ids of every family, so that
// RoBERTa's position ids (counted over non-padding ids) are the plain offsets.
Sequences FixedIds(int64_t vocab) {
  Sequences s;
  const int64_t lengths[] = {7, 1, 12, 5};
  uint64_t x = 12345;
  for (int64_t len : lengths) {
    std::vector<int64_t> seq;
    for (int64_t i = 0; i < len; ++i) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      seq.push_back(5 + static_cast<int64_t>((x >> 33) % static_cast<uint64_t>(vocab - 5)));
    }
    s.tokens.push_back(seq);
    s.labels.push_back(0);
  }
  return s;
}

struct Reference {
  std::vector<at::Tensor> hidden;  // per sequence [len, H]
  std::vector<at::Tensor> second;  // logits, or the pooler output for a bare encoder
};

Reference ParseReference(const nlohmann::json& j, int64_t hidden) {
  Reference r;
  for (size_t i = 0; i < j["hidden"].size(); ++i) {
    std::vector<float> h = j["hidden"][i].get<std::vector<float>>();
    std::vector<float> s = j["second"][i].get<std::vector<float>>();
    r.hidden.push_back(at::tensor(h).reshape({-1, hidden}));
    r.second.push_back(at::tensor(s));
  }
  return r;
}

// The reference for `dir` (fresh from transformers when `python`, else the golden file `name`).
// With Python, `resave` gets transformers' own copy of the model.
Reference LoadReference(const std::string& name, const std::string& dir, const Sequences& s,
                        int64_t hidden, bool base, const std::string& resave,
                        bool python = HavePython()) {
  const std::string golden = kGoldenDir + "/" + name + ".json";
  if (!python) {
    std::ifstream in(golden);
    EXPECT_TRUE(in.good()) << golden;
    return ParseReference(nlohmann::json::parse(in), hidden);
  }
  const std::string ids = dir + "_ids.json", out = dir + "_reference.json";
  std::ofstream(ids) << nlohmann::json(s.tokens).dump();
  std::vector<std::string> args = {"--model", dir, "--ids", ids, "--out", out};
  if (base) args.push_back("--base");
  if (!resave.empty()) args.insert(args.end(), {"--resave", resave});
  const absl::Status job = RunPythonJob(kReferenceScript, args);
  EXPECT_TRUE(job.ok()) << job;
  std::ifstream in(out);
  const nlohmann::json fresh = nlohmann::json::parse(in);
  if (std::getenv("PADLESS_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(golden) << fresh.dump();
  }
  return ParseReference(fresh, hidden);
}

double RelativeError(const at::Tensor& got, const at::Tensor& want) {
  return (got - want).abs().max().item<double>() / std::max(want.abs().max().item<double>(), 1e-6);
}

// Largest relative error of hidden states and the second output over the padded path and the
// varlen path (packed rows through the varlen backends).
double MaxError(models::EncoderClassifier& model, const Sequences& s, const Reference& ref, bool base) {
  at::NoGradGuard no_grad;
  double worst = 0;
  std::vector<batching::Batch> batches = {MakePadded(s), MakeVarlen(s), MakePacked(s, 32)};
  for (const batching::Batch& b : batches) {
    const at::Tensor tokens = model->EncodeTokens(b);
    at::Tensor second = model->forward(b);
    if (base) {
      const auto params = model->named_parameters();
      second = at::tanh(
          at::linear(model->Encode(b), params["head_dense_weight"], params["head_dense_bias"]));
    }
    int64_t at_token = 0;
    for (size_t i = 0; i < s.tokens.size(); ++i) {
      const int64_t len = static_cast<int64_t>(s.tokens[i].size());
      worst = std::max(worst, RelativeError(tokens.narrow(0, at_token, len), ref.hidden[i]));
      worst = std::max(worst, RelativeError(second[i], ref.second[i]));
      at_token += len;
    }
  }
  return worst;
}

// Checks `model` against `ref`, then the model with layer 0's Q and K weights swapped (the kind of
// mistake a wrong name mapping makes), which must fail.
void ExpectParity(models::EncoderClassifier& model, const Sequences& s, const Reference& ref, bool base) {
  ASSERT_EQ(ref.hidden.size(), s.tokens.size());
  const double error = MaxError(model, s, ref, base);
  EXPECT_LT(error, 1e-4);
  at::Tensor qkv = model->named_parameters()["layer0.attention_qkv_weight"];
  const int64_t h = qkv.size(0) / 3;  // Q's rows: fewer than hidden when heads were pruned
  const at::Tensor saved = qkv.detach().clone();
  {
    at::NoGradGuard no_grad;
    qkv.narrow(0, 0, h).copy_(saved.narrow(0, h, h));
    qkv.narrow(0, h, h).copy_(saved.narrow(0, 0, h));
  }
  EXPECT_GT(MaxError(model, s, ref, base), 1e-3) << "the comparison cannot fail";
  at::NoGradGuard no_grad;
  qkv.copy_(saved);
}

// A model of `config` with every parameter random from a fixed seed (LayerNorm gains around 1),
// so that a swapped or missing tensor shows in the outputs.
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

std::vector<Shape> RandomShapes() {
  const models::EncoderConfig common =
      models::EncoderConfig().vocab_size(1000).max_positions(64).num_labels(3).dropout(0).attention_dropout(
          0);
  return {
      {"bert_base_shape",
       models::EncoderConfig(common).hidden(768).heads(12).ffn(3072).layers(2).classifier_hidden(
           models::ClassifierHidden::kTanh)},
      {"roberta_shape", models::EncoderConfig(common)
                            .hidden(64)
                            .heads(4)
                            .ffn(128)
                            .layers(3)
                            .type_vocab_size(1)
                            .position_offset(2)
                            .max_positions(66)
                            .layer_norm_eps(1e-5)
                            .classifier_hidden(models::ClassifierHidden::kTanh)},
      {"distilbert_shape", models::EncoderConfig(common)
                               .hidden(64)
                               .heads(4)
                               .ffn(128)
                               .layers(3)
                               .type_vocab_size(0)
                               .classifier_hidden(models::ClassifierHidden::kRelu)},
  };
}

// A random model of `shape` (from `seed`) exported by padless (labels a, b, c), the reference
// outputs for it (from transformers when `python`, else the golden file), and the model padless
// imports back: what transformers saved when Python ran, else padless's own export.
struct Exported {
  models::EncoderClassifier source{nullptr};
  Sequences ids;
  Reference ref;
  absl::StatusOr<ImportedModel> imported;
};

Exported ExportWithReference(const Shape& shape, uint64_t seed, bool python) {
  Exported e;
  e.source = RandomModel(shape.config, seed);
  const std::string written = TempDir(std::string(shape.name) + "_padless");
  const absl::Status s = ExportHuggingFace(e.source, {"a", "b", "c"}, written);
  EXPECT_TRUE(s.ok()) << s;
  e.ids = FixedIds(shape.config.vocab_size());
  const std::string resaved = TempDir(std::string(shape.name) + "_transformers");
  e.ref = LoadReference(shape.name, written, e.ids, shape.config.hidden(), false, resaved, python);
  e.imported = ImportHuggingFace(python ? resaved : written);
  return e;
}

TEST(HfParityTest, RandomModelsMatchTransformers) {
  for (const Shape& shape : RandomShapes()) {
    SCOPED_TRACE(shape.name);
    Exported e = ExportWithReference(shape, 20261201, HavePython());
    ASSERT_TRUE(e.imported.ok()) << e.imported.status();
    EXPECT_TRUE(e.imported->head_loaded);
    EXPECT_EQ(e.imported->hf.labels, (std::vector<std::string>{"a", "b", "c"}));
    EXPECT_EQ(e.imported->hf.encoder.ToJson(), shape.config.ToJson());
    ExpectParity(e.imported->model, e.ids, e.ref, /*base=*/false);
  }
}

// The RoBERTa and DistilBERT shapes, and a BERT one of the same size, pruned: layer 0 loses heads 1
// and 3, layer 2 three of four; the FFNs keep 80, 112 and 48 of their 128 neurons (widths that
// differ per layer: the full-width form holds them in one intermediate_size).
std::vector<Shape> PrunedShapes() {
  const std::vector<Shape> shapes = RandomShapes();
  const models::EncoderConfig bert =
      models::EncoderConfig(shapes[1].config).type_vocab_size(2).position_offset(0).max_positions(64);
  std::vector<Shape> out;
  for (const Shape& s : {Shape{"pruned_bert", bert}, Shape{"pruned_roberta", shapes[1].config},
                         Shape{"pruned_distilbert", shapes[2].config}}) {
    out.push_back({s.name, models::EncoderConfig(s.config)
                               .pruned_heads({{1, 3}, {}, {0, 1, 2}})
                               .layer_ffn({80, 112, 48})});
  }
  return out;
}

// transformers (AutoModelForSequenceClassification) loads padless's pruned export with every
// weight and gives the pruned padless model's logits and probabilities (what `padless predict`
// prints) within 1e-4; padless imports transformers' own save_pretrained copy of it as the pruned
// model it was (its config, pruning record included) with the same hidden states and logits.
TEST(HfParityTest, PrunedExportsMatchTransformers) {
  for (const Shape& shape : PrunedShapes()) {
    SCOPED_TRACE(shape.name);
    Exported e = ExportWithReference(shape, 20270127, HavePython());
    ASSERT_TRUE(e.imported.ok()) << e.imported.status();
    EXPECT_EQ(e.imported->hf.encoder.ToJson(), shape.config.ToJson());
    ExpectParity(e.imported->model, e.ids, e.ref, /*base=*/false);
    at::NoGradGuard no_grad;
    const at::Tensor logits = e.source->forward(MakeVarlen(e.ids));
    const at::Tensor probabilities = at::softmax(logits, -1);
    ASSERT_EQ(e.ref.second.size(), e.ids.tokens.size());
    for (size_t i = 0; i < e.ids.tokens.size(); ++i) {
      EXPECT_LT(RelativeError(logits[i], e.ref.second[i]), 1e-4) << i;
      const at::Tensor want = at::softmax(e.ref.second[i], -1);
      EXPECT_LT((probabilities[i] - want).abs().max().item<double>(), 1e-4) << i;
    }
  }
}

// The real all-MiniLM-L6-v2 (BertModel: no classifier; compared on hidden states and the pooler
// output). Its directory: PADLESS_MINILM_DIR, else the unzipped PyPI package scripts put in
// /tmp/padless_minilm (scripts/fetch_minilm.sh).
TEST(HfParityTest, MiniLmMatchesTransformers) {
  const char* env = std::getenv("PADLESS_MINILM_DIR");
  const std::string dir = env != nullptr ? env : "/tmp/padless_minilm";
  struct stat st {};
  if (::stat((dir + "/model.safetensors").c_str(), &st) != 0) {
    GTEST_SKIP() << dir << " has no model.safetensors (run scripts/fetch_minilm.sh)";
  }
  absl::StatusOr<ImportedModel> imported = ImportHuggingFace(dir, 2);
  ASSERT_TRUE(imported.ok()) << imported.status();
  EXPECT_FALSE(imported->head_loaded);
  EXPECT_EQ(imported->hf.encoder.layers(), 6);
  EXPECT_EQ(imported->hf.encoder.hidden(), 384);
  const Sequences s = FixedIds(imported->hf.encoder.vocab_size());
  const Reference ref = LoadReference("minilm", dir, s, 384, /*base=*/true, "");
  ExpectParity(imported->model, s, ref, /*base=*/true);
}

// Saves `model` with `tokenizer` (labels neg/pos) as a padless model directory, runs `padless
// export-hf` on it into *out, and checks the export: padless imports it with identical logits and
// the same encoder config, and transformers (when present) gives the same logits within 1e-4.
void ExportAndCheckLogits(models::EncoderClassifier& model, const tokenize::Tokenizer& tokenizer,
                          const std::string& name, std::string* out) {
  absl::StatusOr<corpus::LabelMap> labels = corpus::LabelMap::FromNames({"neg", "pos"});
  ASSERT_TRUE(labels.ok());
  const std::string dir = TempDir(name + "_padless");
  *out = TempDir(name + "_hf");
  ASSERT_TRUE(SaveModelDir(dir, model, tokenizer, *labels).ok());
  const std::string cmd =
      absl::StrCat(PADLESS_CLI_PATH, " export-hf --model ", dir, " --out ", *out);
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  absl::StatusOr<ImportedModel> back = ImportHuggingFace(*out);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->hf.labels, labels->names());
  EXPECT_EQ(back->hf.encoder.ToJson(), model->config().ToJson());
  const Sequences s = FixedIds(model->config().vocab_size());
  at::NoGradGuard no_grad;
  const at::Tensor want = model->forward(MakeVarlen(s));
  EXPECT_TRUE(back->model->forward(MakeVarlen(s)).equal(want));
  if (!HavePython()) return;
  const Reference ref = LoadReference(name, *out, s, model->config().hidden(), false, "");
  for (size_t i = 0; i < s.tokens.size(); ++i) {
    EXPECT_LT(RelativeError(want[i], ref.second[i]), 1e-4) << i;
  }
}

// `padless export-hf` on a padless model directory whose encoder came from a Hugging Face
// checkpoint (a BERT pooler head) and a padless SentencePiece tokenizer.
TEST(HfParityTest, ExportHfRoundTrip) {
  const models::EncoderConfig config = models::EncoderConfig(RandomShapes()[0].config)
                                   .hidden(32)
                                   .heads(4)
                                   .ffn(64)
                                   .vocab_size(320)
                                   .num_labels(2);
  models::EncoderClassifier model = RandomModel(config, 7);
  std::vector<std::string> sentences;
  std::ifstream text(std::string(PADLESS_SOURCE_DIR) + "/tests/fuzz/data/tokenizer_train.txt");
  for (std::string line; std::getline(text, line);) sentences.push_back(line);
  tokenize::TrainOptions options;
  options.vocab_size = 300;
  options.num_threads = 1;
  absl::StatusOr<tokenize::Tokenizer> tokenizer =
      tokenize::Tokenizer::TrainFromSentences(sentences, options);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  std::string out;
  ASSERT_NO_FATAL_FAILURE(ExportAndCheckLogits(model, *tokenizer, "export_round_trip", &out));
}

// A RoBERTa-shaped model with a byte-level BPE tokenizer.json (RoBERTa's tokenizer family); the
// exported tokenizer gives the same ids as the original.
TEST(HfParityTest, ExportHfRoundTripRobertaWithByteLevelBpe) {
  const std::string bpe =
      std::string(PADLESS_SOURCE_DIR) + "/tests/tokenize/data/bytelevel_bpe/tokenizer.json";
  absl::StatusOr<tokenize::Tokenizer> tokenizer = tokenize::Tokenizer::Load(bpe);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  const models::EncoderConfig config =
      models::EncoderConfig(RandomShapes()[1].config).vocab_size(tokenizer->vocab_size()).num_labels(2);
  ASSERT_EQ(config.position_offset(), 2);  // the RoBERTa shape
  models::EncoderClassifier model = RandomModel(config, 11);
  std::string out;
  ASSERT_NO_FATAL_FAILURE(
      ExportAndCheckLogits(model, *tokenizer, "export_round_trip_roberta", &out));
  absl::StatusOr<tokenize::Tokenizer> exported = tokenize::Tokenizer::Load(out);
  ASSERT_TRUE(exported.ok()) << exported.status();
  for (const char* text : {"a gripping , funny film", "  It's 42 degrees\tout\u00e9!", ""}) {
    absl::StatusOr<tokenize::Encoding> want = tokenizer->Encode(text, tokenize::EncodeOptions());
    absl::StatusOr<tokenize::Encoding> got = exported->Encode(text, tokenize::EncodeOptions());
    ASSERT_TRUE(want.ok() && got.ok());
    EXPECT_EQ(got->ids, want->ids) << text;
  }
}

}  // namespace
}  // namespace padless::model_files
