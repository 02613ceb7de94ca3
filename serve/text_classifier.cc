#include "padless/serve/text_classifier.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <iterator>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"

namespace padless::serve {
namespace {

// Chunks kept in the engine at once: enough that the tokenizer pool and the batcher never run
// dry between two chunks.
constexpr size_t kChunksInFlight = 3;

struct PendingChunk {
  size_t first = 0;
  RequestHandle handle;
};

absl::StatusOr<std::vector<Prediction>> ToPredictions(
    size_t first, std::vector<absl::StatusOr<EngineResult>> results,
    const corpus::LabelMap& labels) {
  std::vector<Prediction> out;
  out.reserve(results.size());
  for (size_t i = 0; i < results.size(); ++i) {
    if (!results[i].ok()) {
      const absl::Status& s = results[i].status();
      return absl::Status(s.code(), absl::StrCat("text ", first + i, ": ", s.message()));
    }
    Prediction& p = out.emplace_back();
    p.label_id = results[i]->label_id;
    p.label = labels.Name(p.label_id);
    p.probabilities = std::move(results[i]->probabilities);
    p.probability = p.probabilities[p.label_id];
  }
  return out;
}

}  // namespace

TextClassifier::TextClassifier(std::unique_ptr<InferenceEngine> engine)
    : engine_(std::move(engine)) {}
TextClassifier::~TextClassifier() = default;

absl::StatusOr<std::unique_ptr<TextClassifier>> TextClassifier::Load(const std::string& model_dir,
                                                                     InferenceOptions options) {
  absl::StatusOr<std::unique_ptr<InferenceEngine>> engine =
      InferenceEngine::Load(model_dir, std::move(options));
  if (!engine.ok()) return engine.status();
  return std::unique_ptr<TextClassifier>(new TextClassifier(std::move(*engine)));
}

const corpus::LabelMap& TextClassifier::labels() const { return engine_->model().labels; }
const models::EncoderConfig& TextClassifier::config() const { return engine_->model().config; }
InferenceEngine& TextClassifier::engine() const { return *engine_; }

absl::StatusOr<std::vector<Prediction>> TextClassifier::Predict(
    absl::Span<const std::string> texts) const {
  std::vector<Prediction> out;
  out.reserve(texts.size());
  absl::Status s = PredictChunks(texts, 1024, [&](size_t, std::vector<Prediction> chunk) {
    std::move(chunk.begin(), chunk.end(), std::back_inserter(out));
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  return out;
}

absl::Status TextClassifier::PredictChunks(absl::Span<const std::string> texts, size_t chunk,
                                           const ChunkSink& sink) const {
  // A chunk must fit the engine's queue even when it is empty of other work.
  chunk = std::clamp<size_t>(chunk, 1, static_cast<size_t>(engine_->options().max_queued_requests));
  std::deque<PendingChunk> pending;  // cancelled if this call returns early (handles' destructors)
  size_t next = 0;
  while (next < texts.size() || !pending.empty()) {
    if (next < texts.size() && pending.size() < kChunksInFlight) {
      const size_t n = std::min(chunk, texts.size() - next);
      std::vector<EngineRequest> requests(n);
      for (size_t i = 0; i < n; ++i) requests[i].text = texts[next + i];
      absl::StatusOr<RequestHandle> handle = engine_->Submit(requests);
      if (handle.ok()) {
        pending.push_back({next, std::move(*handle)});
        next += n;
        continue;
      }
      // A full queue (other callers' work) is waited out: this client is synchronous.
      if (!absl::IsResourceExhausted(handle.status())) return handle.status();
      if (pending.empty()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        continue;
      }
    }
    PendingChunk done = std::move(pending.front());
    pending.pop_front();
    absl::StatusOr<std::vector<Prediction>> predictions =
        ToPredictions(done.first, done.handle.Wait(), labels());
    if (!predictions.ok()) return predictions.status();
    if (absl::Status s = sink(done.first, std::move(*predictions)); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace padless::serve
