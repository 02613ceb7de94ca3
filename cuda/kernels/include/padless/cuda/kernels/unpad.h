// Unpad / Pad: move per-token tensors between the padded layout [B, L, ...] and the packed
// (varlen) layout [T, ...] described by cu_seqlens, as flash-attn's bert_padding does for
// right-padded batches: sequence b holds positions [0, len_b) of row b and rows
// [cu[b], cu[b+1]) of the packed tensor. CUDA tensors use fused kernels; others the torch ops.
#ifndef PADLESS_CUDA_KERNELS_UNPAD_H_
#define PADLESS_CUDA_KERNELS_UNPAD_H_

#include <ATen/core/Tensor.h>

#include <cstdint>

#include "absl/status/statusor.h"

namespace padless::cuda {

// padded: [B, L, ...] of any dtype. cu_seqlens: int32 [B+1] on the same device, starting at 0,
// non-decreasing, with every length <= L. total_tokens: cu_seqlens[B], or -1 to read it from the
// tensor (a device sync on a GPU). Returns a new contiguous [T, ...] tensor.
// Differentiable in `padded`: the backward is Pad.
absl::StatusOr<at::Tensor> Unpad(const at::Tensor& padded, const at::Tensor& cu_seqlens,
                                 int64_t total_tokens = -1);

// packed: [T, ...] of any dtype, T == cu_seqlens[B]. Returns [B, max_len, ...] with zeros on
// padding (a sequence longer than max_len is an error on the CPU and is truncated on a GPU).
// Differentiable in `packed`: the backward is Unpad.
absl::StatusOr<at::Tensor> Pad(const at::Tensor& packed, const at::Tensor& cu_seqlens,
                               int64_t max_len);

// The same operations built from index_select / index_copy_, on any device (tests and benchmarks
// use them as the baseline; they are also the path for non-CUDA tensors).
namespace reference {
absl::StatusOr<at::Tensor> Unpad(const at::Tensor& padded, const at::Tensor& cu_seqlens,
                                 int64_t total_tokens = -1);
absl::StatusOr<at::Tensor> Pad(const at::Tensor& packed, const at::Tensor& cu_seqlens,
                               int64_t max_len);
}  // namespace reference

}  // namespace padless::cuda

#endif  // PADLESS_CUDA_KERNELS_UNPAD_H_
