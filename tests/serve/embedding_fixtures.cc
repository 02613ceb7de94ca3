#include "embedding_fixtures.h"

#include <ATen/ATen.h>

#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "padless/base/atomic_file_writer.h"
#include "padless/base/directory.h"
#include "padless/base/file_kind.h"
#include "padless/base/read_file.h"
#include "padless/model_files/hf_weights.h"
#include "padless/model_files/safetensors.h"
#include "padless/models/encoder.h"
#include "padless/tokenize/tokenizer.h"

namespace padless::serve::testing {
namespace {

using nlohmann::json;

// The seeds of the two encoders (the sentence-transformers directories share one).
constexpr uint64_t kEmbeddingEncoderSeed = 20260101;
constexpr uint64_t kCrossEncoderSeed = 20260102;
constexpr uint64_t kDenseSeed = 20260103;

constexpr uint64_t kFnvOffset = 0xcbf29ce484222325ull;
constexpr uint64_t kFnvPrime = 0x100000001b3ull;

uint64_t Fnv1a(absl::string_view bytes, uint64_t hash = kFnvOffset) {
  for (const unsigned char c : bytes) {
    hash ^= c;
    hash *= kFnvPrime;
  }
  return hash;
}

uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Values center + scale * u, u uniform in [-1, 1) with 24 random bits, from a generator seeded by
// `seed` and the tensor's name. Not torch's generator: its normal_ takes a vectorized path whose
// last bits depend on the CPU's instruction set, and the goldens need the same bytes everywhere.
// Integer arithmetic and one rounding to float32 are the same on every machine.
at::Tensor SeededUniform(at::IntArrayRef shape, const std::string& name, uint64_t seed,
                         double center, double scale) {
  uint64_t state = Fnv1a(name, Fnv1a(std::to_string(seed)));
  const at::Tensor out = at::empty(shape, at::kFloat);
  float* values = out.data_ptr<float>();
  for (int64_t i = 0; i < out.numel(); ++i) {
    const double unit = static_cast<double>(SplitMix64(state) >> 40) * 0x1p-23 - 1.0;
    values[i] = static_cast<float>(center + scale * unit);
  }
  return out;
}

// BERT-like magnitudes: LayerNorm gains around 1, small biases, wider embeddings, and weights of
// standard deviation ~0.14, enough for attention to favour some tokens.
at::Tensor SeededParameter(at::IntArrayRef shape, const std::string& name, uint64_t seed) {
  if (absl::EndsWith(name, "norm_weight")) return SeededUniform(shape, name, seed, 1.0, 0.125);
  if (absl::EndsWith(name, "bias")) return SeededUniform(shape, name, seed, 0.0, 0.125);
  if (absl::EndsWith(name, "embeddings")) return SeededUniform(shape, name, seed, 0.0, 0.5);
  return SeededUniform(shape, name, seed, 0.0, 0.25);
}

models::EncoderClassifier SeededEncoder(const models::EncoderConfig& config, uint64_t seed) {
  models::EncoderClassifier model(config);
  at::NoGradGuard no_grad;
  for (auto& p : model->named_parameters()) {
    p.value().copy_(SeededParameter(p.value().sizes(), p.key(), seed));
  }
  model->eval();
  return model;
}

std::vector<std::string> VocabularyPieces() {
  std::vector<std::string> pieces = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
  for (const char* p : {".", ",", "!", "?", "'", "-", ":", ";", "(", ")", "\"", "&", "$", "%"}) {
    pieces.push_back(p);
  }
  for (char c = '0'; c <= '9'; ++c) pieces.push_back(std::string(1, c));
  for (char c = 'a'; c <= 'z'; ++c) pieces.push_back(std::string(1, c));
  for (char c = 'a'; c <= 'z'; ++c) pieces.push_back(absl::StrCat("##", std::string(1, c)));
  for (const char* p : {"##ed", "##ing", "##ly", "##er", "##est", "##able", "##ness"}) {
    pieces.push_back(p);
  }
  // Whole words (single letters are pieces already).
  for (const char* w :
       {"the",     "an",       "and",     "or",       "but",      "is",      "was",      "are",
        "were",    "be",       "it",      "this",     "that",     "of",      "to",       "in",
        "on",      "at",       "for",     "with",     "as",       "by",      "from",     "not",
        "no",      "very",     "so",      "too",      "all",      "one",     "two",      "film",
        "movie",   "story",    "plot",    "actor",    "actors",   "scene",   "music",    "good",
        "great",   "bad",      "awful",   "boring",   "funny",    "long",    "short",    "slow",
        "fast",    "first",    "last",    "best",     "worst",    "love",    "hate",     "like",
        "watch",   "see",      "time",    "people",   "life",     "world",   "hello",    "cafe",
        "naive",   "resume",   "query",   "passage",  "what",     "who",     "how",      "why",
        "where",   "when",     "capital", "city",     "country",  "largest", "paris",    "france",
        "europe",  "berlin",   "germany", "river",    "mountain", "cat",     "dog",      "sat",
        "mat",     "sun",      "rain",    "weather",  "today",    "book",    "read",     "write",
        "code",    "model",    "text",    "vector",   "search",   "machine", "learning", "deep",
        "network", "question", "answer",  "document", "you",      "we",      "they",     "he",
        "she",     "his",      "her",     "its",      "my",       "your",    "has",      "have",
        "had",     "do",       "does",    "did",      "can",      "will",    "un",       "believ",
        "there",   "here",     "some",    "many",     "more",     "most"}) {
    pieces.push_back(w);
  }
  for (const char* p : {"中", "文", "日", "本", "语"}) pieces.push_back(p);
  return pieces;
}

json SpecialToken(const char* id, int type) {
  return {{"SpecialToken", {{"id", id}, {"type_id", type}}}};
}
json SequencePart(const char* id, int type) {
  return {{"Sequence", {{"id", id}, {"type_id", type}}}};
}

// The dump of `j` plus a newline, written atomically.
absl::Status WriteJson(const std::string& path, const json& j) {
  return base::WriteFileAtomically(path, j.dump(2) + "\n");
}

absl::StatusOr<json> ReadJson(const std::string& path) {
  absl::StatusOr<std::string> text = base::ReadFile(path);
  if (!text.ok()) return text.status();
  json j = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return absl::InvalidArgumentError(absl::StrCat(path, ": not JSON"));
  return j;
}

// A seeded encoder with `labels` exported in Hugging Face's layout, and the tokenizer's files with
// model_max_length at the position limit (transformers would otherwise let 512 tokens through).
absl::Status ExportEncoder(const std::string& dir, uint64_t seed,
                           const std::vector<std::string>& labels) {
  absl::StatusOr<tokenize::Tokenizer> tokenizer =
      tokenize::Tokenizer::FromSerialized(EmbeddingTokenizerJson());
  if (!tokenizer.ok()) return tokenizer.status();
  models::EncoderClassifier model = SeededEncoder(
      EmbeddingEncoderConfig(tokenizer->vocab_size(), static_cast<int64_t>(labels.size())), seed);
  if (absl::Status s = model_files::ExportHuggingFace(model, labels, dir); !s.ok()) return s;
  if (absl::Status s = tokenizer->ExportHuggingFace(dir); !s.ok()) return s;
  const std::string config_path = base::JoinPath(dir, "tokenizer_config.json");
  absl::StatusOr<json> config = ReadJson(config_path);
  if (!config.ok()) return config.status();
  (*config)["model_max_length"] = kEmbeddingMaxPositions;
  return WriteJson(config_path, *config);
}

// What a sentence-transformers checkpoint holds: BertModel's tensor names (no "bert." prefix),
// the pooler but no classifier, and a config.json without labels.
absl::Status MakeBareEncoder(const std::string& dir) {
  const std::string weights = base::JoinPath(dir, model_files::kHfWeightsFile);
  std::vector<std::pair<std::string, at::Tensor>> kept;
  {
    absl::StatusOr<model_files::SafetensorsFile> f = model_files::SafetensorsFile::Open(weights);
    if (!f.ok()) return f.status();
    for (const auto& entry : f->entries()) {
      const std::string& name = entry.first;
      if (absl::StartsWith(name, "classifier.")) continue;
      absl::StatusOr<at::Tensor> t = f->Tensor(name, /*copy=*/true);
      if (!t.ok()) return t.status();
      kept.emplace_back(absl::StartsWith(name, "bert.") ? name.substr(5) : name, *t);
    }
  }
  if (absl::Status s = model_files::WriteSafetensors(weights, kept); !s.ok()) return s;
  const std::string config_path = base::JoinPath(dir, "config.json");
  absl::StatusOr<json> config = ReadJson(config_path);
  if (!config.ok()) return config.status();
  (*config)["architectures"] = {"BertModel"};
  for (const char* field : {"id2label", "label2id", "num_labels"}) config->erase(field);
  return WriteJson(config_path, *config);
}

// 1_Pooling/config.json as sentence-transformers 2-5 write it (the Hub's models hold this form).
json PoolingConfig(models::SentencePooling mode) {
  const std::pair<const char*, models::SentencePooling> flags[] = {
      {"pooling_mode_cls_token", models::SentencePooling::kCls},
      {"pooling_mode_mean_tokens", models::SentencePooling::kMean},
      {"pooling_mode_max_tokens", models::SentencePooling::kMax},
      {"pooling_mode_mean_sqrt_len_tokens", models::SentencePooling::kMeanSqrtLen},
      {"pooling_mode_weightedmean_tokens", models::SentencePooling::kWeightedMean},
      {"pooling_mode_lasttoken", models::SentencePooling::kLastToken},
  };
  json config = {{"word_embedding_dimension", kEmbeddingHidden}};
  for (const auto& [field, flag_mode] : flags) config[field] = flag_mode == mode;
  config["include_prompt"] = true;
  return config;
}

json ModulesJson(bool dense_and_normalize) {
  const auto module = [](int idx, const char* path, const char* type) {
    return json{{"idx", idx},
                {"name", std::to_string(idx)},
                {"path", path},
                {"type", absl::StrCat("sentence_transformers.models.", type)}};
  };
  json modules = {module(0, "", "Transformer"), module(1, "1_Pooling", "Pooling")};
  if (dense_and_normalize) {
    modules.push_back(module(2, "2_Dense", "Dense"));
    modules.push_back(module(3, "3_Normalize", "Normalize"));
  }
  return modules;
}

// 2_Dense: config.json and model.safetensors (linear.weight [out, in], linear.bias [out]), as
// sentence_transformers.models.Dense saves them.
absl::Status WriteDenseModule(const std::string& module_dir) {
  if (absl::Status s = base::MakeDirectories(module_dir); !s.ok()) return s;
  const json config = {{"in_features", kEmbeddingHidden},
                       {"out_features", kDenseOutFeatures},
                       {"bias", true},
                       {"activation_function", "torch.nn.modules.activation.Tanh"}};
  if (absl::Status s = WriteJson(base::JoinPath(module_dir, "config.json"), config); !s.ok()) {
    return s;
  }
  return model_files::WriteSafetensors(
      base::JoinPath(module_dir, "model.safetensors"),
      {{"linear.weight",
        SeededParameter({kDenseOutFeatures, kEmbeddingHidden}, "linear.weight", kDenseSeed)},
       {"linear.bias", SeededParameter({kDenseOutFeatures}, "linear.bias", kDenseSeed)}});
}

absl::Status WriteSentenceTransformerFiles(const std::string& dir, const EmbeddingModelSpec& spec) {
  const json settings = {{"model_type", "SentenceTransformer"},
                         {"prompts", {{kQueryPromptName, kQueryPrompt}, {"passage", "passage: "}}},
                         {"default_prompt_name", nullptr},
                         {"similarity_fn_name", "cosine"}};
  const std::pair<std::string, json> files[] = {
      {"modules.json", ModulesJson(spec.dense_and_normalize)},
      {"sentence_bert_config.json", {{"max_seq_length", kMaxSeqLength}, {"do_lower_case", false}}},
      {"config_sentence_transformers.json", settings},
      {"1_Pooling/config.json", PoolingConfig(spec.pooling)},
  };
  if (absl::Status s = base::MakeDirectories(base::JoinPath(dir, "1_Pooling")); !s.ok()) return s;
  for (const auto& [name, content] : files) {
    if (absl::Status s = WriteJson(base::JoinPath(dir, name), content); !s.ok()) return s;
  }
  if (!spec.dense_and_normalize) return absl::OkStatus();
  if (absl::Status s = WriteDenseModule(base::JoinPath(dir, "2_Dense")); !s.ok()) return s;
  // Normalize has no files; sentence-transformers still saves its (empty) directory.
  return base::MakeDirectories(base::JoinPath(dir, "3_Normalize"));
}

// The safetensors header of `bytes` (8-byte little-endian length, then JSON).
absl::StatusOr<json> SafetensorsHeader(const std::string& bytes, const std::string& path,
                                       uint64_t* data_start) {
  uint64_t length = 0;
  if (bytes.size() < 8) return absl::InvalidArgumentError(absl::StrCat(path, ": too short"));
  for (int i = 7; i >= 0; --i) length = (length << 8) | static_cast<unsigned char>(bytes[i]);
  if (length > bytes.size() - 8) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": header longer than the file"));
  }
  json header = json::parse(bytes.substr(8, length), nullptr, /*allow_exceptions=*/false);
  if (!header.is_object()) return absl::InvalidArgumentError(absl::StrCat(path, ": bad header"));
  *data_start = 8 + length;
  return header;
}

absl::Status HashSafetensors(const std::string& path, const std::string& name, uint64_t* hash) {
  absl::StatusOr<std::string> bytes = base::ReadFile(path);
  if (!bytes.ok()) return bytes.status();
  uint64_t data_start = 0;
  absl::StatusOr<json> header = SafetensorsHeader(*bytes, path, &data_start);
  if (!header.ok()) return header.status();
  const std::map<std::string, json> tensors = header->get<std::map<std::string, json>>();
  *hash = Fnv1a(name, *hash);
  for (const auto& [tensor, entry] : tensors) {
    if (tensor == "__metadata__") continue;
    const std::vector<int64_t> shape = entry.at("shape").get<std::vector<int64_t>>();
    const std::vector<uint64_t> offsets = entry.at("data_offsets").get<std::vector<uint64_t>>();
    if (offsets.size() != 2 || offsets[0] > offsets[1] || data_start + offsets[1] > bytes->size()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": bad offsets of ", tensor));
    }
    *hash = Fnv1a(tensor, *hash);
    *hash = Fnv1a(entry.at("dtype").get<std::string>(), *hash);
    *hash = Fnv1a(absl::StrJoin(shape, ","), *hash);
    *hash = Fnv1a(
        absl::string_view(*bytes).substr(data_start + offsets[0], offsets[1] - offsets[0]), *hash);
  }
  return absl::OkStatus();
}

}  // namespace

std::vector<EmbeddingModelSpec> EmbeddingModelSpecs() {
  using models::SentencePooling;
  return {
      {"st_cls", SentencePooling::kCls},
      {"st_mean", SentencePooling::kMean},
      {"st_max", SentencePooling::kMax},
      {"st_weightedmean", SentencePooling::kWeightedMean},
      {"st_lasttoken", SentencePooling::kLastToken},
      {"st_mean_sqrt_len", SentencePooling::kMeanSqrtLen},
      {"st_mean_dense_normalize", SentencePooling::kMean, /*dense_and_normalize=*/true},
  };
}

models::EncoderConfig EmbeddingEncoderConfig(int64_t vocab, int64_t labels) {
  return models::EncoderConfig()
      .vocab_size(vocab)
      .hidden(kEmbeddingHidden)
      .layers(2)
      .heads(4)
      .ffn(128)
      .max_positions(kEmbeddingMaxPositions)
      .num_labels(labels)
      .dropout(0)
      .attention_dropout(0)
      .classifier_hidden(models::ClassifierHidden::kTanh);
}

std::string EmbeddingTokenizerJson() {
  const std::vector<std::string> pieces = VocabularyPieces();
  json vocab = json::object();
  for (size_t i = 0; i < pieces.size(); ++i) vocab[pieces[i]] = i;
  json added = json::array();
  for (int id = 0; id < 5; ++id) {
    added.push_back({{"id", id},
                     {"content", pieces[id]},
                     {"special", true},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", false}});
  }
  const json special_tokens = {{"[CLS]", {{"id", "[CLS]"}, {"ids", {2}}, {"tokens", {"[CLS]"}}}},
                               {"[SEP]", {{"id", "[SEP]"}, {"ids", {3}}, {"tokens", {"[SEP]"}}}}};
  const json tokenizer = {
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", added},
      {"normalizer",
       {{"type", "BertNormalizer"},
        {"clean_text", true},
        {"handle_chinese_chars", true},
        {"strip_accents", nullptr},
        {"lowercase", true}}},
      {"pre_tokenizer", {{"type", "BertPreTokenizer"}}},
      {"post_processor",
       {{"type", "TemplateProcessing"},
        {"single", {SpecialToken("[CLS]", 0), SequencePart("A", 0), SpecialToken("[SEP]", 0)}},
        {"pair",
         {SpecialToken("[CLS]", 0), SequencePart("A", 0), SpecialToken("[SEP]", 0),
          SequencePart("B", 1), SpecialToken("[SEP]", 1)}},
        {"special_tokens", special_tokens}}},
      {"decoder", {{"type", "WordPiece"}, {"prefix", "##"}, {"cleanup", true}}},
      {"model",
       {{"type", "WordPiece"},
        {"unk_token", "[UNK]"},
        {"continuing_subword_prefix", "##"},
        {"max_input_chars_per_word", 100},
        {"vocab", vocab}}},
  };
  return tokenizer.dump();
}

absl::Status WriteSentenceTransformerDir(const std::string& dir, const EmbeddingModelSpec& spec) {
  if (absl::Status s = ExportEncoder(dir, kEmbeddingEncoderSeed, {"LABEL_0"}); !s.ok()) return s;
  if (absl::Status s = MakeBareEncoder(dir); !s.ok()) return s;
  return WriteSentenceTransformerFiles(dir, spec);
}

absl::Status WriteCrossEncoderDir(const std::string& dir) {
  return ExportEncoder(dir, kCrossEncoderSeed, {"LABEL_0"});
}

absl::Status WriteEmbeddingModelDirs(const std::string& root) {
  if (absl::Status s = base::MakeDirectories(root); !s.ok()) return s;
  for (const EmbeddingModelSpec& spec : EmbeddingModelSpecs()) {
    absl::Status s = WriteSentenceTransformerDir(base::JoinPath(root, spec.name), spec);
    if (!s.ok()) return s;
  }
  return WriteCrossEncoderDir(base::JoinPath(root, kCrossEncoderName));
}

absl::StatusOr<std::string> WeightsChecksum(const std::string& dir) {
  uint64_t hash = kFnvOffset;
  for (const char* file : {"model.safetensors", "2_Dense/model.safetensors"}) {
    const std::string path = base::JoinPath(dir, file);
    if (base::KindOfPath(path) == base::FileKind::kMissing) continue;
    if (absl::Status s = HashSafetensors(path, file, &hash); !s.ok()) return s;
  }
  return absl::StrFormat("fnv1a64:%016x", hash);
}

}  // namespace padless::serve::testing
