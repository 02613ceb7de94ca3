#include "request_state.h"

#include <utility>

#include "absl/status/status.h"

namespace padless::serve {

RequestHandle::State::State(std::vector<EngineRequest> requests_in,
                            std::shared_ptr<internal::EngineCounters> counters)
    : requests(std::move(requests_in)),
      sums(requests.size()),
      counters_(std::move(counters)),
      results_(requests.size()),
      claimed_(requests.size(), 0),
      unfinished_(requests.size()) {}

bool RequestHandle::State::Pending(size_t i) const {
  std::lock_guard<std::mutex> lock(mu_);
  return !results_[i].has_value();
}

bool RequestHandle::State::Claim(size_t i) {
  std::lock_guard<std::mutex> lock(mu_);
  if (results_[i].has_value()) return false;
  claimed_[i] = 1;
  return true;
}

bool RequestHandle::State::Finish(size_t i, absl::StatusOr<EngineResult> result) {
  std::function<void()> done;
  bool finished;
  {
    std::lock_guard<std::mutex> lock(mu_);
    finished = FinishLocked(i, std::move(result));
    if (unfinished_ == 0) {
      done = std::move(on_done_);
      on_done_ = nullptr;
    }
  }
  // Outside the lock: `done` may call Wait().
  if (done) done();
  return finished;
}

bool RequestHandle::State::FinishLocked(size_t i, absl::StatusOr<EngineResult> result) {
  if (results_[i].has_value()) return false;
  const bool cancelled = !result.ok() && absl::IsCancelled(result.status());
  results_[i] = std::move(result);
  // Counted before the waiter can see it, so that stats() after Wait() include this request.
  counters_->queued.fetch_sub(1);
  counters_->completed.fetch_add(1);
  if (cancelled) counters_->cancelled.fetch_add(1);
  if (--unfinished_ == 0) done_cv_.notify_all();
  return true;
}

void RequestHandle::State::Cancel() {
  std::function<void()> done;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < results_.size(); ++i) {
      if (!claimed_[i]) FinishLocked(i, absl::CancelledError("request cancelled"));
    }
    if (unfinished_ == 0) {
      done = std::move(on_done_);
      on_done_ = nullptr;
    }
  }
  if (done) done();
}

void RequestHandle::State::OnDone(std::function<void()> done) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (unfinished_ != 0) {
      on_done_ = std::move(done);
      return;
    }
  }
  done();
}

std::vector<absl::StatusOr<EngineResult>> RequestHandle::State::Wait() {
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [&] { return unfinished_ == 0; });
  std::vector<absl::StatusOr<EngineResult>> out;
  out.reserve(results_.size());
  for (auto& r : results_) {
    // A second Wait() finds the results moved out; say so rather than hand back moved-from values.
    out.push_back(taken_ ? absl::StatusOr<EngineResult>(
                               absl::FailedPreconditionError("results already taken by Wait()"))
                         : std::move(*r));
  }
  taken_ = true;
  return out;
}

bool RequestHandle::State::WaitFor(std::chrono::nanoseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return done_cv_.wait_for(lock, timeout, [&] { return unfinished_ == 0; });
}

}  // namespace padless::serve

// The handle: a thin owner of the state that cancels what is left when it goes.
namespace padless::serve {

RequestHandle::RequestHandle() = default;
RequestHandle::RequestHandle(std::shared_ptr<State> state) : state_(std::move(state)) {}
RequestHandle::RequestHandle(RequestHandle&&) noexcept = default;

RequestHandle& RequestHandle::operator=(RequestHandle&& other) noexcept {
  if (this != &other) {
    if (state_ != nullptr) state_->Cancel();
    state_ = std::move(other.state_);
  }
  return *this;
}

RequestHandle::~RequestHandle() {
  if (state_ != nullptr) state_->Cancel();
}

std::vector<absl::StatusOr<EngineResult>> RequestHandle::Wait() {
  if (state_ == nullptr) return {};
  return state_->Wait();
}

bool RequestHandle::WaitFor(std::chrono::nanoseconds timeout) {
  return state_ == nullptr || state_->WaitFor(timeout);
}

void RequestHandle::Cancel() {
  if (state_ != nullptr) state_->Cancel();
}

void RequestHandle::OnDone(std::function<void()> done) {
  if (state_ == nullptr) return done();
  state_->OnDone(std::move(done));
}

}  // namespace padless::serve
