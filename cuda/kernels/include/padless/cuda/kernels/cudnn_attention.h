// cuDNN's fused attention (through the header-only cuDNN frontend) on packed varlen tokens: the
// forward and backward of softmax(q k^T / sqrt(head_dim)) v within each sequence, with Philox
// dropout on the probabilities, for bf16 on Hopper (cuDNN's ragged layouts need sm90). What
// models' AttentionBackend::kVarlenCudnn runs; the FA2 path (at::_flash_attention_forward) is its
// reference.
//
// Built with PADLESS_CUDNN_ATTENTION (cmake/PadlessCudnnAttention.cmake); without it
// CudnnAttentionBuilt() is false and the calls throw. cuDNN graphs are built once per shape bucket
// (sequences, longest sequence, tokens; each rounded up to 1 or 1.5 times a power of two), heads,
// head_dim, q/k/v row strides and dropout, and per thread; later calls in the same bucket only
// run. Every call runs on the current stream, its workspace from the caching allocator.
//
// Two environment switches, read once per process, for checking cuDNN versions against each other
// (src/cudnn_sdpa.h): PADLESS_CUDNN_SDPA_FORWARD=auto lets the cuDNN frontend pick the forward's
// engine (default: the COMPOSITE fused-attention engine; AUTO picks the UNIFIED one from cuDNN
// 9.15 on without dropout, and such a forward failed on cuDNN 9.19 with an illegal instruction on
// IMDB's shape);
// PADLESS_CUDNN_SDPA_RAGGED_WORKSPACE=1 sizes the backward's workspace by the packed tokens
// (default: by batch x longest sequence, as LibTorch's own cuDNN varlen path does).
#ifndef PADLESS_CUDA_KERNELS_CUDNN_ATTENTION_H_
#define PADLESS_CUDA_KERNELS_CUDNN_ATTENTION_H_

#include <ATen/core/Tensor.h>

#include <array>
#include <cstdint>
#include <optional>

namespace padless::cuda {

// Whether this build has cuDNN attention.
bool CudnnAttentionBuilt();

// The cuDNN library version in use (e.g. 91900 for 9.19.0: LibTorch's), which decides which of
// cuDNN's attention fixes apply; 0 in a build without cuDNN attention. Throws if none is loaded.
int CudnnLibraryVersion();

// The sequences of a call. cu_seqlens_*: int32 [n + 1] on the tokens' device, non-decreasing from
// 0 (empty sequences allowed), the last equal to the token count; max_seqlen_*: at least the
// longest sequence (the graph is chosen by it, the result does not depend on it).
struct VarlenSequences {
  at::Tensor cu_seqlens_q;
  at::Tensor cu_seqlens_kv;
  int64_t max_seqlen_q = 0;
  int64_t max_seqlen_kv = 0;
};

struct CudnnAttentionForward {
  at::Tensor out;    // [T_q, heads, head_dim], contiguous, q's dtype
  at::Tensor stats;  // fp32 [T_q, heads]: log-sum-exp of the scaled scores (save_stats only)
  at::Tensor rng;    // int64 [2] on the device: the dropout's Philox seed and offset (dropout only)
};

struct CudnnAttentionGrads {
  // The shapes and the token-row strides of q, k, v (cuDNN writes each in its input's layout):
  // for the thirds of one [T, 3, heads, head_dim] projection, the thirds of one such gradient.
  at::Tensor dq, dk, dv;
};

// q [T_q, heads, head_dim], k and v [T_kv, heads, head_dim], bf16 on a CUDA device, each with
// contiguous rows of heads x head_dim (token rows may be further apart: the q/k/v thirds of one
// [T, 3, heads, head_dim] projection are taken in place). `dropout_p` in [0, 1) drops attention
// probabilities with a seed and offset drawn from the default CUDA generator (the state that
// RNG snapshots restore, so a recompute drops the same). `save_stats`: keep what the backward
// needs. Throws c10::Error on bad input or a cuDNN failure.
CudnnAttentionForward CudnnVarlenAttention(const at::Tensor& q, const at::Tensor& k,
                                           const at::Tensor& v, const VarlenSequences& seqs,
                                           double dropout_p, bool save_stats);

// The gradients of CudnnVarlenAttention's output `fwd` (made with save_stats) for d_out [T_q,
// heads, head_dim], the same q, k, v, sequences and dropout_p; the dropout mask is the forward's
// (fwd.rng).
CudnnAttentionGrads CudnnVarlenAttentionBackward(const at::Tensor& d_out, const at::Tensor& q,
                                                 const at::Tensor& k, const at::Tensor& v,
                                                 const CudnnAttentionForward& fwd,
                                                 const VarlenSequences& seqs, double dropout_p);

// dq, dk, dv (uninitialised) in q's, k's and v's layouts, as attention kernels that write each
// gradient with its input's strides want them: for the q/k/v thirds of one [T, 3, heads,
// head_dim] projection, the thirds of one such gradient (one buffer, so the projection's backward
// reads one matrix); else one buffer each. Any device and dtype (q's).
CudnnAttentionGrads AllocateMirroredGradients(const at::Tensor& q, const at::Tensor& k,
                                              const at::Tensor& v);

// The smallest bucket value (1 or 1.5 times a power of two: 1, 2, 3, 4, 6, 8, 12, ...) at least
// n (n >= 1). How the graph cache rounds its shapes; public for the tests.
int64_t CudnnShapeBucket(int64_t n);

// The bound on packed tokens (n >= 0) that sizes the backward's ragged workspace: the shape
// bucket, rounded up to a multiple of 64 (cuDNN's frontend tests round max_total_seq_len so: the
// kernels work in tiles of 64 rows). Public for the tests.
int64_t CudnnTokenBound(int64_t n);

// Where dq, dk and dv go in one gradient buffer of `row_stride`-element token rows that mirrors q,
// k and v, given their storage offsets (elements, in one storage) and their rows of `width` =
// heads x head_dim elements: each gradient's offset from the buffer's start. Empty when the three
// rows do not lie side by side within one row stride without overlapping (q and k the same
// tensor, say): then each gradient gets a buffer of its own. Public for the tests.
std::optional<std::array<int64_t, 3>> MirroredGradientOffsets(const std::array<int64_t, 3>& offsets,
                                                              int64_t row_stride, int64_t width);

}  // namespace padless::cuda

#endif  // PADLESS_CUDA_KERNELS_CUDNN_ATTENTION_H_
