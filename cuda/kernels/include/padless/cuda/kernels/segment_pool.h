// SegmentPool: one vector per sequence from packed hidden states [T, H] and cu_seqlens, by mean
// (fp32 accumulation) or by the first ([CLS]) token, without padding the batch back first.
// CUDA tensors of fp32 / bf16 / fp16 use a fused kernel; everything else the torch ops. A half
// hidden state may pool straight into fp32 vectors (the mean kernel writes them), so that callers
// who want fp32 results need not copy the whole [T, H] state to fp32 first.
#ifndef PADLESS_CUDA_KERNELS_SEGMENT_POOL_H_
#define PADLESS_CUDA_KERNELS_SEGMENT_POOL_H_

#include <ATen/core/Tensor.h>

#include <optional>

#include "absl/status/statusor.h"

namespace padless::cuda {

enum class PoolMode { kMean, kCls };

// hidden: [T, H] floating point; cu_seqlens: int32 [n+1] on the same device with cu[n] == T.
// Returns [n, H] in hidden's dtype, or in `out_dtype` when set (hidden's dtype, or float32 for
// a floating hidden: the mean is then accumulated and written in fp32 without a float32 copy of
// hidden); InvalidArgument for another out_dtype. Empty sequences pool to zeros. Differentiable in
// `hidden`.
absl::StatusOr<at::Tensor> SegmentPool(const at::Tensor& hidden, const at::Tensor& cu_seqlens,
                                       PoolMode mode,
                                       std::optional<at::ScalarType> out_dtype = std::nullopt);

namespace reference {
// index_add_ (mean) / index_select (CLS) on any device.
absl::StatusOr<at::Tensor> SegmentPool(const at::Tensor& hidden, const at::Tensor& cu_seqlens,
                                       PoolMode mode,
                                       std::optional<at::ScalarType> out_dtype = std::nullopt);
}  // namespace reference

}  // namespace padless::cuda

#endif  // PADLESS_CUDA_KERNELS_SEGMENT_POOL_H_
