// The loader: worker threads collate the batches of a plan ahead of use into a bounded queue
// (pinned memory when CUDA is available) and hand them out in plan order, whatever the number of
// workers, optionally copied to a device with non_blocking. A worker's failure reaches the
// consumer as a status that names the batch; destroying the loader mid-epoch stops the workers.
#ifndef PADLESS_BATCHING_LOADER_H_
#define PADLESS_BATCHING_LOADER_H_

#include <c10/core/Device.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "padless/batching/batch.h"
#include "padless/batching/batch_spec.h"
#include "padless/batching/collator.h"
#include "padless/corpus/tokenized_corpus.h"

namespace padless::batching {

struct LoaderOptions {
  int num_workers = 2;       // 0: collate on the consumer's thread
  int prefetch = 4;          // batches built ahead of the consumer (>= 1)
  CollatorOptions collator;  // pin_memory is turned on automatically for a CUDA device
  // Where Next() delivers batches; a CUDA device gets a non_blocking copy from pinned memory.
  c10::Device device = c10::Device(c10::kCPU);
  // Optional per-batch work done in the workers after collation (e.g. masking for MLM). Several
  // workers call it at once, so it must be thread-safe. It may throw or return an error; either
  // reaches the consumer from Next() with the batch's context.
  std::function<absl::Status(Batch&)> transform;
};

class Loader {
 public:
  // `corpus` must outlive the loader. Batches come out in the order of `plan`.
  static absl::StatusOr<std::unique_ptr<Loader>> Create(const corpus::TokenizedCorpus* corpus,
                                                        std::vector<BatchSpec> plan,
                                                        LoaderOptions options);
  ~Loader();  // stops and joins the workers, also mid-epoch
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  // The next batch in plan order; std::nullopt after the last. A worker's error is returned once
  // it is this batch's turn; after an error the loader is stopped and keeps returning it.
  absl::StatusOr<std::optional<Batch>> Next();

  int64_t size() const;      // batches in the plan
  int64_t position() const;  // batches handed out so far

  // Stops the workers and drops the queued batches; Next() then returns std::nullopt. Idempotent.
  void Shutdown();

 private:
  struct State;
  explicit Loader(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace padless::batching

#endif  // PADLESS_BATCHING_LOADER_H_
