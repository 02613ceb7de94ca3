// Internal: ModernBERT's Hugging Face form (transformers' configuration_modernbert.py and the
// tensor names of modeling_modernbert.py) for hf_config.cc and hf_weights.cc: config.json into
// an EncoderConfig of architecture kModernBert and back, and the name table between padless's
// parameters and a checkpoint's tensors.
#ifndef PADLESS_MODEL_FILES_MODERNBERT_HF_H_
#define PADLESS_MODEL_FILES_MODERNBERT_HF_H_

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "padless/model_files/hf_config.h"

namespace padless::model_files::internal {

// config.json's shape fields into c.encoder and c.pad_token_id. Both config forms are read:
// the Hub's (global_attn_every_n_layers, global_rope_theta, local_rope_theta) and transformers
// 5's save_pretrained (layer_types, rope_parameters). Errors name the field padless cannot
// represent (a layer_types pattern other than global every n-th from layer 0, rope types other
// than default, a classifier activation other than GELU, regression).
absl::Status ParseModernBertConfig(const nlohmann::json& j, const std::string& origin, HfConfig& c);

// config.json of ModernBertForSequenceClassification for `e` (a modernbert EncoderConfig), with
// id2label/label2id from `labels`; for a pruned `e`, that of its full-width form (full_width.h).
absl::StatusOr<std::string> ModernBertConfigJson(const models::EncoderConfig& e,
                                                 const std::vector<std::string>& labels);

// One padless parameter, the checkpoint tensor it is, and its part of the model.
struct ModernBertName {
  enum Kind { kEncoder, kHeadHidden, kHead };
  std::string padless;
  std::string hf;
  Kind kind = kEncoder;
};
// Every tensor a ModernBertForSequenceClassification checkpoint may hold (biases included;
// parameters the config leaves out are skipped by the loader). `prefix`: "model." or "" (a bare
// ModernBertModel's names).
std::vector<ModernBertName> ModernBertNames(const models::EncoderConfig& e,
                                            const std::string& prefix);

// The tensor whose presence says a checkpoint's encoder names carry the "model." prefix.
inline constexpr char kModernBertProbe[] = "model.embeddings.tok_embeddings.weight";

}  // namespace padless::model_files::internal

#endif  // PADLESS_MODEL_FILES_MODERNBERT_HF_H_
