// cuDNN's fused attention (SDPA forward and backward) on packed varlen tokens, as
// cudnn_attention.cc calls it: one call's shape as its cached cuDNN graph sees it, the device
// pointers it runs on, and the run itself. Built only with PADLESS_CUDNN_ATTENTION
// (cmake/PadlessCudnnAttention.cmake); cudnn_sdpa.cc is the one file that includes the cuDNN
// frontend.
//
// Layout (cuDNN's THD "ragged" form): a [T, heads, head_dim] tensor whose token rows are
// `row_stride` elements apart is, to cuDNN, a [batch, heads, seqlen, head_dim] tensor with strides
// [-, head_dim, row_stride, 1] in which sequence i starts at element ragged_offset[i] =
// cu_seqlens[i] * row_stride. `batch` and `seqlen` are upper bounds (buckets): sequences past the
// real ones have length 0, and the seq_len tensors mask every row and key past each length.
//
// The backward's gradients dq, dk, dv have exactly the layouts (strides and ragged offsets) of q,
// k, v, as in every cuDNN ragged-backward user we know of (cuDNN frontend's own THD tests,
// LibTorch's nested-tensor path, Transformer Engine): cuDNN sizes and addresses its fp32 dQ
// accumulator from dq's layout, and a dq laid out unlike q gave a wrong dq on cuDNN 9.19 while
// dk and dv were right.
#ifndef PADLESS_CUDA_SRC_CUDNN_SDPA_H_
#define PADLESS_CUDA_SRC_CUDNN_SDPA_H_

#include <cstdint>
#include <tuple>

namespace padless::cuda::internal {

// What identifies one cached graph (besides the thread, see RunCudnnSdpa).
struct SdpaGraphKey {
  int device = 0;
  bool backward = false;
  bool stats = false;     // forward: write the softmax statistics (training)
  float dropout_p = 0.f;  // 0: no dropout nodes
  int64_t batch = 0;      // sequences (bucket)
  int64_t heads = 0;
  int64_t head_dim = 0;
  int64_t seqlen_q = 0;  // longest query sequence (bucket)
  int64_t seqlen_kv = 0;
  int64_t q_row_stride = 0;   // q's token rows (elements); outputs and dO are contiguous
  int64_t kv_row_stride = 0;  // k's and v's
  // Backward with BackwardUsesRaggedWorkspace() only (0 otherwise): bounds on the packed tokens
  // (CudnnTokenBound), which size its fp32 workspace (dQ accumulator, softmax sums) by the tokens
  // instead of batch x seqlen.
  int64_t tokens_q = 0;
  int64_t tokens_kv = 0;

  auto Tie() const {
    return std::tie(device, backward, stats, dropout_p, batch, heads, head_dim, seqlen_q, seqlen_kv,
                    q_row_stride, kv_row_stride, tokens_q, tokens_kv);
  }
  bool operator==(const SdpaGraphKey& o) const { return Tie() == o.Tie(); }
};

// Device pointers of one call. Index tensors are int32: seq_len_* [batch], *_offsets [batch + 1]
// (elements). seed and offset: int64 [1] each, with dropout only.
struct SdpaPointers {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  void* out = nullptr;    // forward output; backward input (contiguous rows)
  void* stats = nullptr;  // fp32 [tokens_q, heads]: forward output (if key.stats), backward input
  const void* d_out = nullptr;  // backward (contiguous rows)
  void* dq = nullptr;           // backward outputs: rows q_row_stride apart (q's layout)
  void* dk = nullptr;           // rows kv_row_stride apart (k's and v's layout)
  void* dv = nullptr;
  const void* seq_len_q = nullptr;
  const void* seq_len_kv = nullptr;
  const void* q_offsets = nullptr;      // cu_seqlens_q * q_row_stride (q, dq)
  const void* kv_offsets = nullptr;     // cu_seqlens_kv * kv_row_stride (k, v, dk, dv)
  const void* q_out_offsets = nullptr;  // cu_seqlens_q * heads * head_dim (out, dO)
  const void* stats_offsets = nullptr;  // cu_seqlens_q * heads
  const void* seed = nullptr;
  const void* offset = nullptr;
};

// Finds (or builds, validates and plans, once per key and thread: cuDNN does not promise that an
// execution plan may run on two threads at once) the graph of `key` and runs it on the current
// CUDA stream of the current device, its workspace from the caching allocator. Throws c10::Error
// with cuDNN's message when the graph is not supported or fails.
void RunCudnnSdpa(const SdpaGraphKey& key, const SdpaPointers& p);

// The cuDNN library version LibTorch loaded (e.g. 91900), or 0 when none is loaded.
int LoadedCudnnVersion();

// Whether the backward sizes its workspace by the packed tokens (max_total_seq_len, a THD dQ
// accumulator) rather than batch x seqlen (a dense BHSD one, as LibTorch's own cuDNN varlen path
// does). Off unless PADLESS_CUDNN_SDPA_RAGGED_WORKSPACE=1: the dense one is the better-trodden
// path; the ragged one saves memory. Read once per process.
bool BackwardUsesRaggedWorkspace();

}  // namespace padless::cuda::internal

#endif  // PADLESS_CUDA_SRC_CUDNN_SDPA_H_
