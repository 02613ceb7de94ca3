#include "padless/batching/loader.h"

#include <ATen/Context.h>
#include <c10/util/Exception.h>

#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"

namespace padless::batching {

struct Loader::State {
  const corpus::TokenizedCorpus* corpus = nullptr;
  std::vector<BatchSpec> plan;
  LoaderOptions options;
  Collator collator;

  // std primitives rather than absl::Mutex: they are pthread-based, so ThreadSanitizer sees their
  // ordering even when Abseil itself is an uninstrumented system library (Debian's).
  std::mutex mu;
  std::condition_variable changed;  // any of the fields below changed
  int64_t next_claim = 0;           // next batch a worker will build
  int64_t consumed = 0;             // batches handed to the consumer
  bool stop = false;
  // Built batches waiting for their turn; at most `prefetch` are claimed or waiting at once, which
  // bounds memory however slow the consumer is.
  std::map<int64_t, absl::StatusOr<Batch>> ready;
  absl::Status error;  // consumer side only: sticky after the first failure
  std::vector<std::thread> workers;

  State(const corpus::TokenizedCorpus* c, std::vector<BatchSpec> p, LoaderOptions o)
      : corpus(c), plan(std::move(p)), options(std::move(o)), collator(options.collator) {}

  int64_t size() const { return static_cast<int64_t>(plan.size()); }

  // Collates batch i and runs the transform; never throws.
  absl::StatusOr<Batch> Build(int64_t i) const {
    absl::Status status;
    try {
      absl::StatusOr<Batch> batch = collator.Collate(*corpus, plan[i]);
      if (batch.ok() && options.transform) {
        absl::Status s = options.transform(*batch);
        if (!s.ok()) batch = s;
      }
      if (batch.ok()) return batch;
      status = batch.status();
    } catch (const c10::Error& e) {
      status = absl::InternalError(e.what_without_backtrace());
    } catch (const std::exception& e) {
      status = absl::InternalError(absl::StrCat("exception: ", e.what()));
    } catch (...) {
      status = absl::UnknownError("unknown exception");
    }
    return absl::Status(status.code(),
                        absl::StrCat("loader: batch ", i, " of ", size(), " (",
                                     plan[i].num_sequences(), " sequences): ", status.message()));
  }

  void WorkerLoop() {
    while (true) {
      int64_t i;
      {
        std::unique_lock<std::mutex> lock(mu);
        while (!stop && next_claim < size() && next_claim >= consumed + options.prefetch) {
          changed.wait(lock);
        }
        if (stop || next_claim >= size()) return;
        i = next_claim++;
      }
      absl::StatusOr<Batch> batch = Build(i);
      std::unique_lock<std::mutex> lock(mu);
      if (stop) return;
      ready.emplace(i, std::move(batch));
      changed.notify_all();
    }
  }
};

Loader::Loader(std::unique_ptr<State> state) : state_(std::move(state)) {}

Loader::~Loader() { Shutdown(); }

absl::StatusOr<std::unique_ptr<Loader>> Loader::Create(const corpus::TokenizedCorpus* corpus,
                                                       std::vector<BatchSpec> plan,
                                                       LoaderOptions options) {
  if (corpus == nullptr) return absl::InvalidArgumentError("LoaderOptions: corpus is null");
  if (options.num_workers < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("LoaderOptions.num_workers: must be >= 0, got ", options.num_workers));
  }
  if (options.prefetch < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("LoaderOptions.prefetch: must be >= 1, got ", options.prefetch));
  }
  if (options.device.is_cuda()) {
    if (!at::globalContext().hasCUDA()) {
      return absl::FailedPreconditionError("LoaderOptions.device: CUDA requested but unavailable");
    }
    options.collator.pin_memory = true;
  }
  auto state = std::make_unique<State>(corpus, std::move(plan), std::move(options));
  State* s = state.get();
  for (int w = 0; w < s->options.num_workers; ++w)
    s->workers.emplace_back([s] { s->WorkerLoop(); });
  return std::unique_ptr<Loader>(new Loader(std::move(state)));
}

absl::StatusOr<std::optional<Batch>> Loader::Next() {
  State& s = *state_;
  if (!s.error.ok()) return s.error;
  absl::StatusOr<Batch> batch;
  int64_t index;
  if (s.options.num_workers == 0) {
    {
      std::unique_lock<std::mutex> lock(s.mu);
      if (s.stop || s.consumed >= s.size()) return std::nullopt;
      index = s.consumed++;
    }
    batch = s.Build(index);
  } else {
    std::unique_lock<std::mutex> lock(s.mu);
    if (s.stop || s.consumed >= s.size()) return std::nullopt;
    index = s.consumed;
    while (!s.stop && s.ready.find(index) == s.ready.end()) s.changed.wait(lock);
    if (s.stop) return std::nullopt;
    auto it = s.ready.find(index);
    batch = std::move(it->second);
    s.ready.erase(it);
    ++s.consumed;
    s.changed.notify_all();
  }
  if (!batch.ok()) {
    s.error = batch.status();
    Shutdown();
    return s.error;
  }
  if (s.options.device.is_cuda()) {
    try {
      return std::optional<Batch>(batch->To(s.options.device, /*non_blocking=*/true));
    } catch (const c10::Error& e) {
      s.error = absl::InternalError(absl::StrCat("loader: batch ", index, ": copy to ",
                                                 s.options.device.str(), ": ",
                                                 e.what_without_backtrace()));
      Shutdown();
      return s.error;
    }
  }
  return std::optional<Batch>(std::move(*batch));
}

int64_t Loader::size() const { return state_->size(); }

int64_t Loader::position() const {
  std::unique_lock<std::mutex> lock(state_->mu);
  return state_->consumed;
}

void Loader::Shutdown() {
  State& s = *state_;
  {
    std::unique_lock<std::mutex> lock(s.mu);
    s.stop = true;
    s.changed.notify_all();
  }
  for (std::thread& t : s.workers) {
    if (t.joinable()) t.join();
  }
  s.workers.clear();
  std::unique_lock<std::mutex> lock(s.mu);
  s.ready.clear();
}

}  // namespace padless::batching
