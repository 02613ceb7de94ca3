// WorkQueue: the unbounded FIFO between two stages of the engine. Admission bounds what enters
// the engine as a whole, so the stages need no bound of their own. Close() lets the consumers
// drain what is there, then Pop() returns nullopt.
#ifndef PADLESS_SERVE_WORK_QUEUE_H_
#define PADLESS_SERVE_WORK_QUEUE_H_

#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <utility>

namespace padless::serve::internal {

template <typename T>
class WorkQueue {
 public:
  void Push(T item) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      items_.push_back(std::move(item));
    }
    cv_.notify_one();
  }

  // Blocks until an item is there (FIFO) or the queue is closed and empty (nullopt).
  std::optional<T> Pop() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return !items_.empty() || closed_; });
    if (items_.empty()) return std::nullopt;
    T item = std::move(items_.front());
    items_.pop_front();
    return item;
  }

  void Close() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      closed_ = true;
    }
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<T> items_;
  bool closed_ = false;
};

}  // namespace padless::serve::internal

#endif  // PADLESS_SERVE_WORK_QUEUE_H_
