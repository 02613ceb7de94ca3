#include "modernbert_hf.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace padless::model_files::internal {

namespace {

using models::EncoderConfig;
using nlohmann::json;

absl::Status Unsupported(const std::string& origin, const std::string& field,
                         const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat(origin, ": field '", field, "': ", why));
}

// Field `field` of `j` as T when present and not null; `out` keeps its value otherwise.
template <typename T>
absl::Status Read(const json& j, const std::string& origin, const char* field, T* out) {
  if (!j.contains(field) || j[field].is_null()) return absl::OkStatus();
  const json& v = j[field];
  const bool ok = std::is_same_v<T, bool>      ? v.is_boolean()
                  : std::is_same_v<T, int64_t> ? v.is_number_integer()
                  : std::is_same_v<T, double>  ? v.is_number()
                                               : v.is_string();
  if (!ok) return Unsupported(origin, field, absl::StrCat("has the wrong type: ", v.dump()));
  *out = v.get<T>();
  return absl::OkStatus();
}

absl::StatusOr<models::Activation> Activation(const std::string& name, const std::string& origin,
                                              const char* field) {
  if (name == "gelu") return models::Activation::kGelu;
  if (name == "gelu_new" || name == "gelu_pytorch_tanh") return models::Activation::kGeluTanh;
  if (name == "relu") return models::Activation::kRelu;
  return Unsupported(origin, field, absl::StrCat("activation '", name, "' is not supported"));
}

// The global-attention period: global_attn_every_n_layers, or the period of layer_types (layer 0
// and every n-th after it "full_attention", the others "sliding_attention").
absl::StatusOr<int64_t> GlobalEvery(const json& j, const std::string& origin, int64_t layers) {
  int64_t every = 3;
  if (absl::Status s = Read(j, origin, "global_attn_every_n_layers", &every); !s.ok()) return s;
  if (!j.contains("layer_types") || j["layer_types"].is_null()) return every;
  const json& types = j["layer_types"];
  if (!types.is_array() || static_cast<int64_t>(types.size()) != layers) {
    return Unsupported(origin, "layer_types", absl::StrCat("must list ", layers, " layer types"));
  }
  if (!j.contains("global_attn_every_n_layers")) {
    every = layers;  // no second global layer: only layer 0 is global
    for (int64_t i = 1; i < layers; ++i) {
      if (types[i] == "full_attention") {
        every = i;
        break;
      }
    }
  }
  for (int64_t i = 0; i < layers; ++i) {
    const char* want = i % every == 0 ? "full_attention" : "sliding_attention";
    if (types[i] != want) {
      return Unsupported(origin, "layer_types",
                         absl::StrCat("padless runs global attention in every n-th layer from ",
                                      "layer 0 and sliding windows elsewhere; layer ", i, " is ",
                                      types[i].dump()));
    }
  }
  return every;
}

// The rotary theta of one layer kind: rope_parameters[kind].rope_theta (transformers 5) or the
// older flat field.
absl::Status Theta(const json& j, const std::string& origin, const char* kind,
                   const char* flat_field, double* theta) {
  if (absl::Status s = Read(j, origin, flat_field, theta); !s.ok()) return s;
  if (!j.contains("rope_parameters") || !j["rope_parameters"].is_object()) return absl::OkStatus();
  const json& p = j["rope_parameters"];
  if (!p.contains(kind) || p[kind].is_null()) return absl::OkStatus();
  const std::string field = absl::StrCat("rope_parameters.", kind);
  if (!p[kind].is_object()) return Unsupported(origin, field, "must be an object");
  std::string type = "default";
  if (absl::Status s = Read(p[kind], origin, "rope_type", &type); !s.ok()) return s;
  if (type != "default") {
    return Unsupported(origin, field, absl::StrCat("rope_type '", type, "' is not supported"));
  }
  return Read(p[kind], origin, "rope_theta", theta);
}

absl::Status ReadHead(const json& j, const std::string& origin, EncoderConfig& e) {
  std::string pooling = "cls", activation = "gelu", problem;
  for (absl::Status s : {Read(j, origin, "classifier_pooling", &pooling),
                         Read(j, origin, "classifier_activation", &activation),
                         Read(j, origin, "problem_type", &problem)}) {
    if (!s.ok()) return s;
  }
  if (pooling != "cls" && pooling != "mean") {
    return Unsupported(origin, "classifier_pooling", absl::StrCat("'", pooling, "' (cls or mean)"));
  }
  if (activation != "gelu") {
    return Unsupported(origin, "classifier_activation",
                       absl::StrCat("'", activation, "' is not supported (gelu)"));
  }
  if (problem == "regression") {
    return Unsupported(origin, "problem_type", "regression heads are not supported");
  }
  e.pooling(pooling == "cls" ? models::Pooling::kCls : models::Pooling::kMean);
  e.classifier_hidden(models::ClassifierHidden::kGeluNorm);
  return absl::OkStatus();
}

}  // namespace

absl::Status ParseModernBertConfig(const json& j, const std::string& origin, HfConfig& c) {
  // transformers' ModernBertConfig defaults where a field is absent.
  int64_t vocab = 50368, hidden = 768, layers = 22, heads = 12, ffn = 1152, positions = 8192;
  int64_t window = 128;
  double eps = 1e-5, mlp_dropout = 0.0, attention_dropout = 0.0;
  double global_theta = 160000.0, local_theta = 10000.0;
  bool norm_bias = false, attention_bias = false, mlp_bias = false, classifier_bias = false;
  std::string act = "gelu";
  c.pad_token_id = 50283;
  for (absl::Status s :
       {Read(j, origin, "vocab_size", &vocab), Read(j, origin, "hidden_size", &hidden),
        Read(j, origin, "num_hidden_layers", &layers),
        Read(j, origin, "num_attention_heads", &heads), Read(j, origin, "intermediate_size", &ffn),
        Read(j, origin, "max_position_embeddings", &positions),
        Read(j, origin, "local_attention", &window), Read(j, origin, "norm_eps", &eps),
        Read(j, origin, "mlp_dropout", &mlp_dropout),
        Read(j, origin, "attention_dropout", &attention_dropout),
        Read(j, origin, "norm_bias", &norm_bias),
        Read(j, origin, "attention_bias", &attention_bias), Read(j, origin, "mlp_bias", &mlp_bias),
        Read(j, origin, "classifier_bias", &classifier_bias),
        Read(j, origin, "hidden_activation", &act),
        Read(j, origin, "pad_token_id", &c.pad_token_id),
        Theta(j, origin, "full_attention", "global_rope_theta", &global_theta),
        Theta(j, origin, "sliding_attention", "local_rope_theta", &local_theta)}) {
    if (!s.ok()) return s;
  }
  if (j.contains("rope_scaling") && !j["rope_scaling"].is_null()) {
    return Unsupported(origin, "rope_scaling", "scaled rotary embeddings are not supported");
  }
  absl::StatusOr<int64_t> every = GlobalEvery(j, origin, layers);
  if (!every.ok()) return every.status();
  absl::StatusOr<models::Activation> activation = Activation(act, origin, "hidden_activation");
  if (!activation.ok()) return activation.status();
  EncoderConfig& e = c.encoder;
  e = EncoderConfig::ModernBertBase()
          .vocab_size(vocab)
          .hidden(hidden)
          .layers(layers)
          .heads(heads)
          .ffn(ffn)
          .max_positions(positions)
          .layer_norm_eps(eps)
          .dropout(mlp_dropout)
          .attention_dropout(attention_dropout)
          .activation(*activation)
          .local_attention(window)
          .global_attn_every_n_layers(*every)
          .global_rope_theta(global_theta)
          .local_rope_theta(local_theta)
          .attention_bias(attention_bias)
          .mlp_bias(mlp_bias)
          .norm_bias(norm_bias)
          .classifier_bias(classifier_bias);
  return ReadHead(j, origin, e);
}

absl::StatusOr<std::string> ModernBertConfigJson(const EncoderConfig& e,
                                                 const std::vector<std::string>& labels) {
  if (e.classifier_hidden() != models::ClassifierHidden::kGeluNorm) {
    return absl::InvalidArgumentError(
        "classifier_hidden: ModernBertForSequenceClassification's head is gelu_norm");
  }
  if (static_cast<int64_t>(labels.size()) != e.num_labels()) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_labels: ", e.num_labels(), ", but ", labels.size(), " label names"));
  }
  json id2label = json::object(), label2id = json::object();
  for (size_t i = 0; i < labels.size(); ++i) {
    id2label[std::to_string(i)] = labels[i];
    label2id[labels[i]] = i;
  }
  const std::string act = e.activation() == models::Activation::kGelu       ? "gelu"
                          : e.activation() == models::Activation::kGeluTanh ? "gelu_pytorch_tanh"
                                                                            : "relu";
  // A pruned model's config is its full-width form's (full_width.h): the original heads and
  // intermediate_size, no pruned_heads (transformers' ModernBERT has none).
  json j = {{"architectures", {"ModernBertForSequenceClassification"}},
            {"model_type", "modernbert"},
            {"id2label", id2label},
            {"label2id", label2id},
            {"vocab_size", e.vocab_size()},
            {"hidden_size", e.hidden()},
            {"num_hidden_layers", e.layers()},
            {"num_attention_heads", e.heads()},
            {"intermediate_size", e.ffn()},
            {"max_position_embeddings", e.max_positions()},
            {"hidden_activation", act},
            {"norm_eps", e.layer_norm_eps()},
            {"norm_bias", e.norm_bias()},
            {"attention_bias", e.attention_bias()},
            {"mlp_bias", e.mlp_bias()},
            {"classifier_bias", e.classifier_bias()},
            {"local_attention", e.local_attention()},
            {"global_attn_every_n_layers", e.global_attn_every_n_layers()},
            {"global_rope_theta", e.global_rope_theta()},
            {"local_rope_theta", e.local_rope_theta()},
            {"embedding_dropout", e.dropout()},
            {"mlp_dropout", e.dropout()},
            {"classifier_dropout", e.dropout()},
            {"attention_dropout", e.attention_dropout()},
            {"classifier_pooling", e.pooling() == models::Pooling::kCls ? "cls" : "mean"},
            {"classifier_activation", "gelu"}};
  // ModernBERT's tokenizer ids where the vocabulary holds them; else 0 for padding (transformers
  // builds the embedding with padding_idx = pad_token_id, which must exist).
  constexpr int64_t kPad = 50283, kCls = 50281, kSep = 50282;
  const bool modernbert_vocab = e.vocab_size() > kPad;
  j["pad_token_id"] = modernbert_vocab ? kPad : 0;
  const json cls = modernbert_vocab ? json(kCls) : json(nullptr);
  const json sep = modernbert_vocab ? json(kSep) : json(nullptr);
  j.update(
      {{"cls_token_id", cls}, {"bos_token_id", cls}, {"sep_token_id", sep}, {"eos_token_id", sep}});
  return j.dump(2);
}

std::vector<ModernBertName> ModernBertNames(const EncoderConfig& e, const std::string& p) {
  std::vector<ModernBertName> t;
  const auto pair = [&](const std::string& padless, const std::string& hf,
                        ModernBertName::Kind kind = ModernBertName::kEncoder) {
    t.push_back({padless + "_weight", hf + ".weight", kind});
    t.push_back({padless + "_bias", hf + ".bias", kind});
  };
  t.push_back({"word_embeddings", p + "embeddings.tok_embeddings.weight"});
  pair("embedding_norm", p + "embeddings.norm");
  for (int64_t i = 0; i < e.layers(); ++i) {
    const std::string l = absl::StrCat(p, "layers.", i, ".");
    const std::string me = absl::StrCat("layer", i, ".");
    pair(me + "attention_qkv", l + "attn.Wqkv");
    pair(me + "attention_out", l + "attn.Wo");
    pair(me + "attention_norm", l + "attn_norm");  // layer 0 has none
    pair(me + "ffn_in", l + "mlp.Wi");
    pair(me + "ffn_out", l + "mlp.Wo");
    pair(me + "ffn_norm", l + "mlp_norm");
  }
  pair("final_norm", p + "final_norm");
  pair("head_dense", "head.dense", ModernBertName::kHeadHidden);
  pair("head_norm", "head.norm", ModernBertName::kHeadHidden);
  pair("head", "classifier", ModernBertName::kHead);
  return t;
}

}  // namespace padless::model_files::internal
