// Hugging Face model directories in and out: the weights of a BERT, RoBERTa, XLM-RoBERTa or
// DistilBERT checkpoint (config.json plus model.safetensors, or shards listed by
// model.safetensors.index.json) loaded into an EncoderClassifier, and an EncoderClassifier
// written back as config.json plus model.safetensors that transformers'
// AutoModelForSequenceClassification loads. One name table (hf_checkpoint.cc) serves both
// directions; Q, K and V are concatenated into padless's fused QKV weight and split on export.
// A pruned model is exported at full width with its removed heads and FFN neurons zero, and such
// zero units are dropped again on import (full_width.h); a transformers 4.x checkpoint with
// config.json's `pruned_heads` imports with its smaller weights.
// pytorch_model.bin is refused (a pickle: it trusts lengths from the file) with a conversion hint.
// Errors name the file and the tensor or config field.
#ifndef PADLESS_MODEL_FILES_HF_WEIGHTS_H_
#define PADLESS_MODEL_FILES_HF_WEIGHTS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "padless/models/encoder.h"
#include "padless/model_files/hf_config.h"

namespace padless::model_files {

inline constexpr char kHfWeightsFile[] = "model.safetensors";
inline constexpr char kHfWeightsIndexFile[] = "model.safetensors.index.json";

// Whether `dir` looks like a Hugging Face model directory: a config.json that names a
// model_type or architectures (padless's own config.json has neither).
bool IsHuggingFaceModelDir(const std::string& dir);

struct ImportedModel {
  HfConfig hf;  // hf.encoder is the model's config (num_labels as requested)
  models::EncoderClassifier model{nullptr};
  // Whether the checkpoint's classification head was loaded: its classification layer and, where
  // the model has one, the head's hidden layer (BERT's pooler, RoBERTa's classifier.dense,
  // DistilBERT's pre_classifier). False: a new head, initialised as padless initialises heads,
  // because the checkpoint has none (a plain encoder such as a sentence-transformers model) or
  // one for another label count. Each part of the head is loaded whenever the checkpoint has it.
  bool head_loaded = false;
  // Why not (empty when head_loaded), naming the checkpoint's tensors, e.g. "no classifier.weight,
  // classifier.bias in model.safetensors".
  std::string new_head_reason;
};

// Loads `dir` on the CPU in fp32, eval mode. `num_labels` > 0 asks for that many labels (a new
// head unless the checkpoint's has that many); 0 keeps the checkpoint's count. Heads and FFN
// neurons whose weights are all zero are left out (DropZeroUnits): the model, and hf.encoder,
// come back pruned, with the same outputs.
absl::StatusOr<ImportedModel> ImportHuggingFace(const std::string& dir, int64_t num_labels = 0);

// Writes config.json and model.safetensors of `model` into `dir` (created), labels in id order;
// a pruned model as its FullWidthModel (no `pruned_heads`, the original intermediate_size).
absl::Status ExportHuggingFace(models::EncoderClassifier& model, const std::vector<std::string>& labels,
                               const std::string& dir);

}  // namespace padless::model_files

#endif  // PADLESS_MODEL_FILES_HF_WEIGHTS_H_
