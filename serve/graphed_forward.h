// GraphedForward: the engine's forward of small batches as CUDA graph replays (issue 26).
//
// A batch of a few texts is bound by the host: launching BERT-base's kernels takes ~2 ms while
// the GPU needs ~0.5 ms for one IMDB text; replaying a captured graph removes the launches
// (3.97x for one text, 2.09x for four, nothing from ~16 texts on: bench/serve/README.md).
// A graph replays fixed shapes and addresses, so at load one graph is captured per token-count
// bucket (128, 256, ... tokens) over static input tensors, and a batch is copied into the
// smallest bucket that holds it:
//   - its T real tokens go first; the bucket's B - T left-over tokens (at least one) form
//     "absorber" sequences of at most the bucket's max_seqlen tokens, so every token the kernels
//     touch belongs to some sequence and stays finite (stale ids and positions from earlier
//     batches, all valid);
//   - sequence slots after the absorbers are empty sequences starting at B - 1, so pooling reads
//     in bounds; attention is block-diagonal and every other op works row by row, so neither
//     changes the real rows;
//   - the forward it is given is captured for every slot (a classifier's logits, fp32 cast and
//     softmax; an embedding model's encoder, segment pooling over the bucket's cu_seqlens and
//     Dense modules), and the first n rows of each of its outputs are the batch's results.
// The results match the eager forward within the GEMMs' reordering (cuBLAS may choose other
// kernels for B rows than for T rows); tests/serve/graphed_forward_test.cc holds them to that.
// Only batches without token types (single texts, not pairs) run here.
//
// Thread-compatible: the device worker owns it and replays on its current stream, the stream
// the batch former's copies were issued on.
#ifndef PADLESS_SERVE_GRAPHED_FORWARD_H_
#define PADLESS_SERVE_GRAPHED_FORWARD_H_

#include <ATen/core/Tensor.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "padless/batching/batch.h"

namespace padless::serve::internal {

class GraphedForward {
 public:
  struct Options {
    // Buckets are 128 * 2^k tokens up to this many (and no larger than the first bucket that
    // holds max_batch_tokens), so batches of up to this many tokens less one replay a graph.
    int64_t max_tokens = 4096;
    int64_t max_batch_tokens = 16384;
    int64_t max_len = 512;  // the engine's longest sequence: the buckets' max_seqlen at most
  };
  // What is captured: the engine's forward of a device batch (its head included, under its
  // autocast and in inference mode, without a host sync), returning tensors whose rows are the
  // batch's sequences, [num_sequences, ...] each. The model and weights it uses must outlive the
  // graphs, at the same addresses.
  using Forward = std::function<std::vector<at::Tensor>(const batching::Batch&)>;
  // A batch's results: the first n rows of each of the forward's outputs, views into the graph's
  // outputs, valid until the next Run. Copy them out on the current stream before then.
  using Result = std::vector<at::Tensor>;

  // Captures `forward` once per bucket on a side stream of `device`, after two eager warm-up
  // forwards each (lazy cuBLAS and flash set-up must not happen inside a capture); `forward` is
  // not kept. Internal error when a forward cannot be captured (a host sync, a pageable copy).
  static absl::StatusOr<std::unique_ptr<GraphedForward>> Capture(const Forward& forward,
                                                                 c10::Device device,
                                                                 const Options& options);

  // Replays the smallest bucket that holds `batch` (kVarlen, on the device, no token types) whose
  // sequences have `lengths` tokens; nullopt when no bucket holds it (run it eagerly then).
  std::optional<Result> Run(const batching::Batch& batch, absl::Span<const int64_t> lengths);

  // The buckets' token counts, smallest first.
  std::vector<int64_t> BucketTokens() const;

 private:
  struct Bucket {
    int64_t tokens = 0;      // B: token rows computed
    int64_t max_seqlen = 0;  // min(max_len, B): the flash kernel's, and every absorber's bound
    int64_t capacity = 0;    // real sequences at most
    int64_t slots = 0;       // sequences computed: capacity plus enough absorbers for B tokens
    at::Tensor ids, positions, cu_seqlens;  // static inputs: [B] int64, [B] int64, [slots+1] int32
    std::vector<at::Tensor> out;            // static outputs, [slots, ...] each
    std::unique_ptr<at::cuda::CUDAGraph> graph;
  };

  GraphedForward() = default;
  static Bucket MakeBucket(int64_t tokens, int64_t max_len, c10::Device device);
  using Pool = decltype(at::cuda::graph_pool_handle());
  static void CaptureBucket(const Forward& forward, Bucket& bucket, Pool pool);
  // The bucket's static inputs as the model's batch.
  static batching::Batch StaticBatch(const Bucket& bucket);
  // The bucket's cu_seqlens for real sequences of `lengths` (T tokens in all), in pinned memory.
  static at::Tensor CuSeqlens(const Bucket& bucket, absl::Span<const int64_t> lengths,
                              int64_t real_tokens);

  std::vector<Bucket> buckets_;
};

}  // namespace padless::serve::internal

#endif  // PADLESS_SERVE_GRAPHED_FORWARD_H_
