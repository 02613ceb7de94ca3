// Saving and loading models: weights as safetensors files (models/safetensors.h: bounded by
// design, no pickle, written atomically), and the model directory that training produces and
// inference loads: config.json, model.safetensors, the tokenizer (tokenizer.model for
// SentencePiece, tokenizer.json for a Hugging Face WordPiece one) and labels.json.
// A directory from before the switch holds model.pt (a TorchScript pickle archive) instead; it is
// refused with an error that names scripts/convert_model_pt.py, which converts it once (issue 13:
// the pickle reader trusts lengths from the file). Resume checkpoints keep their own format
// (checkpoint_store.h): they are written and read back by the same run.
#ifndef PADLESS_MODEL_FILES_MODEL_IO_H_
#define PADLESS_MODEL_FILES_MODEL_IO_H_

#include <c10/core/Device.h>

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "padless/corpus/label_map.h"
#include "padless/models/encoder.h"
#include "padless/tokenize/tokenizer.h"

namespace padless::model_files {

inline constexpr char kConfigFile[] = "config.json";
inline constexpr char kWeightsFile[] = "model.safetensors";
inline constexpr char kLegacyWeightsFile[] = "model.pt";
inline constexpr char kLabelsFile[] = "labels.json";

// Every parameter of `model` by name, as a safetensors file, atomically.
absl::Status SaveWeights(torch::nn::Module& model, const std::string& path);
// Copies the parameters stored in `path` into `model`. Every parameter must be present with the
// same shape, except that with `skip_mismatched_head` a classification head of another shape
// (another label set, for --init-from) is left as initialised. Errors name the file and parameter.
absl::Status LoadWeights(torch::nn::Module& model, const std::string& path,
                         bool skip_mismatched_head = false);

struct LoadedModel {
  models::EncoderConfig config;
  models::EncoderClassifier model;
  tokenize::Tokenizer tokenizer;
  corpus::LabelMap labels;
  // Whether the classification head's weights came from the checkpoint: always for padless's own
  // directories (SaveModelDir writes the head); for a Hugging Face directory, only when its
  // checkpoint holds a head for its labels (ImportedModel::head_loaded). A plain encoder (a
  // sentence-transformers model, a BertModel) gets a new, untrained head, which
  // RequireTrainedHead refuses: its outputs are noise.
  bool head_from_checkpoint = false;
  std::string new_head_reason;  // why not, naming the missing weights (ImportedModel's)
};

// Writes the four files of a model directory (creating it); the tokenizer is saved as given.
absl::Status SaveModelDir(const std::string& dir, models::EncoderClassifier& model,
                          const tokenize::Tokenizer& tokenizer, const corpus::LabelMap& labels);
// Loads a model directory onto `device`, in eval mode: padless's own, or a Hugging Face one
// (config.json naming a model_type, safetensors weights, tokenizer.json; see hf_weights.h), whose
// labels come from id2label, and whose head may be new (LoadedModel::head_from_checkpoint; use
// LoadClassifierDir to classify). A missing directory or file, corrupt JSON
// or weights, or a config that does not match the weights or the label map gives a clear status.
absl::StatusOr<LoadedModel> LoadModelDir(const std::string& dir, const c10::Device& device);

// FailedPrecondition, naming `dir` and the missing weights, when `model`'s classification head
// did not come from its checkpoint. Every use of a model as a classifier (serve, predict, eval)
// goes through it; `train --init-from` and prune may start from a new head and do not.
absl::Status RequireTrainedHead(const LoadedModel& model, const std::string& dir);
// LoadModelDir, then RequireTrainedHead: a model directory loaded to classify with.
absl::StatusOr<LoadedModel> LoadClassifierDir(const std::string& dir, const c10::Device& device);

}  // namespace padless::model_files

#endif  // PADLESS_MODEL_FILES_MODEL_IO_H_
