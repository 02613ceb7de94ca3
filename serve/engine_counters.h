// The engine's running counts (EngineStats), shared with every submission's state: a request's
// result may be set (by a cancel) after the engine that accepted it is gone.
#ifndef PADLESS_SERVE_ENGINE_COUNTERS_H_
#define PADLESS_SERVE_ENGINE_COUNTERS_H_

#include <atomic>
#include <cstdint>

#include "padless/serve/inference_engine.h"

namespace padless::serve::internal {

struct EngineCounters {
  std::atomic<int64_t> queued{0};
  std::atomic<int64_t> accepted{0};
  std::atomic<int64_t> rejected{0};
  std::atomic<int64_t> completed{0};
  std::atomic<int64_t> cancelled{0};
  std::atomic<int64_t> batches{0};
  std::atomic<int64_t> graphed_batches{0};

  EngineStats Snapshot() const {
    EngineStats s;
    s.queued = queued.load();
    s.accepted = accepted.load();
    s.rejected = rejected.load();
    s.completed = completed.load();
    s.cancelled = cancelled.load();
    s.batches = batches.load();
    s.graphed_batches = graphed_batches.load();
    return s;
  }
};

}  // namespace padless::serve::internal

#endif  // PADLESS_SERVE_ENGINE_COUNTERS_H_
