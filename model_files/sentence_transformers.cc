#include "padless/model_files/sentence_transformers.h"

#include <nlohmann/json.hpp>

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "padless/base/enum_names.h"
#include "padless/base/file_kind.h"
#include "padless/base/read_file.h"

namespace padless::model_files {

namespace {

using nlohmann::json;

constexpr char kModulesFile[] = "modules.json";
constexpr char kSettingsFile[] = "config_sentence_transformers.json";
constexpr char kModuleConfigFile[] = "config.json";
constexpr char kSentenceBertConfigFile[] = "sentence_bert_config.json";

constexpr char kTokenizerConfigFile[] = "tokenizer_config.json";

// Module types are Python class paths: "sentence_transformers.models.Pooling" before version 6,
// "sentence_transformers.sentence_transformer.modules.pooling.Pooling" (and base.modules.*) since.
// The class name decides; the package must be sentence-transformers'.
constexpr char kTransformerType[] = "Transformer";
constexpr char kPoolingType[] = "Pooling";
constexpr char kDenseType[] = "Dense";
constexpr char kNormalizeType[] = "Normalize";

std::string ModuleClass(const std::string& type) {
  if (!absl::StartsWith(type, "sentence_transformers.")) return "";
  return type.substr(type.rfind('.') + 1);
}

// sentence-transformers 6's single `pooling_mode` field (its POOLING_MODES).
constexpr base::EnumName<PoolingMode> kPoolingModeField[] = {
    {"cls", PoolingMode::kCls},
    {"mean", PoolingMode::kMean},
    {"max", PoolingMode::kMax},
    {"mean_sqrt_len_tokens", PoolingMode::kMeanSqrtLen},
    {"weightedmean", PoolingMode::kWeightedMean},
    {"lasttoken", PoolingMode::kLastToken},
};

// The model's tokenizer limit, where sentence-transformers 6 keeps max_seq_length; Hugging Face
// writes a huge sentinel (1e30) for "none", which is ignored.
int64_t TokenizerMaxLength(const std::string& module_dir) {
  const std::string path = base::JoinPath(module_dir, kTokenizerConfigFile);
  if (base::KindOfPath(path) != base::FileKind::kRegular) return 0;
  absl::StatusOr<std::string> text = base::ReadFile(path);
  if (!text.ok()) return 0;
  const json j = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("model_max_length")) return 0;
  const json& v = j["model_max_length"];
  if (!v.is_number_integer() && !v.is_number_unsigned()) return 0;
  const int64_t n = v.get<int64_t>();
  return n > 0 && n <= (1 << 20) ? n : 0;
}

constexpr base::EnumName<PoolingMode> kPoolingNames[] = {
    {"cls", PoolingMode::kCls},
    {"mean", PoolingMode::kMean},
    {"max", PoolingMode::kMax},
    {"mean_sqrt_len", PoolingMode::kMeanSqrtLen},
    {"weightedmean", PoolingMode::kWeightedMean},
    {"last-token", PoolingMode::kLastToken},
    {"weighted-mean", PoolingMode::kWeightedMean},
    {"weighted_mean", PoolingMode::kWeightedMean},
    {"lasttoken", PoolingMode::kLastToken},
    {"last_token", PoolingMode::kLastToken},
};

// The pooling config's flags, with sentence-transformers' defaults for a missing one (Pooling's
// constructor turns mean on unless told otherwise).
struct PoolingFlag {
  const char* field;
  PoolingMode mode;
  bool default_on;
};
constexpr PoolingFlag kPoolingFlags[] = {
    {"pooling_mode_cls_token", PoolingMode::kCls, false},
    {"pooling_mode_mean_tokens", PoolingMode::kMean, true},
    {"pooling_mode_max_tokens", PoolingMode::kMax, false},
    {"pooling_mode_mean_sqrt_len_tokens", PoolingMode::kMeanSqrtLen, false},
    {"pooling_mode_weightedmean_tokens", PoolingMode::kWeightedMean, false},
    {"pooling_mode_lasttoken", PoolingMode::kLastToken, false},
};

// torch class paths sentence-transformers writes (older versions wrote the short paths too).
constexpr base::EnumName<DenseActivation> kActivationNames[] = {
    {"torch.nn.modules.linear.Identity", DenseActivation::kIdentity},
    {"torch.nn.modules.activation.Tanh", DenseActivation::kTanh},
    {"torch.nn.modules.activation.ReLU", DenseActivation::kRelu},
    {"torch.nn.modules.activation.GELU", DenseActivation::kGelu},
    {"torch.nn.modules.activation.Sigmoid", DenseActivation::kSigmoid},
    {"torch.nn.Identity", DenseActivation::kIdentity},
    {"torch.nn.Tanh", DenseActivation::kTanh},
    {"torch.nn.ReLU", DenseActivation::kRelu},
    {"torch.nn.GELU", DenseActivation::kGelu},
    {"torch.nn.Sigmoid", DenseActivation::kSigmoid},
};

constexpr base::EnumName<SimilarityFunction> kSimilarityNames[] = {
    {"cosine", SimilarityFunction::kCosine},       {"dot", SimilarityFunction::kDot},
    {"euclidean", SimilarityFunction::kEuclidean}, {"manhattan", SimilarityFunction::kManhattan},
    {"dot_product", SimilarityFunction::kDot},
};

absl::Status FieldError(const std::string& origin, absl::string_view field, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(origin, ": field '", field, "' ", why));
}

// The JSON object in `text`; InvalidArgument naming `origin` when it is not JSON or not an object.
absl::StatusOr<json> ParseObject(const std::string& text, const std::string& origin) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return absl::InvalidArgumentError(absl::StrCat(origin, ": not valid JSON"));
  if (!j.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(origin, ": must be a JSON object"));
  }
  return j;
}

// A file that modules.json promises: FailedPrecondition when it is missing or not a regular file
// (NotFound is kept for "no modules.json", the one answer callers fall back on).
absl::StatusOr<std::string> ReadPromisedFile(const std::string& path) {
  if (base::KindOfPath(path) == base::FileKind::kMissing) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": does not exist, but ", kModulesFile, " lists its module"));
  }
  absl::Status regular = base::CheckRegularFile(path, "module file");
  if (!regular.ok()) return absl::FailedPreconditionError(regular.message());
  return base::ReadFile(path);
}

absl::StatusOr<json> ReadPromisedObject(const std::string& path) {
  absl::StatusOr<std::string> text = ReadPromisedFile(path);
  if (!text.ok()) return text.status();
  return ParseObject(*text, path);
}

// Optional typed fields: `out` keeps its default when the field is absent.
absl::Status OptionalBool(const json& j, const std::string& origin, const char* field, bool* out) {
  if (!j.contains(field)) return absl::OkStatus();
  if (!j[field].is_boolean()) return FieldError(origin, field, "must be true or false");
  *out = j[field].get<bool>();
  return absl::OkStatus();
}

absl::Status PositiveInt(const json& j, const std::string& origin, const char* field, int64_t* out,
                         bool required = true) {
  if (!j.contains(field)) {
    return required ? FieldError(origin, field, "is missing") : absl::OkStatus();
  }
  if (!j[field].is_number_integer() || j[field].get<int64_t>() <= 0) {
    return FieldError(origin, field, "must be a positive integer");
  }
  *out = j[field].get<int64_t>();
  return absl::OkStatus();
}

// A string field, or "" when it is absent or null.
absl::Status OptionalString(const json& j, const std::string& origin, const char* field,
                            std::string* out) {
  if (!j.contains(field) || j[field].is_null()) return absl::OkStatus();
  if (!j[field].is_string()) return FieldError(origin, field, "must be a string");
  *out = j[field].get<std::string>();
  return absl::OkStatus();
}

struct Module {
  std::string name;
  std::string path;  // relative to the model directory; "" for the directory itself
  std::string type;
};

// A module path must stay inside the model directory: relative, no ".." component, no NUL (which
// would cut the name short when it reaches the file system).
absl::Status CheckModulePath(const std::string& origin, const std::string& path) {
  if (absl::StrContains(path, absl::string_view("\0", 1))) {
    return FieldError(origin, "path", "contains a NUL byte");
  }
  if (absl::StartsWith(path, "/")) {
    return FieldError(origin, "path", absl::StrCat("'", path, "' is absolute"));
  }
  for (absl::string_view part : absl::StrSplit(path, absl::ByAnyChar("/\\"))) {
    if (part == "..") {
      return FieldError(origin, "path",
                        absl::StrCat("'", path, "' leads out of the model directory"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Module> ParseModule(const json& entry, const std::string& origin, size_t index) {
  const std::string where = absl::StrCat(origin, ": module ", index);
  if (!entry.is_object())
    return absl::InvalidArgumentError(absl::StrCat(where, " is not an object"));
  if (entry.contains("idx") && !entry["idx"].is_number_integer()) {
    return FieldError(where, "idx", "must be an integer");
  }
  Module m;
  for (const auto& [field, out] : {std::pair<const char*, std::string*>{"name", &m.name},
                                   {"path", &m.path},
                                   {"type", &m.type}}) {
    if (!entry.contains(field)) return FieldError(where, field, "is missing");
    if (!entry[field].is_string()) return FieldError(where, field, "must be a string");
    *out = entry[field].get<std::string>();
  }
  absl::Status path = CheckModulePath(where, m.path);
  if (!path.ok()) return path;
  return m;
}

absl::StatusOr<std::vector<Module>> ReadModules(const std::string& dir) {
  const std::string path = base::JoinPath(dir, kModulesFile);
  if (base::KindOfPath(path) == base::FileKind::kMissing) {
    return absl::NotFoundError(
        absl::StrCat(path, ": does not exist (not a sentence-transformers model directory)"));
  }
  absl::StatusOr<std::string> text = base::ReadFile(path);
  if (!text.ok()) return text.status();
  const json j = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return absl::InvalidArgumentError(absl::StrCat(path, ": not valid JSON"));
  if (!j.is_array()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": must be a JSON array of modules"));
  }
  std::vector<Module> modules;
  for (size_t i = 0; i < j.size(); ++i) {
    absl::StatusOr<Module> m = ParseModule(j[i], path, i);
    if (!m.ok()) return m.status();
    modules.push_back(*std::move(m));
  }
  return modules;
}

// `pooling_mode`: one name, or a list of them (several concatenate their vectors).
absl::Status ReadPoolingModeField(const json& j, const std::string& origin,
                                  SentenceTransformerSpec& spec) {
  json modes = j["pooling_mode"];
  if (modes.is_array() && modes.size() == 1) modes = modes[0];
  if (modes.is_array()) {
    return absl::UnimplementedError(absl::StrCat(
        origin, ": several pooling modes at once (", modes.dump(),
        ") concatenate their vectors, which padless does not support; use exactly one"));
  }
  if (!modes.is_string()) return FieldError(origin, "pooling_mode", "must be a string");
  absl::StatusOr<PoolingMode> mode =
      base::ParseEnum("pooling_mode", modes.get<std::string>(), kPoolingModeField);
  if (!mode.ok())
    return absl::InvalidArgumentError(absl::StrCat(origin, ": ", mode.status().message()));
  spec.pooling = *mode;
  return absl::OkStatus();
}

absl::Status ReadPooling(const std::string& module_dir, SentenceTransformerSpec& spec) {
  const std::string origin = base::JoinPath(module_dir, kModuleConfigFile);
  absl::StatusOr<json> j = ReadPromisedObject(origin);
  if (!j.ok()) return j.status();
  // sentence-transformers 6 renamed word_embedding_dimension and folded the flags into one field.
  const char* width_field =
      j->contains("embedding_dimension") ? "embedding_dimension" : "word_embedding_dimension";
  absl::Status s = PositiveInt(*j, origin, width_field, &spec.word_embedding_dimension);
  if (!s.ok()) return s;
  s = OptionalBool(*j, origin, "include_prompt", &spec.include_prompt);
  if (!s.ok()) return s;
  if (j->contains("pooling_mode")) return ReadPoolingModeField(*j, origin, spec);
  std::vector<std::string> on;
  for (const PoolingFlag& flag : kPoolingFlags) {
    bool value = flag.default_on;
    s = OptionalBool(*j, origin, flag.field, &value);
    if (!s.ok()) return s;
    if (!value) continue;
    on.push_back(flag.field);
    spec.pooling = flag.mode;
  }
  if (on.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        origin, ": no pooling mode is on (set exactly one pooling_mode_* field to true)"));
  }
  if (on.size() > 1) {
    return absl::UnimplementedError(absl::StrCat(
        origin, ": several pooling modes at once (", absl::StrJoin(on, ", "),
        ") concatenate their vectors, which padless does not support; turn exactly one on"));
  }
  return absl::OkStatus();
}

// The Dense module's weights: safetensors when present (sentence-transformers 3 and later),
// else the pickle older versions wrote.
absl::StatusOr<std::string> DenseWeightsPath(const std::string& module_dir) {
  for (const char* name : {"model.safetensors", "pytorch_model.bin"}) {
    const std::string path = base::JoinPath(module_dir, name);
    if (base::KindOfPath(path) == base::FileKind::kRegular) return path;
  }
  return absl::FailedPreconditionError(absl::StrCat(
      module_dir, ": a Dense module without weights (no model.safetensors or pytorch_model.bin)"));
}

absl::StatusOr<DenseLayer> ReadDense(const std::string& module_dir, int64_t in_width) {
  const std::string origin = base::JoinPath(module_dir, kModuleConfigFile);
  absl::StatusOr<json> j = ReadPromisedObject(origin);
  if (!j.ok()) return j.status();
  DenseLayer layer;
  std::string activation;
  for (absl::Status s : {PositiveInt(*j, origin, "in_features", &layer.in_features),
                         PositiveInt(*j, origin, "out_features", &layer.out_features),
                         OptionalBool(*j, origin, "bias", &layer.bias),
                         OptionalString(*j, origin, "activation_function", &activation)}) {
    if (!s.ok()) return s;
  }
  bool residual = false;
  if (absl::Status s = OptionalBool(*j, origin, "use_residual", &residual); !s.ok()) return s;
  if (residual) {
    return absl::UnimplementedError(
        absl::StrCat(origin, ": a Dense module with use_residual is not supported"));
  }
  if (layer.in_features != in_width) {
    return FieldError(origin, "in_features",
                      absl::StrCat("is ", layer.in_features, " but the module before it returns ",
                                   in_width, " values"));
  }
  if (!activation.empty()) {
    absl::StatusOr<DenseActivation> act =
        base::ParseEnum("activation_function", activation, kActivationNames);
    if (!act.ok())
      return absl::UnimplementedError(absl::StrCat(origin, ": ", act.status().message()));
    layer.activation = *act;
  }
  absl::StatusOr<std::string> weights = DenseWeightsPath(module_dir);
  if (!weights.ok()) return weights.status();
  layer.weights_path = *std::move(weights);
  return layer;
}

// sentence_bert_config.json beside the Transformer's weights: optional, as is its max_seq_length.
absl::Status ReadTransformer(const std::string& module_dir, SentenceTransformerSpec& spec) {
  spec.transformer_dir = module_dir;
  // Without a max_seq_length, sentence-transformers cuts at the tokenizer's model_max_length.
  spec.max_seq_length = TokenizerMaxLength(module_dir);
  const std::string path = base::JoinPath(module_dir, kSentenceBertConfigFile);
  if (base::KindOfPath(path) == base::FileKind::kMissing) return absl::OkStatus();
  absl::StatusOr<json> j = ReadPromisedObject(path);
  if (!j.ok()) return j.status();
  if (j->contains("max_seq_length") && (*j)["max_seq_length"].is_null()) return absl::OkStatus();
  return PositiveInt(*j, path, "max_seq_length", &spec.max_seq_length, /*required=*/false);
}

absl::Status ReadPrompts(const json& j, const std::string& origin, SentenceTransformerSpec& spec) {
  if (j.contains("prompts") && !j["prompts"].is_null()) {
    const json& prompts = j["prompts"];
    if (!prompts.is_object()) return FieldError(origin, "prompts", "must be an object");
    for (const auto& [name, text] : prompts.items()) {
      if (!text.is_string()) {
        return FieldError(origin, "prompts", absl::StrCat("entry '", name, "' must be a string"));
      }
      spec.prompts[name] = text.get<std::string>();
    }
  }
  absl::Status s = OptionalString(j, origin, "default_prompt_name", &spec.default_prompt_name);
  if (!s.ok()) return s;
  if (!spec.default_prompt_name.empty() && spec.prompts.count(spec.default_prompt_name) == 0) {
    return FieldError(origin, "default_prompt_name",
                      absl::StrCat("'", spec.default_prompt_name, "' is not a key of 'prompts'"));
  }
  return absl::OkStatus();
}

// config_sentence_transformers.json: optional (older models have none).
absl::Status ReadSettings(const std::string& dir, SentenceTransformerSpec& spec) {
  const std::string origin = base::JoinPath(dir, kSettingsFile);
  if (base::KindOfPath(origin) == base::FileKind::kMissing) return absl::OkStatus();
  absl::StatusOr<json> j = ReadPromisedObject(origin);
  if (!j.ok()) return j.status();
  std::string model_type, similarity;
  for (absl::Status s : {OptionalString(*j, origin, "model_type", &model_type),
                         OptionalString(*j, origin, "similarity_fn_name", &similarity),
                         ReadPrompts(*j, origin, spec)}) {
    if (!s.ok()) return s;
  }
  // Sentence-transformers 5 writes SparseEncoder and CrossEncoder directories with modules.json
  // too; neither is a dense embedding model.
  if (!model_type.empty() && model_type != "SentenceTransformer") {
    return absl::UnimplementedError(absl::StrCat(origin, ": model_type '", model_type,
                                                 "' is not supported (only SentenceTransformer)"));
  }
  if (!similarity.empty()) {
    absl::StatusOr<SimilarityFunction> fn =
        base::ParseEnum("similarity_fn_name", similarity, kSimilarityNames);
    if (!fn.ok())
      return absl::InvalidArgumentError(absl::StrCat(origin, ": ", fn.status().message()));
    spec.similarity = *fn;
  }
  return absl::OkStatus();
}

// The pipeline padless runs: Transformer, Pooling, any Dense layers, an optional Normalize.
enum class Stage { kStart, kAfterTransformer, kAfterPooling, kAfterNormalize };

absl::Status OutOfOrder(const std::string& origin, const Module& m) {
  return absl::UnimplementedError(absl::StrCat(
      origin, ": module '", m.name, "' (", m.type,
      ") is out of the order padless supports: Transformer, Pooling, Dense..., Normalize"));
}

absl::Status AddModule(const std::string& dir, const std::string& origin, const Module& m,
                       Stage& stage, SentenceTransformerSpec& spec) {
  const std::string module_dir = m.path.empty() ? dir : base::JoinPath(dir, m.path);
  const std::string type = ModuleClass(m.type);
  if (type == kTransformerType) {
    if (stage != Stage::kStart) return OutOfOrder(origin, m);
    stage = Stage::kAfterTransformer;
    return ReadTransformer(module_dir, spec);
  }
  if (type == kPoolingType) {
    if (stage != Stage::kAfterTransformer) return OutOfOrder(origin, m);
    stage = Stage::kAfterPooling;
    return ReadPooling(module_dir, spec);
  }
  if (type == kDenseType) {
    if (stage != Stage::kAfterPooling) return OutOfOrder(origin, m);
    absl::StatusOr<DenseLayer> layer = ReadDense(module_dir, spec.embedding_dimension());
    if (!layer.ok()) return layer.status();
    spec.dense.push_back(*std::move(layer));
    return absl::OkStatus();
  }
  if (type == kNormalizeType) {
    if (stage != Stage::kAfterPooling) return OutOfOrder(origin, m);
    stage = Stage::kAfterNormalize;
    spec.normalize = true;
    return absl::OkStatus();
  }
  return absl::UnimplementedError(absl::StrCat(
      origin, ": module '", m.name, "' has type '", m.type,
      "', which padless does not support (only Transformer, Pooling, Dense and Normalize)"));
}

}  // namespace

absl::string_view PoolingModeName(PoolingMode mode) {
  return base::EnumToName(mode, kPoolingNames);
}

absl::string_view SimilarityFunctionName(SimilarityFunction similarity) {
  return base::EnumToName(similarity, kSimilarityNames);
}

absl::StatusOr<PoolingMode> ParsePoolingMode(absl::string_view name) {
  if (name == "splade") {
    return absl::UnimplementedError(
        "pooling 'splade' (sparse vocabulary-sized vectors from a masked-LM head) is not "
        "supported");
  }
  return base::ParseEnum("pooling", name, kPoolingNames);
}

absl::StatusOr<SentenceTransformerSpec> ReadSentenceTransformerDir(const std::string& dir) {
  absl::StatusOr<std::vector<Module>> modules = ReadModules(dir);
  if (!modules.ok()) return modules.status();
  const std::string origin = base::JoinPath(dir, kModulesFile);
  SentenceTransformerSpec spec;
  Stage stage = Stage::kStart;
  for (const Module& m : *modules) {
    absl::Status s = AddModule(dir, origin, m, stage, spec);
    if (!s.ok()) return s;
  }
  if (stage == Stage::kStart || stage == Stage::kAfterTransformer) {
    return absl::InvalidArgumentError(
        absl::StrCat(origin, ": no ", stage == Stage::kStart ? "Transformer" : "Pooling",
                     " module (padless needs a Transformer followed by a Pooling module)"));
  }
  absl::Status s = ReadSettings(dir, spec);
  if (!s.ok()) return s;
  return spec;
}

}  // namespace padless::model_files
