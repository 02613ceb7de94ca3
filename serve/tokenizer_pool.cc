#include "tokenizer_pool.h"

#include <utility>

#include "absl/status/status.h"

namespace padless::serve::internal {

TokenizerPool::TokenizerPool(const tokenize::Tokenizer* tokenizer, RequestEncoding options,
                             WorkQueue<WorkItem>* input, Emit emit, int threads)
    : tokenizer_(tokenizer), options_(options), input_(input), emit_(std::move(emit)) {
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Run(); });
}

TokenizerPool::~TokenizerPool() { Join(); }

void TokenizerPool::Join() {
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
}

void TokenizerPool::Run() {
  while (std::optional<WorkItem> item = input_->Pop()) {
    RequestHandle::State& state = *item->state;
    if (!state.Pending(item->index)) continue;  // cancelled while queued
    absl::StatusOr<std::vector<tokenize::Encoding>> sequences =
        EncodeRequest(*tokenizer_, state.requests[item->index], options_);
    if (!sequences.ok()) {
      state.Finish(item->index, sequences.status());
      continue;
    }
    state.sums[item->index].windows = static_cast<int64_t>(sequences->size());
    emit_(TokenizedRequest{std::move(item->state), item->index, std::move(*sequences), 0});
  }
}

}  // namespace padless::serve::internal
