// Completion: the thread that turns launched batches into results. It waits for each batch's
// event (the only wait on the device), adds every sequence's probabilities and logits to its
// request's sums, and sets a request's result once all its windows are in: the mean of their
// probabilities and of their logits, and the argmax. An embedding engine's requests are one
// sequence each: their embedding row (and token rows) is the result. A failed batch fails its
// requests.
#ifndef PADLESS_SERVE_COMPLETION_H_
#define PADLESS_SERVE_COMPLETION_H_

#include <cstdint>
#include <functional>
#include <thread>

#include "padless/serve/inference_engine.h"
#include "pipeline.h"
#include "work_queue.h"

namespace padless::serve::internal {

class Completion {
 public:
  // Called after each batch's results are set, on the completion thread.
  using Finished = std::function<void(const BatchStats&)>;
  // `num_labels`: the classifier's (ignored with `embeddings`: an embedding engine's batches).
  Completion(int64_t num_labels, bool embeddings, WorkQueue<ScoredBatch>* input, Finished finished);
  ~Completion();  // Join()
  void Join();

 private:
  void Run();
  void Complete(ScoredBatch& batch);
  void AddSequence(const SequenceOwner& owner, const float* probabilities, const float* scores);
  void CompleteEmbeddings(const ScoredBatch& batch);

  const int64_t num_labels_;
  const bool embeddings_;
  WorkQueue<ScoredBatch>* input_;
  const Finished finished_;
  std::thread thread_;
};

}  // namespace padless::serve::internal

#endif  // PADLESS_SERVE_COMPLETION_H_
