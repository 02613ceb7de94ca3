#include "graphed_forward.h"

#include <ATen/ATen.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace padless::serve::internal {

namespace {

constexpr int64_t kSmallestBucket = 128;
// Real sequences a bucket of B tokens holds: B / 16 (texts of 16 tokens or more fill it by
// tokens first), at least 8. More sequence slots cost empty flash-attention blocks every layer.
constexpr int64_t kTokensPerSlot = 16;
constexpr int64_t kMinCapacity = 8;

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

absl::StatusOr<std::unique_ptr<GraphedForward>> GraphedForward::Capture(const Forward& forward,
                                                                        c10::Device device,
                                                                        const Options& options) {
  std::unique_ptr<GraphedForward> g(new GraphedForward());
  int64_t tokens = kSmallestBucket;
  try {
    const c10::cuda::CUDAGuard device_guard(device);
    // Graphs capture off the default stream; replays may go to any stream.
    const c10::cuda::CUDAStreamGuard stream(c10::cuda::getStreamFromPool());
    // One memory pool for every bucket: replays are serial on one stream, and each batch's
    // results are copied out before the next replay.
    const Pool pool = at::cuda::graph_pool_handle();
    for (; tokens <= options.max_tokens; tokens *= 2) {
      g->buckets_.push_back(MakeBucket(tokens, options.max_len, device));
      CaptureBucket(forward, g->buckets_.back(), pool);
      if (tokens > options.max_batch_tokens) break;  // holds every batch already
    }
    c10::cuda::getCurrentCUDAStream().synchronize();
  } catch (const c10::Error& e) {
    return absl::InternalError(absl::StrCat("CUDA graphs: capturing the forward of a ", tokens,
                                            "-token batch failed (a graph max of "
                                            "0 tokens turns graphs off): ",
                                            e.what_without_backtrace()));
  }
  return g;
}

GraphedForward::Bucket GraphedForward::MakeBucket(int64_t tokens, int64_t max_len,
                                                  c10::Device device) {
  Bucket b;
  b.tokens = tokens;
  b.max_seqlen = std::min(max_len, tokens);
  b.capacity = std::max(kMinCapacity, tokens / kTokensPerSlot);
  // Absorbers for B - T <= B left-over tokens, at most max_seqlen each (CuSeqlens).
  b.slots = b.capacity + CeilDiv(tokens, b.max_seqlen);
  const at::TensorOptions on_device = at::TensorOptions().device(device);
  b.ids = at::zeros({tokens}, on_device.dtype(at::kLong));
  b.positions = at::zeros({tokens}, on_device.dtype(at::kLong));
  b.cu_seqlens = CuSeqlens(b, {}, 0).to(device);  // no real sequence: all absorbers
  return b;
}

batching::Batch GraphedForward::StaticBatch(const Bucket& bucket) {
  batching::Batch batch;
  batch.layout = batching::Layout::kVarlen;
  batch.input_ids = bucket.ids;
  batch.position_ids = bucket.positions;
  batch.cu_seqlens = bucket.cu_seqlens;
  batch.max_seqlen = bucket.max_seqlen;
  batch.num_sequences = bucket.slots;
  batch.real_tokens = bucket.tokens;
  return batch;
}

void GraphedForward::CaptureBucket(const Forward& forward, Bucket& bucket, Pool pool) {
  const batching::Batch batch = StaticBatch(bucket);
  for (int i = 0; i < 2; ++i) forward(batch);
  bucket.graph = std::make_unique<at::cuda::CUDAGraph>();
  // Thread-local capture: other threads of the process may use CUDA meanwhile.
  bucket.graph->capture_begin(pool, cudaStreamCaptureModeThreadLocal);
  bucket.out = forward(batch);
  bucket.graph->capture_end();
}

at::Tensor GraphedForward::CuSeqlens(const Bucket& bucket, absl::Span<const int64_t> lengths,
                                     int64_t real_tokens) {
  at::Tensor cu =
      at::empty({bucket.slots + 1}, at::TensorOptions().dtype(at::kInt).pinned_memory(true));
  int32_t* c = cu.data_ptr<int32_t>();
  const int64_t n = static_cast<int64_t>(lengths.size());
  c[0] = 0;
  for (int64_t i = 0; i < n; ++i) c[i + 1] = static_cast<int32_t>(c[i] + lengths[i]);
  // Absorbers of max_seqlen tokens from T on; once the bucket is covered, empty sequences at
  // B - 1, and the last slot ends at B (so it holds at least token B - 1).
  for (int64_t j = 1; n + j < bucket.slots; ++j) {
    c[n + j] =
        static_cast<int32_t>(std::min(real_tokens + j * bucket.max_seqlen, bucket.tokens - 1));
  }
  c[bucket.slots] = static_cast<int32_t>(bucket.tokens);
  return cu;
}

std::optional<GraphedForward::Result> GraphedForward::Run(const batching::Batch& batch,
                                                          absl::Span<const int64_t> lengths) {
  if (batch.layout != batching::Layout::kVarlen || batch.token_type_ids.defined()) {
    return std::nullopt;
  }
  const int64_t n = static_cast<int64_t>(lengths.size());
  const int64_t tokens = batch.input_ids.size(0);
  auto holds = [&](const Bucket& b) { return tokens < b.tokens && n <= b.capacity; };
  auto bucket = std::find_if(buckets_.begin(), buckets_.end(), holds);
  if (bucket == buckets_.end()) return std::nullopt;
  bucket->ids.narrow(0, 0, tokens).copy_(batch.input_ids, /*non_blocking=*/true);
  bucket->positions.narrow(0, 0, tokens).copy_(batch.position_ids, /*non_blocking=*/true);
  bucket->cu_seqlens.copy_(CuSeqlens(*bucket, lengths, tokens), /*non_blocking=*/true);
  bucket->graph->replay();
  Result rows;
  rows.reserve(bucket->out.size());
  for (const at::Tensor& t : bucket->out) rows.push_back(t.narrow(0, 0, n));
  return rows;
}

std::vector<int64_t> GraphedForward::BucketTokens() const {
  std::vector<int64_t> tokens;
  for (const Bucket& b : buckets_) tokens.push_back(b.tokens);
  return tokens;
}

}  // namespace padless::serve::internal
