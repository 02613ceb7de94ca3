// DeviceWorker: the one thread that runs the model. It launches each formed batch's forward
// (inference mode, the model in eval mode, autocast per the engine's AMP mode), the softmax, and
// the copies of probabilities and logits into pinned host memory, then records an event and hands
// the batch to the completion thread without waiting: no host sync per batch, so the next batch
// is launched while the device still runs this one. On the CPU the same code runs synchronously.
// Small batches replay a CUDA graph instead when the engine captured them (graphed_forward.h).
// An embedding engine's worker runs the encoder and its EmbeddingHead instead of the classifier
// head, and copies back embeddings (and token vectors when a sequence of the batch asks: such a
// batch runs eagerly, the graphs hold no [T, hidden] output).
#ifndef PADLESS_SERVE_DEVICE_WORKER_H_
#define PADLESS_SERVE_DEVICE_WORKER_H_

#include <c10/core/Device.h>

#include <functional>
#include <memory>
#include <thread>

#include "batch_scores.h"
#include "embedding_head.h"
#include "graphed_forward.h"
#include "padless/models/autocast.h"
#include "padless/models/encoder.h"
#include "pipeline.h"
#include "work_queue.h"

namespace padless::serve::internal {

class DeviceWorker {
 public:
  using Emit = std::function<void(ScoredBatch)>;
  // Runs until `input` is closed and drained. `model` (and `embedding`, when not null: an
  // embedding engine) must outlive Join(). `graphs` may be null (every batch eager).
  DeviceWorker(models::EncoderClassifierImpl* model, const EmbeddingHead* embedding,
               c10::Device device, models::AmpMode amp, std::unique_ptr<GraphedForward> graphs,
               WorkQueue<FormedBatch>* input, Emit emit);
  ~DeviceWorker();  // Join()
  void Join();

  // The forward the engine's CUDA graphs capture, the one this worker's eager path runs: the
  // classifier's ScoreBatch ({logits, probabilities}) or, with `embedding` (copied into the
  // forward), EmbedBatch without token vectors ({embeddings}).
  static GraphedForward::Forward CapturableForward(models::EncoderClassifierImpl* model,
                                                   const EmbeddingHead* embedding,
                                                   c10::DeviceType device, models::AmpMode amp);

 private:
  void Run();
  ScoredBatch Launch(FormedBatch formed);
  // The scores of `batch`, whose sequences belong to out->owners: a graph replay's (setting
  // out->graphed) or the eager forward's.
  BatchScores Score(const batching::Batch& batch, ScoredBatch* out);
  // The embedding engine's launch: out->embeddings (and out->token_states), on the device.
  void Embed(const batching::Batch& batch, ScoredBatch* out);

  models::EncoderClassifierImpl* model_;
  const EmbeddingHead* embedding_;
  const c10::Device device_;
  const models::AmpMode amp_;
  const std::unique_ptr<GraphedForward> graphs_;
  WorkQueue<FormedBatch>* input_;
  const Emit emit_;
  std::thread thread_;
};

}  // namespace padless::serve::internal

#endif  // PADLESS_SERVE_DEVICE_WORKER_H_
