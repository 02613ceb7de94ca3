// TextClassifier: the synchronous client of the InferenceEngine (inference_engine.h) for
// programs that classify lists of texts: load a model directory, Predict(texts), get one
// Prediction per text in order. Predict() is thread-safe; concurrent callers share the engine's
// batches. Long texts are cut (head+tail) or classified by windows, per InferenceOptions.
#ifndef PADLESS_SERVE_TEXT_CLASSIFIER_H_
#define PADLESS_SERVE_TEXT_CLASSIFIER_H_

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "padless/corpus/label_map.h"
#include "padless/models/encoder_config.h"
#include "padless/serve/inference_engine.h"

namespace padless::serve {

// The engine's options: device, AMP, max_len, long-text handling, batch limits.
using InferenceOptions = EngineOptions;

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

  // One prediction per text, in order. Empty texts are classified as [CLS][SEP]. The first text
  // that fails (e.g. its tokenization) fails the call, with the text's index in the message.
  absl::StatusOr<std::vector<Prediction>> Predict(absl::Span<const std::string> texts) const;

  // Predict in chunks of `chunk` texts, handing each chunk's predictions, in order, to `sink`
  // (on the calling thread) while later chunks are already in the engine: for long inputs whose
  // results are written out as they come. A sink error stops the call and is returned.
  using ChunkSink = std::function<absl::Status(size_t first, std::vector<Prediction> chunk)>;
  absl::Status PredictChunks(absl::Span<const std::string> texts, size_t chunk,
                             const ChunkSink& sink) const;

  const corpus::LabelMap& labels() const;
  const models::EncoderConfig& config() const;
  InferenceEngine& engine() const;

 private:
  explicit TextClassifier(std::unique_ptr<InferenceEngine> engine);
  std::unique_ptr<InferenceEngine> engine_;
};

}  // namespace padless::serve

#endif  // PADLESS_SERVE_TEXT_CLASSIFIER_H_
