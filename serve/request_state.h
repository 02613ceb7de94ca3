// RequestHandle::State: one submission as the engine's threads and its handle share it. Each
// request's result is set exactly once: by the completion thread, by an error on the way, or by
// Cancel() while the request has not reached the device. Whoever sets it counts it.
#ifndef PADLESS_SERVE_REQUEST_STATE_H_
#define PADLESS_SERVE_REQUEST_STATE_H_

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "engine_counters.h"
#include "padless/serve/inference_engine.h"

namespace padless::serve {

struct RequestHandle::State {
  State(std::vector<EngineRequest> requests, std::shared_ptr<internal::EngineCounters> counters);

  size_t size() const { return requests.size(); }

  // False once request i has a result (cancelled, failed): the tokenizer skips it.
  bool Pending(size_t i) const;
  // Marks request i as on its way to the device, so that Cancel() leaves it alone; false when it
  // already has a result (then it must be skipped).
  bool Claim(size_t i);
  // Sets request i's result unless it has one; false when it had.
  bool Finish(size_t i, absl::StatusOr<EngineResult> result);
  // Every request not yet claimed becomes Cancelled.
  void Cancel();

  std::vector<absl::StatusOr<EngineResult>> Wait();
  bool WaitFor(std::chrono::nanoseconds timeout);
  // RequestHandle::OnDone: `done` runs once every result is set (now, when they are).
  void OnDone(std::function<void()> done);

  const std::vector<EngineRequest> requests;

  // What the windows of one request add up to. Touched only by the completion thread, except
  // `windows`, which the tokenizer sets before handing the request on (the queues between them
  // order the write before every read).
  struct Sums {
    std::vector<double> probabilities;
    std::vector<double> scores;
    int64_t windows = 0;  // sequences the request was encoded into
    int64_t done = 0;     // of them, scored
    int64_t tokens = 0;
  };
  std::vector<Sums> sums;

 private:
  bool FinishLocked(size_t i, absl::StatusOr<EngineResult> result);

  const std::shared_ptr<internal::EngineCounters> counters_;
  mutable std::mutex mu_;
  std::condition_variable done_cv_;
  std::vector<std::optional<absl::StatusOr<EngineResult>>> results_;
  std::vector<char> claimed_;
  size_t unfinished_ = 0;
  bool taken_ = false;             // Wait() moved the results out
  std::function<void()> on_done_;  // cleared when called: it may hold the handle of this state
};

}  // namespace padless::serve

#endif  // PADLESS_SERVE_REQUEST_STATE_H_
