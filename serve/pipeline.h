// What travels between the engine's stages: a request to tokenize, its encoded sequences, the
// sequences of one device batch with the requests they belong to, and that batch's scores.
#ifndef PADLESS_SERVE_PIPELINE_H_
#define PADLESS_SERVE_PIPELINE_H_

#include <ATen/core/Tensor.h>
#include <c10/core/Event.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "padless/batching/batch.h"
#include "padless/tokenize/tokenizer.h"
#include "request_state.h"

namespace padless::serve::internal {

using Clock = std::chrono::steady_clock;
using StatePtr = std::shared_ptr<RequestHandle::State>;

// Request `index` of a submission, admitted, not yet tokenized.
struct WorkItem {
  StatePtr state;
  size_t index = 0;
};

// A tokenized request: its sequences (windows count as sequences), handed out one by one.
struct TokenizedRequest {
  StatePtr state;
  size_t index = 0;
  std::vector<tokenize::Encoding> sequences;
  size_t next = 0;  // the first sequence not yet in a batch
};

// The request a sequence of a device batch belongs to.
struct SequenceOwner {
  StatePtr state;
  size_t index = 0;
  int64_t tokens = 0;
};

// One batch on its way to the device: its tensors (copies to the device already issued) and the
// owner of each of its sequences, in the batch's order.
struct FormedBatch {
  batching::Batch batch;
  std::vector<SequenceOwner> owners;
};

// A launched batch: probabilities and logits [n, C] fp32 in host memory (classifiers and
// rerankers) or embeddings [n, D] and, when asked for, token vectors [T, H] (embedding engines),
// valid once `ready` has completed (null: already valid), or the error that stopped it. (A pointer, not an optional:
// GCC warns about moving a disengaged std::optional<c10::Event>.)
struct ScoredBatch {
  std::vector<SequenceOwner> owners;
  at::Tensor probabilities;
  at::Tensor scores;
  at::Tensor embeddings;
  at::Tensor token_states;  // undefined unless a sequence of the batch asked for its tokens
  std::unique_ptr<c10::Event> ready;
  absl::Status error;
  int64_t tokens = 0;
  Clock::time_point launched;
  bool graphed = false;  // the forward replayed a CUDA graph
};

}  // namespace padless::serve::internal

#endif  // PADLESS_SERVE_PIPELINE_H_
