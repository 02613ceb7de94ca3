// FlashAttention-3 (Dao-AILab/flash-attention, hopper/, BSD-3-Clause) on packed varlen tokens: the
// forward and backward of softmax(q k^T / sqrt(head_dim)) v within each sequence, optionally
// within a sliding window, for bf16, head_dim 64, on sm90 (wgmma and TMA: Hopper only). What
// models' AttentionBackend::kVarlenFa3 runs; the FA2 path (at::_flash_attention_forward) is its
// reference. FA3 has no dropout: callers that drop attention probabilities use FA2.
//
// Built with PADLESS_FA3_ATTENTION (cmake/PadlessFa3Attention.cmake) from a library that
// scripts/build_fa3.sh compiles once from FA3's and CUTLASS's sources (the kernels take minutes of
// nvcc each, so no build of padless compiles them); without it Fa3AttentionBuilt() is false and
// the calls throw. Every call runs on the current stream, its scratch from the caching allocator,
// and never synchronizes with the host.
#ifndef PADLESS_CUDA_KERNELS_FA3_ATTENTION_H_
#define PADLESS_CUDA_KERNELS_FA3_ATTENTION_H_

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <array>
#include <cstdint>

#include "padless/cuda/kernels/cudnn_attention.h"  // VarlenSequences

namespace padless::cuda {

// Whether this build has FA3 attention.
bool Fa3AttentionBuilt();

// Whether FA3's kernels run on `device`: built, and a CUDA device of compute capability 9.0 (the
// kernels are sm90a: they do not run on Ada, nor on Blackwell). Cached per device; no sync.
bool Fa3AttentionRunsOn(const c10::Device& device);

// Keys seen by a query at position i of its sequence: [i - left, i + right], -1 for no bound on
// that side (both -1: global attention). Clipped to the sequence.
struct AttentionWindow {
  int64_t left = -1;
  int64_t right = -1;
};

struct Fa3Forward {
  at::Tensor out;  // [T_q, heads, 64] bf16, contiguous
  at::Tensor lse;  // fp32 [heads, T_q]: log-sum-exp of the scaled scores, for the backward
};

// q [T_q, heads, 64], k and v [T_kv, heads, 64], bf16 on one CUDA device of compute capability
// 9.0, each with contiguous heads x 64 rows whose stride is a multiple of 8 elements (the q/k/v
// thirds of one [T, 3, heads, 64] projection are taken in place). Sequences as VarlenSequences
// (empty ones allowed: their rows, if any, are zeros). Throws c10::Error on bad input.
Fa3Forward Fa3VarlenAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                              const VarlenSequences& seqs, AttentionWindow window);

// dq, dk, dv for d_out [T_q, heads, 64] of the forward `fwd` with the same q, k, v, sequences and
// window. Each gradient has its input's shape and token-row stride; for the thirds of one
// projection, the thirds of one such gradient buffer.
std::array<at::Tensor, 3> Fa3VarlenAttentionBackward(const at::Tensor& d_out, const at::Tensor& q,
                                                     const at::Tensor& k, const at::Tensor& v,
                                                     const Fa3Forward& fwd,
                                                     const VarlenSequences& seqs,
                                                     AttentionWindow window);

}  // namespace padless::cuda

#endif  // PADLESS_CUDA_KERNELS_FA3_ATTENTION_H_
