// TokenizerPool: the threads that turn admitted requests into model inputs (request_encoder.h),
// beside the device, so that tokenization overlaps the forward passes. The Tokenizer is const
// and thread-safe. A request whose tokenization fails gets that error as its result; a cancelled
// one is skipped.
#ifndef PADLESS_SERVE_TOKENIZER_POOL_H_
#define PADLESS_SERVE_TOKENIZER_POOL_H_

#include <functional>
#include <thread>
#include <vector>

#include "padless/tokenize/tokenizer.h"
#include "pipeline.h"
#include "request_encoder.h"
#include "work_queue.h"

namespace padless::serve::internal {

class TokenizerPool {
 public:
  using Emit = std::function<void(TokenizedRequest)>;
  // Starts `threads` threads reading `input` until it is closed and drained; each tokenized
  // request goes to `emit` (called from those threads). Everything given must outlive Join().
  TokenizerPool(const tokenize::Tokenizer* tokenizer, RequestEncoding options,
                WorkQueue<WorkItem>* input, Emit emit, int threads);
  ~TokenizerPool();  // Join()

  // Returns once `input` is closed and every item of it handled.
  void Join();

 private:
  void Run();

  const tokenize::Tokenizer* tokenizer_;
  const RequestEncoding options_;
  WorkQueue<WorkItem>* input_;
  const Emit emit_;
  std::vector<std::thread> threads_;
};

}  // namespace padless::serve::internal

#endif  // PADLESS_SERVE_TOKENIZER_POOL_H_
