#include "padless/models/encoder_config.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "padless/base/enum_names.h"

namespace padless::models {

namespace {
constexpr base::EnumName<Activation> kActivations[] = {
    {"gelu", Activation::kGelu}, {"gelu_tanh", Activation::kGeluTanh}, {"relu", Activation::kRelu}};
constexpr base::EnumName<Pooling> kPoolings[] = {{"cls", Pooling::kCls}, {"mean", Pooling::kMean}};
constexpr base::EnumName<ClassifierHidden> kClassifierHiddens[] = {
    {"none", ClassifierHidden::kNone},
    {"tanh", ClassifierHidden::kTanh},
    {"relu", ClassifierHidden::kRelu},
    {"gelu_norm", ClassifierHidden::kGeluNorm}};
constexpr base::EnumName<Architecture> kArchitectures[] = {
    {"bert", Architecture::kBert}, {"modernbert", Architecture::kModernBert}};
}  // namespace

absl::StatusOr<Architecture> ParseArchitecture(const std::string& name) {
  return base::ParseEnum("architecture", name, kArchitectures);
}

std::string ArchitectureName(Architecture a) {
  return std::string(base::EnumToName(a, kArchitectures));
}

absl::StatusOr<Activation> ParseActivation(const std::string& name) {
  return base::ParseEnum("activation", name, kActivations);
}

std::string ActivationName(Activation a) { return std::string(base::EnumToName(a, kActivations)); }

absl::StatusOr<Pooling> ParsePooling(const std::string& name) {
  return base::ParseEnum("pooling", name, kPoolings);
}

std::string PoolingName(Pooling p) { return std::string(base::EnumToName(p, kPoolings)); }

absl::StatusOr<ClassifierHidden> ParseClassifierHidden(const std::string& name) {
  return base::ParseEnum("classifier_hidden", name, kClassifierHiddens);
}

std::string ClassifierHiddenName(ClassifierHidden h) {
  return std::string(base::EnumToName(h, kClassifierHiddens));
}

EncoderConfig EncoderConfig::Tiny() {
  return EncoderConfig().hidden(128).layers(2).heads(2).ffn(512).max_positions(512);
}

EncoderConfig EncoderConfig::Small() {
  return EncoderConfig().hidden(512).layers(4).heads(8).ffn(2048).max_positions(512);
}

EncoderConfig EncoderConfig::Base() {
  return EncoderConfig().hidden(768).layers(12).heads(12).ffn(3072).max_positions(512);
}

EncoderConfig EncoderConfig::ModernBertBase() {
  return EncoderConfig()
      .architecture(Architecture::kModernBert)
      .vocab_size(50368)
      .hidden(768)
      .layers(22)
      .heads(12)
      .ffn(1152)
      .max_positions(8192)
      .type_vocab_size(0)
      .pre_ln(true)
      .layer_norm_eps(1e-5)
      .dropout(0.0)
      .attention_dropout(0.0)
      .classifier_hidden(ClassifierHidden::kGeluNorm)
      .attention_bias(false)
      .mlp_bias(false)
      .norm_bias(false)
      .classifier_bias(false);
}

absl::StatusOr<EncoderConfig> EncoderConfig::Preset(const std::string& name) {
  if (name == "tiny") return Tiny();
  if (name == "small") return Small();
  if (name == "base") return Base();
  if (name == "modernbert-base") return ModernBertBase();
  return absl::InvalidArgumentError(absl::StrCat(
      "preset: unknown '", name, "' (expected tiny, small, base or modernbert-base)"));
}

int64_t EncoderConfig::attention_window(int64_t layer) const {
  if (!modernbert() || layer % global_attn_every_n_layers_ == 0) return -1;
  return local_attention_ / 2;
}

int64_t EncoderConfig::heads_in_layer(int64_t layer) const {
  if (pruned_heads_.empty()) return heads_;
  return heads_ - static_cast<int64_t>(pruned_heads_.at(layer).size());
}

int64_t EncoderConfig::ffn_in_layer(int64_t layer) const {
  return layer_ffn_.empty() ? ffn_ : layer_ffn_.at(layer);
}

int64_t EncoderConfig::total_heads() const {
  int64_t total = 0;
  for (int64_t l = 0; l < layers_; ++l) total += heads_in_layer(l);
  return total;
}

int64_t EncoderConfig::total_ffn() const {
  int64_t total = 0;
  for (int64_t l = 0; l < layers_; ++l) total += ffn_in_layer(l);
  return total;
}

bool EncoderConfig::pruned() const {
  for (int64_t i = 0; i < layers_; ++i) {
    if (heads_in_layer(i) != heads_ || ffn_in_layer(i) != ffn_) return true;
  }
  return false;
}

std::vector<int64_t> EncoderConfig::kept_heads(int64_t layer) const {
  std::vector<int64_t> kept;
  const std::vector<int64_t> none;
  const std::vector<int64_t>& removed = pruned_heads_.empty() ? none : pruned_heads_.at(layer);
  for (int64_t h = 0, r = 0; h < heads_; ++h) {
    if (r < static_cast<int64_t>(removed.size()) && removed[r] == h) {
      ++r;
    } else {
      kept.push_back(h);
    }
  }
  return kept;
}

namespace {

absl::Status ValidatePruning(const EncoderConfig& c) {
  const std::vector<std::vector<int64_t>>& heads = c.pruned_heads();
  if (!heads.empty() && static_cast<int64_t>(heads.size()) != c.layers()) {
    return absl::InvalidArgumentError(
        absl::StrCat("pruned_heads: ", heads.size(), " lists for ", c.layers(), " layers"));
  }
  for (size_t layer = 0; layer < heads.size(); ++layer) {
    const std::vector<int64_t>& removed = heads[layer];
    for (size_t k = 0; k < removed.size(); ++k) {
      if (removed[k] < 0 || removed[k] >= c.heads()) {
        return absl::InvalidArgumentError(absl::StrCat("pruned_heads: layer ", layer, " head ",
                                                       removed[k], " is not in [0, ", c.heads(),
                                                       ")"));
      }
      if (k > 0 && removed[k] <= removed[k - 1]) {
        return absl::InvalidArgumentError(
            absl::StrCat("pruned_heads: layer ", layer, " lists are not sorted and unique"));
      }
    }
    if (static_cast<int64_t>(removed.size()) >= c.heads()) {
      return absl::InvalidArgumentError(
          absl::StrCat("pruned_heads: layer ", layer, " would keep no head"));
    }
  }
  const std::vector<int64_t>& ffn = c.layer_ffn();
  if (!ffn.empty() && static_cast<int64_t>(ffn.size()) != c.layers()) {
    return absl::InvalidArgumentError(
        absl::StrCat("layer_ffn: ", ffn.size(), " sizes for ", c.layers(), " layers"));
  }
  for (size_t layer = 0; layer < ffn.size(); ++layer) {
    if (ffn[layer] < 1 || ffn[layer] > c.ffn()) {
      return absl::InvalidArgumentError(absl::StrCat("layer_ffn: layer ", layer, " has ",
                                                     ffn[layer], " neurons, not in [1, ffn ",
                                                     c.ffn(), "]"));
    }
  }
  return absl::OkStatus();
}

// The fields of the other architecture keep their defaults; a ModernBERT model has no learned
// positions or token types and is pre-LN.
absl::Status ValidateArchitecture(const EncoderConfig& c) {
  if (!c.modernbert()) {
    for (const auto& [field, on] : {std::pair<const char*, bool>{"attention_bias",
                                                                 c.attention_bias()},
                                    {"mlp_bias", c.mlp_bias()},
                                    {"norm_bias", c.norm_bias()}}) {
      if (!on) {
        return absl::InvalidArgumentError(
            absl::StrCat(field, ": only modernbert layers can leave out biases"));
      }
    }
    return absl::OkStatus();
  }
  if (!c.pre_ln()) return absl::InvalidArgumentError("pre_ln: a modernbert model is pre-LN");
  if (c.type_vocab_size() != 0 || c.position_offset() != 0) {
    return absl::InvalidArgumentError(
        "type_vocab_size, position_offset: a modernbert model has neither (0 and 0)");
  }
  if (c.head_dim() % 2 != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("heads: rotary embeddings need an even head_dim, got ", c.head_dim()));
  }
  if (c.local_attention() < 0 || c.global_attn_every_n_layers() < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("local_attention, global_attn_every_n_layers: must be >= 0 and >= 1, got ",
                     c.local_attention(), " and ", c.global_attn_every_n_layers()));
  }
  if (!(c.global_rope_theta() > 0.0 && c.local_rope_theta() > 0.0)) {
    return absl::InvalidArgumentError("global_rope_theta, local_rope_theta: must be positive");
  }
  return absl::OkStatus();
}

// The ModernBERT fields of a config object into `c`; each optional, but of the right type.
absl::Status ReadModernBert(const nlohmann::json& j, EncoderConfig* c) {
  if (j.contains("architecture")) {
    if (!j["architecture"].is_string()) {
      return absl::InvalidArgumentError("field 'architecture' must be a string");
    }
    absl::StatusOr<Architecture> a = ParseArchitecture(j["architecture"].get<std::string>());
    if (!a.ok()) return a.status();
    c->architecture(*a);
  }
  for (const char* field : {"global_rope_theta", "local_rope_theta"}) {
    if (!j.contains(field)) continue;
    if (!j[field].is_number()) {
      return absl::InvalidArgumentError(absl::StrCat("field '", field, "' must be a number"));
    }
    const double v = j[field].get<double>();
    field == std::string("global_rope_theta") ? c->global_rope_theta(v) : c->local_rope_theta(v);
  }
  for (const char* field : {"local_attention", "global_attn_every_n_layers"}) {
    if (!j.contains(field)) continue;
    if (!j[field].is_number_integer()) {
      return absl::InvalidArgumentError(absl::StrCat("field '", field, "' must be an integer"));
    }
    const int64_t v = j[field].get<int64_t>();
    field == std::string("local_attention") ? c->local_attention(v)
                                            : c->global_attn_every_n_layers(v);
  }
  using Setter = EncoderConfig& (EncoderConfig::*)(const bool&);
  for (const auto& [field, set] :
       {std::pair<const char*, Setter>{"attention_bias", &EncoderConfig::attention_bias},
        {"mlp_bias", &EncoderConfig::mlp_bias},
        {"norm_bias", &EncoderConfig::norm_bias},
        {"classifier_bias", &EncoderConfig::classifier_bias}}) {
    if (!j.contains(field)) continue;
    if (!j[field].is_boolean()) {
      return absl::InvalidArgumentError(absl::StrCat("field '", field, "' must be a boolean"));
    }
    (c->*set)(j[field].get<bool>());
  }
  return absl::OkStatus();
}

// `pruned_heads` ({"layer": [head, ...]}) and `layer_ffn` ([n, ...]) of a config object into
// `c` (whose `layers` is already read); their ranges are Validate's to check.
absl::Status ReadPruning(const nlohmann::json& j, EncoderConfig* c) {
  if (j.contains("pruned_heads")) {
    const nlohmann::json& heads = j["pruned_heads"];
    if (!heads.is_object()) {
      return absl::InvalidArgumentError(
          "field 'pruned_heads' must be an object from layer index to head list");
    }
    std::vector<std::vector<int64_t>> removed(std::max<int64_t>(c->layers(), 0));
    for (const auto& [key, list] : heads.items()) {
      int64_t layer = -1;
      if (!absl::SimpleAtoi(key, &layer) || layer < 0 || layer >= c->layers()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "pruned_heads: '", key, "' is not a layer index in [0, ", c->layers(), ")"));
      }
      if (!list.is_array()) {
        return absl::InvalidArgumentError(
            absl::StrCat("pruned_heads: layer ", key, " must list head indices"));
      }
      for (const nlohmann::json& h : list) {
        if (!h.is_number_integer()) {
          return absl::InvalidArgumentError(
              absl::StrCat("pruned_heads: layer ", key, " holds a non-integer head"));
        }
        removed[layer].push_back(h.get<int64_t>());
      }
    }
    if (!removed.empty()) c->pruned_heads(std::move(removed));
  }
  if (j.contains("layer_ffn")) {
    const nlohmann::json& ffn = j["layer_ffn"];
    std::vector<int64_t> sizes;
    for (const nlohmann::json& n : ffn.is_array() ? ffn : nlohmann::json::array({nullptr})) {
      if (!n.is_number_integer()) {
        return absl::InvalidArgumentError("field 'layer_ffn' must be an array of integers");
      }
      sizes.push_back(n.get<int64_t>());
    }
    c->layer_ffn(std::move(sizes));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status EncoderConfig::Validate() const {
  auto positive = [](const char* field, int64_t v) -> absl::Status {
    if (v > 0) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(field, ": must be positive, got ", v));
  };
  for (const auto& [field, v] : {std::pair<const char*, int64_t>{"vocab_size", vocab_size_},
                                 {"hidden", hidden_},
                                 {"layers", layers_},
                                 {"heads", heads_},
                                 {"ffn", ffn_},
                                 {"max_positions", max_positions_},
                                 {"num_labels", num_labels_}}) {
    absl::Status s = positive(field, v);
    if (!s.ok()) return s;
  }
  if (type_vocab_size_ < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("type_vocab_size: must be 0 or more, got ", type_vocab_size_));
  }
  if (position_offset_ < 0 || position_offset_ >= max_positions_) {
    return absl::InvalidArgumentError(absl::StrCat("position_offset: must be in [0, max_positions ",
                                                   max_positions_, "), got ", position_offset_));
  }
  if (hidden_ % heads_ != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("hidden: ", hidden_, " is not divisible by heads ", heads_));
  }
  if (!(dropout_ >= 0.0 && dropout_ < 1.0)) {
    return absl::InvalidArgumentError(absl::StrCat("dropout: must be in [0, 1), got ", dropout_));
  }
  if (!(attention_dropout_ >= 0.0 && attention_dropout_ < 1.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("attention_dropout: must be in [0, 1), got ", attention_dropout_));
  }
  if (!(layer_norm_eps_ > 0.0)) {
    return absl::InvalidArgumentError("layer_norm_eps: must be positive");
  }
  absl::Status architecture = ValidateArchitecture(*this);
  if (!architecture.ok()) return architecture;
  return ValidatePruning(*this);
}

std::string EncoderConfig::ToJson() const {
  nlohmann::json j = {{"vocab_size", vocab_size_},
                      {"hidden", hidden_},
                      {"layers", layers_},
                      {"heads", heads_},
                      {"ffn", ffn_},
                      {"max_positions", max_positions_},
                      {"type_vocab_size", type_vocab_size_},
                      {"position_offset", position_offset_},
                      {"num_labels", num_labels_},
                      {"dropout", dropout_},
                      {"attention_dropout", attention_dropout_},
                      {"layer_norm_eps", layer_norm_eps_},
                      {"pre_ln", pre_ln_},
                      {"activation", ActivationName(activation_)},
                      {"pooling", PoolingName(pooling_)},
                      {"classifier_hidden", ClassifierHiddenName(classifier_hidden_)}};
  nlohmann::json heads = nlohmann::json::object();
  for (size_t layer = 0; layer < pruned_heads_.size(); ++layer) {
    if (!pruned_heads_[layer].empty()) heads[std::to_string(layer)] = pruned_heads_[layer];
  }
  if (!heads.empty()) j["pruned_heads"] = heads;
  if (!layer_ffn_.empty()) j["layer_ffn"] = layer_ffn_;
  if (modernbert()) {
    j.update({{"architecture", ArchitectureName(architecture_)},
              {"global_rope_theta", global_rope_theta_},
              {"local_rope_theta", local_rope_theta_},
              {"local_attention", local_attention_},
              {"global_attn_every_n_layers", global_attn_every_n_layers_},
              {"attention_bias", attention_bias_},
              {"mlp_bias", mlp_bias_},
              {"norm_bias", norm_bias_}});
  }
  if (!classifier_bias_) j["classifier_bias"] = false;
  return j.dump(2);
}

absl::StatusOr<EncoderConfig> EncoderConfig::FromJson(const std::string& json,
                                                      const std::string& origin) {
  nlohmann::json j = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(origin, ": not a JSON object"));
  }
  EncoderConfig c;
  // Each field is optional (defaults stay) but must have the right type when present.
  auto get_int = [&](const char* field, int64_t& out) -> absl::Status {
    if (!j.contains(field)) return absl::OkStatus();
    if (!j[field].is_number_integer()) {
      return absl::InvalidArgumentError(
          absl::StrCat(origin, ": field '", field, "' must be an integer"));
    }
    out = j[field].get<int64_t>();
    return absl::OkStatus();
  };
  auto get_double = [&](const char* field, double& out) -> absl::Status {
    if (!j.contains(field)) return absl::OkStatus();
    if (!j[field].is_number()) {
      return absl::InvalidArgumentError(
          absl::StrCat(origin, ": field '", field, "' must be a number"));
    }
    out = j[field].get<double>();
    return absl::OkStatus();
  };
  for (absl::Status s :
       {get_int("vocab_size", c.vocab_size_), get_int("hidden", c.hidden_),
        get_int("layers", c.layers_), get_int("heads", c.heads_), get_int("ffn", c.ffn_),
        get_int("max_positions", c.max_positions_), get_int("type_vocab_size", c.type_vocab_size_),
        get_int("position_offset", c.position_offset_), get_int("num_labels", c.num_labels_),
        get_double("dropout", c.dropout_), get_double("attention_dropout", c.attention_dropout_),
        get_double("layer_norm_eps", c.layer_norm_eps_)}) {
    if (!s.ok()) return s;
  }
  if (j.contains("pre_ln")) {
    if (!j["pre_ln"].is_boolean()) {
      return absl::InvalidArgumentError(absl::StrCat(origin, ": field 'pre_ln' must be a boolean"));
    }
    c.pre_ln_ = j["pre_ln"].get<bool>();
  }
  for (const char* field : {"activation", "pooling", "classifier_hidden"}) {
    if (!j.contains(field)) continue;
    if (!j[field].is_string()) {
      return absl::InvalidArgumentError(
          absl::StrCat(origin, ": field '", field, "' must be a string"));
    }
    const std::string v = j[field].get<std::string>();
    if (std::string(field) == "activation") {
      absl::StatusOr<Activation> a = ParseActivation(v);
      if (!a.ok())
        return absl::InvalidArgumentError(absl::StrCat(origin, ": ", a.status().message()));
      c.activation_ = *a;
    } else if (std::string(field) == "classifier_hidden") {
      absl::StatusOr<ClassifierHidden> h = ParseClassifierHidden(v);
      if (!h.ok())
        return absl::InvalidArgumentError(absl::StrCat(origin, ": ", h.status().message()));
      c.classifier_hidden_ = *h;
    } else {
      absl::StatusOr<Pooling> p = ParsePooling(v);
      if (!p.ok())
        return absl::InvalidArgumentError(absl::StrCat(origin, ": ", p.status().message()));
      c.pooling_ = *p;
    }
  }
  absl::Status modern = ReadModernBert(j, &c);
  if (!modern.ok()) return absl::InvalidArgumentError(absl::StrCat(origin, ": ", modern.message()));
  absl::Status pruning = ReadPruning(j, &c);
  if (!pruning.ok())
    return absl::InvalidArgumentError(absl::StrCat(origin, ": ", pruning.message()));
  absl::Status valid = c.Validate();
  if (!valid.ok()) return absl::InvalidArgumentError(absl::StrCat(origin, ": ", valid.message()));
  return c;
}

}  // namespace padless::models
