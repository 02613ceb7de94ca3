// Fuzzes the model-directory loader (models/model_io.h): the encoder config JSON, the label map
// JSON, and the weights file, which the harness takes as the valid safetensors file of a tiny
// model with a fuzzer-chosen truncation and byte patch (so the fuzzer explores corruptions of a
// real file instead of guessing one). The set-up that does not depend on the input (the tiny
// model to load into, the tokenizer file of the model directory) is done once. Small valid configs
// go through LoadModelDir end to end. Invariants: errors name the file; an accepted config or label
// map round-trips; weights either load exactly or fail with a status (never an exception or crash);
// a loaded directory agrees with its config and label map.
// The same two JSON inputs also go through the sentence-transformers reader
// (model_files/sentence_transformers.h): as modules.json with the labels bytes as
// 1_Pooling/config.json, and as 1_Pooling/config.json (beside a valid modules.json) with the labels
// bytes as config_sentence_transformers.json. Invariants: a status naming a file of the directory,
// or a description that holds together.
#include <ATen/Parallel.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "fuzz_util.h"
#include "padless/corpus/label_map.h"
#include "padless/models/encoder.h"
#include "padless/models/encoder_config.h"
#include "padless/model_files/model_io.h"
#include "padless/model_files/sentence_transformers.h"
#include "padless/tokenize/tokenizer.h"

namespace padless::model_files {
namespace {

using fuzz::ReadWholeFile;
using fuzz::ScratchDir;
using fuzz::WriteScratchFile;

// The model whose weights the harness corrupts, and its archive's bytes.
models::EncoderConfig TinyConfig() {
  return models::EncoderConfig()
      .vocab_size(320)
      .hidden(8)
      .layers(1)
      .heads(2)
      .ffn(16)
      .max_positions(16)
      .num_labels(2)
      .dropout(0)
      .attention_dropout(0);
}

struct Fixture {
  models::EncoderClassifier model{nullptr};
  models::EncoderClassifier target{nullptr};  // LoadWeights' destination, reused by every input
  std::string weights;
  std::string tokenizer_path;
};
Fixture* fixture = nullptr;

void CheckConfig(const std::string& json, const std::string& origin) {
  absl::StatusOr<models::EncoderConfig> c = models::EncoderConfig::FromJson(json, origin);
  if (!c.ok()) {
    FUZZ_CHECK(absl::StartsWith(c.status().message(), origin), std::string(c.status().message()));
    return;
  }
  FUZZ_CHECK(c->Validate().ok(), "FromJson accepted an invalid config");
  const std::string again = c->ToJson();
  absl::StatusOr<models::EncoderConfig> round = models::EncoderConfig::FromJson(again, origin);
  FUZZ_CHECK(round.ok() && round->ToJson() == again, "config JSON does not round-trip");
}

void CheckLabels(const std::string& path) {
  absl::StatusOr<corpus::LabelMap> labels = corpus::LabelMap::Load(path);
  if (!labels.ok()) {
    FUZZ_CHECK(absl::StrContains(labels.status().message(), path),
               std::string(labels.status().message()));
    return;
  }
  for (int64_t i = 0; i < labels->size(); ++i) {
    FUZZ_CHECK(!labels->Name(i).empty(), "empty label name");
    absl::StatusOr<int64_t> id = labels->Id(labels->Name(i));
    FUZZ_CHECK(id.ok() && *id == i, absl::StrCat("label ", i, " maps to another id"));
  }
  const std::string copy = ScratchDir() + "/labels_copy.json";
  FUZZ_CHECK(labels->Save(copy).ok(), "label map save");
  absl::StatusOr<corpus::LabelMap> round = corpus::LabelMap::Load(copy);
  FUZZ_CHECK(round.ok() && round->names() == labels->names(), "label map does not round-trip");
}

void CheckWeights(const std::string& path, bool intact) {
  models::EncoderClassifier& target = fixture->target;
  absl::Status s = LoadWeights(*target, path);
  if (intact) FUZZ_CHECK(s.ok(), absl::StrCat("intact weights rejected: ", s.message()));
  if (!s.ok()) {
    FUZZ_CHECK(absl::StrContains(s.message(), path), std::string(s.message()));
    return;
  }
  // Whatever loaded has the model's shapes (LoadWeights checks them); an intact archive loads
  // the saved values exactly.
  if (intact) {
    const auto want = fixture->model->named_parameters();
    for (const auto& p : target->named_parameters()) {
      FUZZ_CHECK(p.value().equal(want[p.key()]), absl::StrCat("parameter ", p.key(), " differs"));
    }
  }
}

void CheckModelDir(const std::string& config_json, const std::string& labels_json,
                   const std::string& weights) {
  absl::StatusOr<models::EncoderConfig> c = models::EncoderConfig::FromJson(config_json);
  // Only small models: a config may legitimately ask for gigabytes, which is not a loader bug.
  if (!c.ok() || c->vocab_size() > 4096 || c->hidden() > 64 || c->layers() > 2 || c->ffn() > 256 ||
      c->max_positions() > 512 || c->num_labels() > 64 || c->type_vocab_size() > 8) {
    return;
  }
  const std::string dir = ScratchDir() + "/model";
  WriteScratchFile("model/" + std::string(kConfigFile), config_json);
  WriteScratchFile("model/" + std::string(kLabelsFile), labels_json);
  WriteScratchFile("model/" + std::string(kWeightsFile), weights);
  absl::StatusOr<LoadedModel> loaded = LoadModelDir(dir, c10::Device(c10::kCPU));
  if (!loaded.ok()) {
    FUZZ_CHECK(absl::StrContains(loaded.status().message(), dir),
               std::string(loaded.status().message()));
    return;
  }
  FUZZ_CHECK(loaded->config.ToJson() == c->ToJson(), "loaded config differs");
  FUZZ_CHECK(loaded->labels.size() == c->num_labels(), "label count differs from num_labels");
  FUZZ_CHECK(loaded->tokenizer.vocab_size() <= c->vocab_size(), "vocabulary exceeds the model");
  FUZZ_CHECK(!loaded->model->is_training(), "loaded model is not in eval mode");
}

// all-MiniLM-L6-v2's pipeline, for the inputs that stand in for its pooling config.
constexpr char kValidModules[] =
    R"([{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling",
         "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize",
         "type": "sentence_transformers.models.Normalize"}])";

// `dir` (under ScratchDir()) is a sentence-transformers directory with `modules`, `pooling` as
// 1_Pooling/config.json and `settings` as config_sentence_transformers.json.
void CheckSentenceTransformerDir(const std::string& dir, const std::string& modules,
                                 const std::string& pooling, const std::string& settings) {
  WriteScratchFile(dir + "/modules.json", modules);
  WriteScratchFile(dir + "/1_Pooling/config.json", pooling);
  WriteScratchFile(dir + "/config_sentence_transformers.json", settings);
  const std::string path = ScratchDir() + "/" + dir;
  absl::StatusOr<SentenceTransformerSpec> spec = ReadSentenceTransformerDir(path);
  if (!spec.ok()) {
    FUZZ_CHECK(absl::StrContains(spec.status().message(), path),
               std::string(spec.status().message()));
    return;
  }
  FUZZ_CHECK(spec->word_embedding_dimension > 0, "accepted a pooling width of 0");
  int64_t width = spec->word_embedding_dimension;
  for (const DenseLayer& layer : spec->dense) {
    FUZZ_CHECK(layer.in_features == width, "Dense widths do not chain");
    FUZZ_CHECK(layer.out_features > 0 && !layer.weights_path.empty(), "bad Dense layer");
    width = layer.out_features;
  }
  FUZZ_CHECK(spec->embedding_dimension() == width, "embedding_dimension differs from the stack");
  FUZZ_CHECK(spec->default_prompt_name.empty() || spec->prompts.count(spec->default_prompt_name),
             "default prompt is not a prompt");
  FUZZ_CHECK(ParsePoolingMode(PoolingModeName(spec->pooling)).ok(), "pooling has no name");
}

}  // namespace
}  // namespace padless::model_files

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  using namespace padless::model_files;  // NOLINT: a fuzz entry point
  at::set_num_threads(1);
  fixture = new Fixture;
  fixture->model = padless::models::EncoderClassifier(TinyConfig());
  fixture->target = padless::models::EncoderClassifier(TinyConfig());
  const std::string weights = padless::fuzz::ScratchDir() + "/tiny.safetensors";
  absl::Status s = SaveWeights(*fixture->model, weights);
  FUZZ_CHECK(s.ok(), std::string(s.message()));
  fixture->weights = ReadWholeFile(weights);
  ::mkdir((padless::fuzz::ScratchDir() + "/model").c_str(), 0700);
  for (const char* dir :
       {"st_modules", "st_modules/1_Pooling", "st_pooling", "st_pooling/1_Pooling"}) {
    ::mkdir((padless::fuzz::ScratchDir() + "/" + dir).c_str(), 0700);
  }
  // A tokenizer whose vocabulary (300) fits TinyConfig's 320 ids, for the model directory.
  std::ifstream text(PADLESS_FUZZ_DATA_DIR "/tokenizer_train.txt");
  std::vector<std::string> sentences;
  for (std::string line; std::getline(text, line);) sentences.push_back(line);
  padless::tokenize::TrainOptions options;
  options.vocab_size = 300;
  options.num_threads = 1;
  absl::StatusOr<padless::tokenize::Tokenizer> tok =
      padless::tokenize::Tokenizer::TrainFromSentences(sentences, options);
  FUZZ_CHECK(tok.ok(), std::string(tok.status().message()));
  fixture->tokenizer_path = padless::fuzz::ScratchDir() + "/tiny.model";
  FUZZ_CHECK(tok->Save(fixture->tokenizer_path).ok(), "tokenizer save");
  padless::fuzz::WriteScratchFile("model/" + std::string("tokenizer.model"),
                                  ReadWholeFile(fixture->tokenizer_path));
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace padless::model_files;  // NOLINT: a fuzz entry point
  padless::fuzz::FuzzInput in(data, size);
  // Layout: config length (2 bytes), config JSON, labels length (2 bytes), labels JSON, then the
  // weights patch: truncation point, patch offset (3 bytes each), patch bytes (the rest).
  const std::string config(in.Take(in.Bits(2)));
  const std::string labels(in.Take(in.Bits(2)));
  const std::string& valid = fixture->weights;
  std::string weights = valid;
  const size_t keep = static_cast<size_t>(in.Bits(3));
  if (keep < weights.size()) weights.resize(keep);
  const size_t at = weights.empty() ? 0 : static_cast<size_t>(in.Bits(3)) % weights.size();
  const absl::string_view patch = in.Rest();
  for (size_t i = 0; i < patch.size() && at + i < weights.size(); ++i) weights[at + i] = patch[i];

  CheckConfig(config, "fuzz/config.json");
  CheckLabels(padless::fuzz::WriteScratchFile("labels.json", labels));
  CheckWeights(padless::fuzz::WriteScratchFile(kWeightsFile, weights), weights == valid);
  CheckModelDir(config, labels, weights);
  CheckSentenceTransformerDir("st_modules", config, labels, "{}");
  CheckSentenceTransformerDir("st_pooling", kValidModules, config, labels);
  return 0;
}
