// BatchFormer: the batcher. It takes tokenized requests in arrival order (FIFO) and cuts device
// batches of up to max_tokens real tokens and max_sequences sequences (a request's windows may
// span batches). A batch goes out at once when the device is idle; while the device is busy the
// former keeps filling the next one until it is full or max_delay has passed since its first
// sequence was waiting. At most max_in_flight batches are formed but not finished, so the next
// batch is built (pinned host memory, asynchronous copy to the device) while the device runs the
// previous one. A request cancelled before its batch is built is left out.
#ifndef PADLESS_SERVE_BATCH_FORMER_H_
#define PADLESS_SERVE_BATCH_FORMER_H_

#include <c10/core/Device.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "pipeline.h"

namespace padless::serve::internal {

struct BatchLimits {
  int64_t max_tokens = 16384;
  int64_t max_sequences = 512;
  std::chrono::microseconds max_delay{0};
  int64_t max_in_flight = 2;
};

class BatchFormer {
 public:
  using Dispatch = std::function<void(FormedBatch)>;
  // `types`: the model reads token type ids (then pairs' batches carry them). Each batch goes to
  // `dispatch`, on the former's thread.
  BatchFormer(BatchLimits limits, c10::Device device, bool types, Dispatch dispatch);
  ~BatchFormer();  // Close(), Join()

  void Add(TokenizedRequest request);  // thread-safe
  // A dispatched batch has finished (its results are set): room for another.
  void BatchDone();
  // No more Add(); what is queued still goes out. Then Join() returns once it has.
  void Close();
  void Join();

 private:
  struct Taken {
    SequenceOwner owner;
    tokenize::Encoding sequence;
  };
  void Run();
  void WaitUntilReady(std::unique_lock<std::mutex>& lock, Clock::time_point deadline);
  std::vector<Taken> TakeLocked();
  void Build(std::vector<Taken> taken);

  const BatchLimits limits_;
  const c10::Device device_;
  const bool types_;
  const Dispatch dispatch_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<TokenizedRequest> queue_;
  int64_t queued_tokens_ = 0;
  int64_t queued_sequences_ = 0;
  int64_t in_flight_ = 0;
  bool closed_ = false;
  std::thread thread_;
};

}  // namespace padless::serve::internal

#endif  // PADLESS_SERVE_BATCH_FORMER_H_
