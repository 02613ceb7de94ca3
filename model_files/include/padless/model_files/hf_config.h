// Hugging Face config.json <-> EncoderConfig for the BERT family padless's encoder represents
// (post-LN, absolute learned positions, fused QKV): BERT (incl. MiniLM, E5, BGE of that shape),
// RoBERTa and XLM-RoBERTa (positions start at pad_token_id + 1), DistilBERT (no token types,
// dense + ReLU head). Anything else is an error that names the config field that makes it
// unrepresentable (model_type, position_embedding_type, embedding_size, ...).
// Pruned models: config.json's `pruned_heads` ({"layer": [original head indices removed]}, what
// transformers 4.x writes after prune_heads; transformers 5 dropped it) is read into
// EncoderConfig::pruned_heads. Exports never write it: a pruned model goes out in its full-width
// form (full_width.h, issue 45), which transformers 4.x and 5.x both load.
#ifndef PADLESS_MODEL_FILES_HF_CONFIG_H_
#define PADLESS_MODEL_FILES_HF_CONFIG_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "padless/models/encoder_config.h"

namespace padless::model_files {

// kModernBert: transformers' ModernBERT (modernbert_hf.h), an EncoderConfig of architecture
// kModernBert.
enum class HfFamily { kBert, kRoberta, kXlmRoberta, kDistilBert, kModernBert };

struct HfConfig {
  HfFamily family = HfFamily::kBert;
  models::EncoderConfig encoder;            // num_labels from id2label / num_labels (2 when absent)
  std::vector<std::string> labels;  // id2label in id order; empty when the config has none
  int64_t pad_token_id = 0;
};

// Parses config.json text; `origin` (the file) prefixes errors. `pruned_heads` becomes
// encoder.pruned_heads (lists sorted, as EncoderConfig keeps them; intermediate_size is the
// pruned width).
absl::StatusOr<HfConfig> ParseHfConfig(const std::string& json, const std::string& origin);

// config.json for `config` as family's *ForSequenceClassification, with id2label/label2id from
// `labels` (config.num_labels() of them). A pruned config's full-width form: no pruned_heads, and
// intermediate_size (hidden_dim) is config.ffn(). Errors name the EncoderConfig field that Hugging
// Face cannot represent (pre_ln, pooling, classifier_hidden).
absl::StatusOr<std::string> HfConfigJson(const models::EncoderConfig& config,
                                         const std::vector<std::string>& labels);

// The family padless exports a config as: position_offset > 0 -> RoBERTa, type_vocab_size 0 ->
// DistilBERT, else BERT.
HfFamily ExportFamily(const models::EncoderConfig& config);

}  // namespace padless::model_files

#endif  // PADLESS_MODEL_FILES_HF_CONFIG_H_
