// Inference for services: a TextClassifier loads a trained model directory and classifies raw
// texts. Predict() is const and thread-safe; it sorts each request by length into token-budget
// batches internally, and handles texts longer than the model either by a head+tail cut or by
// voting over overlapping windows.
#ifndef PADLESS_SERVE_TEXT_CLASSIFIER_H_
#define PADLESS_SERVE_TEXT_CLASSIFIER_H_

#include <c10/core/Device.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "padless/models/autocast.h"
#include "padless/models/encoder.h"
#include "padless/tokenize/label_map.h"

namespace padless::models {

enum class LongText {
  kHeadTail,  // keep the first and last tokens within max_len
  kWindows,   // classify overlapping windows of max_len and average their probabilities
};

absl::StatusOr<LongText> ParseLongText(const std::string& name);

struct InferenceOptions {
  c10::Device device = c10::Device(c10::kCPU);
  AmpMode amp = AmpMode::kOff;
  int64_t max_len = 512;  // clamped to the model's max_positions
  LongText long_text = LongText::kHeadTail;
  int64_t window_stride = 128;  // tokens shared by consecutive windows
  int64_t max_tokens = 16384;   // token budget per internal batch
};

struct Prediction {
  int64_t label_id = 0;
  std::string label;
  float probability = 0;             // of the predicted label
  std::vector<float> probabilities;  // per label id
};

class TextClassifier {
 public:
  static absl::StatusOr<std::unique_ptr<TextClassifier>> Load(const std::string& model_dir,
                                                              InferenceOptions options = {});
  ~TextClassifier();

  // One prediction per text, in order. Empty texts are classified as [CLS][SEP].
  absl::StatusOr<std::vector<Prediction>> Predict(absl::Span<const std::string> texts) const;

  const tokenize::LabelMap& labels() const;
  const EncoderConfig& config() const;

 private:
  struct Impl;
  explicit TextClassifier(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace padless::models

#endif  // PADLESS_SERVE_TEXT_CLASSIFIER_H_
