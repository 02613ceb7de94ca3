#include "padless/model_files/hf_config.h"

#include <nlohmann/json.hpp>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "modernbert_hf.h"

namespace padless::model_files {

namespace {

using nlohmann::json;

absl::Status Unsupported(const std::string& origin, const std::string& field,
                         const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat(origin, ": field '", field, "': ", why));
}

// The family from model_type (or, without one, the first architecture's name).
absl::StatusOr<HfFamily> Family(const json& j, const std::string& origin) {
  std::string type;
  if (j.contains("model_type") && j["model_type"].is_string()) {
    type = j["model_type"].get<std::string>();
  } else if (j.contains("architectures") && j["architectures"].is_array() &&
             !j["architectures"].empty() && j["architectures"][0].is_string()) {
    const std::string arch = j["architectures"][0].get<std::string>();
    for (const char* prefix : {"XLMRoberta", "Roberta", "DistilBert", "Bert"}) {
      if (arch.rfind(prefix, 0) == 0) {
        type = prefix == std::string("XLMRoberta")   ? "xlm-roberta"
               : prefix == std::string("Roberta")    ? "roberta"
               : prefix == std::string("DistilBert") ? "distilbert"
                                                     : "bert";
        break;
      }
    }
    if (type.empty()) {
      return Unsupported(origin, "architectures",
                         absl::StrCat("'", arch, "' is not a BERT, RoBERTa or DistilBERT model"));
    }
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat(origin, ": neither 'model_type' nor 'architectures' says what model it is"));
  }
  if (type == "bert") return HfFamily::kBert;
  if (type == "roberta") return HfFamily::kRoberta;
  if (type == "xlm-roberta") return HfFamily::kXlmRoberta;
  if (type == "distilbert") return HfFamily::kDistilBert;
  if (type == "modernbert") return HfFamily::kModernBert;
  const std::string why = type == "deberta" || type == "deberta-v2" ? "relative-position attention"
                          : type == "albert"     ? "layers shared across depth"
                                             : "an architecture padless's encoder does not have";
  return Unsupported(origin, "model_type",
                     absl::StrCat("'", type, "' uses ", why,
                                  "; supported: bert, roberta, xlm-roberta, distilbert, modernbert"));
}

// Reads integer `field` into `out` (required when `required`).
absl::Status Int(const json& j, const std::string& origin, const char* field, int64_t* out,
                 bool required = true) {
  if (!j.contains(field)) {
    return required ? absl::InvalidArgumentError(
                          absl::StrCat(origin, ": field '", field, "' is missing"))
                    : absl::OkStatus();
  }
  if (!j[field].is_number_integer()) {
    return absl::InvalidArgumentError(
        absl::StrCat(origin, ": field '", field, "' must be an integer"));
  }
  *out = j[field].get<int64_t>();
  return absl::OkStatus();
}

absl::Status Double(const json& j, const std::string& origin, const char* field, double* out) {
  if (!j.contains(field) || j[field].is_null()) return absl::OkStatus();
  if (!j[field].is_number()) {
    return absl::InvalidArgumentError(
        absl::StrCat(origin, ": field '", field, "' must be a number"));
  }
  *out = j[field].get<double>();
  return absl::OkStatus();
}

absl::StatusOr<models::Activation> HfActivation(const json& j, const std::string& origin,
                                        const char* field) {
  const std::string act =
      j.contains(field) && j[field].is_string() ? j[field].get<std::string>() : "gelu";
  if (act == "gelu") return models::Activation::kGelu;
  if (act == "gelu_new" || act == "gelu_pytorch_tanh") return models::Activation::kGeluTanh;
  if (act == "relu") return models::Activation::kRelu;
  return Unsupported(origin, field, absl::StrCat("activation '", act, "' is not supported"));
}

// Fields that make a BERT-shaped config something padless's encoder cannot run.
absl::Status CheckRepresentable(const json& j, const std::string& origin, int64_t hidden) {
  if (j.contains("position_embedding_type") && j["position_embedding_type"] != "absolute") {
    return Unsupported(origin, "position_embedding_type",
                       absl::StrCat(j["position_embedding_type"].dump(),
                                    " positions are not supported (only absolute)"));
  }
  if (j.contains("embedding_size") && j["embedding_size"] != hidden) {
    return Unsupported(origin, "embedding_size", "a factorised embedding (ALBERT, ELECTRA)");
  }
  for (const char* field :
       {"num_hidden_groups", "relative_attention", "pre_norm", "normalize_before"}) {
    if (j.contains(field) && j[field] != false && j[field] != 1) {
      return Unsupported(origin, field, "is not representable by padless's post-LN encoder");
    }
  }
  if (j.contains("problem_type") && j["problem_type"] == "regression") {
    return Unsupported(origin, "problem_type", "regression heads are not supported");
  }
  return absl::OkStatus();
}

absl::Status BertShape(const json& j, const std::string& origin, HfConfig& c) {
  models::EncoderConfig& e = c.encoder;
  int64_t v = 0;
  struct {
    const char* field;
    models::EncoderConfig& (models::EncoderConfig::*set)(const int64_t&);
    bool required;
  } ints[] = {{"vocab_size", &models::EncoderConfig::vocab_size, true},
              {"hidden_size", &models::EncoderConfig::hidden, true},
              {"num_hidden_layers", &models::EncoderConfig::layers, true},
              {"num_attention_heads", &models::EncoderConfig::heads, true},
              {"intermediate_size", &models::EncoderConfig::ffn, true},
              {"max_position_embeddings", &models::EncoderConfig::max_positions, true},
              {"type_vocab_size", &models::EncoderConfig::type_vocab_size, false}};
  for (const auto& f : ints) {
    v = -1;
    absl::Status s = Int(j, origin, f.field, &v, f.required);
    if (!s.ok()) return s;
    if (v != -1) (e.*f.set)(v);
  }
  double d = e.dropout(), a = e.attention_dropout(), eps = e.layer_norm_eps();
  for (absl::Status s : {Double(j, origin, "hidden_dropout_prob", &d),
                         Double(j, origin, "attention_probs_dropout_prob", &a),
                         Double(j, origin, "layer_norm_eps", &eps),
                         Int(j, origin, "pad_token_id", &c.pad_token_id, false),
                         CheckRepresentable(j, origin, e.hidden())}) {
    if (!s.ok()) return s;
  }
  e.dropout(d).attention_dropout(a).layer_norm_eps(eps);
  absl::StatusOr<models::Activation> act = HfActivation(j, origin, "hidden_act");
  if (!act.ok()) return act.status();
  e.activation(*act).classifier_hidden(models::ClassifierHidden::kTanh);
  if (c.family != HfFamily::kBert) e.position_offset(c.pad_token_id + 1);
  return absl::OkStatus();
}

absl::Status DistilBertShape(const json& j, const std::string& origin, HfConfig& c) {
  models::EncoderConfig& e = c.encoder;
  int64_t vocab = 0, dim = 0, layers = 0, heads = 0, ffn = 0, positions = 0;
  double d = e.dropout(), a = e.attention_dropout();
  for (absl::Status s :
       {Int(j, origin, "vocab_size", &vocab), Int(j, origin, "dim", &dim),
        Int(j, origin, "n_layers", &layers), Int(j, origin, "n_heads", &heads),
        Int(j, origin, "hidden_dim", &ffn), Int(j, origin, "max_position_embeddings", &positions),
        Int(j, origin, "pad_token_id", &c.pad_token_id, false), Double(j, origin, "dropout", &d),
        Double(j, origin, "attention_dropout", &a), CheckRepresentable(j, origin, dim)}) {
    if (!s.ok()) return s;
  }
  absl::StatusOr<models::Activation> act = HfActivation(j, origin, "activation");
  if (!act.ok()) return act.status();
  e.vocab_size(vocab).hidden(dim).layers(layers).heads(heads).ffn(ffn).max_positions(positions);
  e.type_vocab_size(0).dropout(d).attention_dropout(a).layer_norm_eps(1e-12).activation(*act);
  e.classifier_hidden(models::ClassifierHidden::kRelu);
  return absl::OkStatus();
}

// id2label in id order ({"0": "neg", "1": "pos"}); empty without one.
absl::Status Labels(const json& j, const std::string& origin, HfConfig& c) {
  if (!j.contains("id2label")) return absl::OkStatus();
  const json& m = j["id2label"];
  if (!m.is_object()) return Unsupported(origin, "id2label", "must be an object");
  c.labels.assign(m.size(), "");
  for (const auto& [key, value] : m.items()) {
    size_t pos = 0;
    int64_t id = -1;
    try {
      id = std::stoll(key, &pos);
    } catch (const std::exception&) {
    }
    if (pos != key.size() || id < 0 || id >= static_cast<int64_t>(m.size()) || !value.is_string() ||
        !c.labels[id].empty()) {
      return Unsupported(origin, "id2label", absl::StrCat("entry '", key, "' is not a label id"));
    }
    c.labels[id] = value.get<std::string>();
  }
  return absl::OkStatus();
}

// `lists` with each all-integer list sorted and deduplicated: transformers keeps a layer's pruned
// heads as a set and writes them in any order. Anything else is left for EncoderConfig to refuse.
json SortedHeadLists(json lists) {
  if (!lists.is_object()) return lists;
  for (auto& [layer, heads] : lists.items()) {
    if (!heads.is_array() || !std::all_of(heads.begin(), heads.end(),
                                          [](const json& h) { return h.is_number_integer(); })) {
      continue;
    }
    std::vector<int64_t> v = heads.get<std::vector<int64_t>>();
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    heads = v;
  }
  return lists;
}

// config.json's `pruned_heads` ({"layer": [original head, ...]}, what transformers 4.x writes
// after prune_heads) into c.encoder. EncoderConfig records pruning in the same convention, so its
// own reader parses and validates the field (layer keys, head ranges, a head left per layer).
absl::Status PrunedHeads(const json& j, const std::string& origin, HfConfig& c) {
  if (!j.contains("pruned_heads")) return absl::OkStatus();
  json merged = json::parse(c.encoder.ToJson());
  merged["pruned_heads"] = SortedHeadLists(j["pruned_heads"]);
  absl::StatusOr<models::EncoderConfig> pruned = models::EncoderConfig::FromJson(merged.dump(), origin);
  if (!pruned.ok()) return pruned.status();
  c.encoder = *pruned;
  return absl::OkStatus();
}

std::string FamilyName(HfFamily f) {
  switch (f) {
    case HfFamily::kRoberta:
      return "roberta";
    case HfFamily::kXlmRoberta:
      return "xlm-roberta";
    case HfFamily::kDistilBert:
      return "distilbert";
    case HfFamily::kModernBert:
      return "modernbert";
    case HfFamily::kBert:
      break;
  }
  return "bert";
}

}  // namespace

absl::StatusOr<HfConfig> ParseHfConfig(const std::string& text, const std::string& origin) {
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(origin, ": not a JSON object"));
  }
  HfConfig c;
  absl::StatusOr<HfFamily> family = Family(j, origin);
  if (!family.ok()) return family.status();
  c.family = *family;
  c.encoder = models::EncoderConfig().pooling(models::Pooling::kCls);
  absl::Status s = c.family == HfFamily::kDistilBert   ? DistilBertShape(j, origin, c)
                   : c.family == HfFamily::kModernBert ? internal::ParseModernBertConfig(j, origin, c)
                                                       : BertShape(j, origin, c);
  if (s.ok()) s = Labels(j, origin, c);
  if (!s.ok()) return s;
  int64_t num_labels = c.labels.empty() ? 2 : static_cast<int64_t>(c.labels.size());
  s = Int(j, origin, "num_labels", &num_labels, false);
  if (!s.ok()) return s;
  c.encoder.num_labels(num_labels);
  s = c.encoder.Validate();
  if (!s.ok()) return absl::InvalidArgumentError(absl::StrCat(origin, ": ", s.message()));
  s = PrunedHeads(j, origin, c);
  if (!s.ok()) return s;
  return c;
}

HfFamily ExportFamily(const models::EncoderConfig& config) {
  if (config.modernbert()) return HfFamily::kModernBert;
  if (config.position_offset() > 0) return HfFamily::kRoberta;
  if (config.type_vocab_size() == 0) return HfFamily::kDistilBert;
  return HfFamily::kBert;
}

absl::StatusOr<std::string> HfConfigJson(const models::EncoderConfig& e,
                                         const std::vector<std::string>& labels) {
  if (e.modernbert()) return internal::ModernBertConfigJson(e, labels);
  const HfFamily family = ExportFamily(e);
  const models::ClassifierHidden want =
      family == HfFamily::kDistilBert ? models::ClassifierHidden::kRelu : models::ClassifierHidden::kTanh;
  if (e.pre_ln()) return absl::InvalidArgumentError("pre_ln: Hugging Face BERT is post-LN");
  if (e.pooling() != models::Pooling::kCls) {
    return absl::InvalidArgumentError("pooling: Hugging Face classifiers pool the first token");
  }
  if (e.classifier_hidden() != want) {
    return absl::InvalidArgumentError(absl::StrCat(
        "classifier_hidden: ", FamilyName(family), " needs '", models::ClassifierHiddenName(want),
        "', the model has '", models::ClassifierHiddenName(e.classifier_hidden()),
        "' (export-hf takes models fine-tuned from an imported checkpoint)"));
  }
  if (static_cast<int64_t>(labels.size()) != e.num_labels()) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_labels: ", e.num_labels(), ", but ", labels.size(), " label names"));
  }
  const std::string act = e.activation() == models::Activation::kGelu       ? "gelu"
                          : e.activation() == models::Activation::kGeluTanh ? "gelu_new"
                                                                    : "relu";
  json j;
  json id2label = json::object(), label2id = json::object();
  for (size_t i = 0; i < labels.size(); ++i) {
    id2label[std::to_string(i)] = labels[i];
    label2id[labels[i]] = i;
  }
  j["id2label"] = id2label;
  j["label2id"] = label2id;
  j["vocab_size"] = e.vocab_size();
  j["max_position_embeddings"] = e.max_positions();
  // No pruned_heads, and the original FFN width: the config of the full-width form (full_width.h),
  // the one that transformers 5 loads.
  if (family == HfFamily::kDistilBert) {
    j.update({{"architectures", {"DistilBertForSequenceClassification"}},
              {"model_type", "distilbert"},
              {"dim", e.hidden()},
              {"n_layers", e.layers()},
              {"n_heads", e.heads()},
              {"hidden_dim", e.ffn()},
              {"activation", act},
              {"dropout", e.dropout()},
              {"attention_dropout", e.attention_dropout()},
              {"seq_classif_dropout", e.dropout()},
              {"sinusoidal_pos_embds", false},
              {"pad_token_id", 0}});
    return j.dump(2);
  }
  const bool roberta = family == HfFamily::kRoberta;
  j.update({{"architectures",
             {roberta ? "RobertaForSequenceClassification" : "BertForSequenceClassification"}},
            {"model_type", roberta ? "roberta" : "bert"},
            {"hidden_size", e.hidden()},
            {"num_hidden_layers", e.layers()},
            {"num_attention_heads", e.heads()},
            {"intermediate_size", e.ffn()},
            {"hidden_act", act},
            {"hidden_dropout_prob", e.dropout()},
            {"attention_probs_dropout_prob", e.attention_dropout()},
            {"type_vocab_size", e.type_vocab_size()},
            {"layer_norm_eps", e.layer_norm_eps()},
            {"position_embedding_type", "absolute"},
            {"pad_token_id", roberta ? e.position_offset() - 1 : 0}});
  return j.dump(2);
}

}  // namespace padless::model_files
