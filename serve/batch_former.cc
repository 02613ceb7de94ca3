#include "batch_former.h"

#include <ATen/Context.h>
#include <c10/util/Exception.h>

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "padless/batching/collator.h"
#include "padless/corpus/tokenized_corpus.h"

namespace padless::serve::internal {

BatchFormer::BatchFormer(BatchLimits limits, c10::Device device, bool types, Dispatch dispatch)
    : limits_(limits), device_(device), types_(types), dispatch_(std::move(dispatch)) {
  thread_ = std::thread([this] { Run(); });
}

BatchFormer::~BatchFormer() {
  Close();
  Join();
}

void BatchFormer::Add(TokenizedRequest request) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const tokenize::Encoding& s : request.sequences) {
      queued_tokens_ += static_cast<int64_t>(s.ids.size());
    }
    queued_sequences_ += static_cast<int64_t>(request.sequences.size());
    queue_.push_back(std::move(request));
  }
  cv_.notify_all();
}

void BatchFormer::BatchDone() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    --in_flight_;
  }
  cv_.notify_all();
}

void BatchFormer::Close() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
  }
  cv_.notify_all();
}

void BatchFormer::Join() {
  if (thread_.joinable()) thread_.join();
}

void BatchFormer::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return !queue_.empty() || closed_; });
    if (queue_.empty()) return;  // closed and drained
    WaitUntilReady(lock, Clock::now() + limits_.max_delay);
    std::vector<Taken> taken = TakeLocked();
    ++in_flight_;
    lock.unlock();
    Build(std::move(taken));
    lock.lock();
  }
}

void BatchFormer::WaitUntilReady(std::unique_lock<std::mutex>& lock, Clock::time_point deadline) {
  const auto ready = [&] {
    if (in_flight_ >= limits_.max_in_flight) return false;
    const bool full =
        queued_tokens_ >= limits_.max_tokens || queued_sequences_ >= limits_.max_sequences;
    return full || in_flight_ == 0 || closed_ || Clock::now() >= deadline;
  };
  while (!ready()) {
    // With no slot free, or past the deadline, only a finished batch or new work changes things.
    if (in_flight_ >= limits_.max_in_flight || Clock::now() >= deadline) {
      cv_.wait(lock);
    } else {
      cv_.wait_until(lock, deadline);
    }
  }
}

std::vector<BatchFormer::Taken> BatchFormer::TakeLocked() {
  std::vector<Taken> taken;
  int64_t tokens = 0;
  while (!queue_.empty()) {
    TokenizedRequest& front = queue_.front();
    tokenize::Encoding& next = front.sequences[front.next];
    const int64_t length = static_cast<int64_t>(next.ids.size());
    // max_tokens >= max_len (checked at Create), so the first sequence always fits.
    if (!taken.empty() && (tokens + length > limits_.max_tokens ||
                           static_cast<int64_t>(taken.size()) >= limits_.max_sequences)) {
      break;
    }
    taken.push_back(Taken{SequenceOwner{front.state, front.index, length}, std::move(next)});
    tokens += length;
    queued_tokens_ -= length;
    --queued_sequences_;
    if (++front.next == front.sequences.size()) queue_.pop_front();
  }
  return taken;
}

void BatchFormer::Build(std::vector<Taken> taken) {
  FormedBatch formed;
  std::vector<const tokenize::Encoding*> sequences;
  bool pair = false;
  for (Taken& t : taken) {
    // A request cancelled before now is left out; from here on Cancel() leaves it alone.
    if (!t.owner.state->Claim(t.owner.index)) continue;
    pair = pair || !t.sequence.type_ids.empty();
    sequences.push_back(&t.sequence);
    formed.owners.push_back(std::move(t.owner));
  }
  if (sequences.empty()) {
    BatchDone();
    return;
  }
  absl::Status error;
  try {
    const bool cuda = device_.is_cuda() && at::globalContext().hasCUDA();
    batching::CollatorOptions options;
    options.pin_memory = cuda;
    absl::StatusOr<batching::Batch> batch =
        batching::Collator(options).CollateVarlen(sequences, types_ && pair);
    if (batch.ok()) {
      formed.batch = cuda ? batch->To(device_, /*non_blocking=*/true) : *std::move(batch);
    } else {
      error = absl::InternalError(absl::StrCat("batch: ", batch.status().message()));
    }
  } catch (const c10::Error& e) {
    error = absl::InternalError(absl::StrCat("batch: ", e.what_without_backtrace()));
  }
  if (!error.ok()) {
    for (const SequenceOwner& o : formed.owners) o.state->Finish(o.index, error);
    BatchDone();
    return;
  }
  dispatch_(std::move(formed));
}

}  // namespace padless::serve::internal
