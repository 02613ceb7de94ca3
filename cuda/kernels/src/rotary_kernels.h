// Launcher of rotary.h's kernel. Raw pointers only (the .cu file includes no torch header).
#ifndef PADLESS_CUDA_SRC_ROTARY_KERNELS_H_
#define PADLESS_CUDA_SRC_ROTARY_KERNELS_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels.h"

namespace padless::cuda::internal {

// out [tokens, heads, head_dim] (contiguous) = x rotated by the angles whose cos and sin are the
// fp32 [tokens, head_dim] tables (first half used; the halves repeat): with x1, x2 the halves of a
// head's vector, out1 = x1 c - x2 s, out2 = x2 c + x1 s, in fp32, stored as `type`. `inverse`
// rotates by the negative angles (the backward). x's token rows are `x_row_stride` elements apart,
// its heads head_dim apart. head_dim is even.
cudaError_t LaunchRotary(const void* x, int64_t x_row_stride, const float* cos, const float* sin,
                         void* out, int64_t tokens, int64_t heads, int64_t head_dim, bool inverse,
                         FloatType type, cudaStream_t stream);

}  // namespace padless::cuda::internal

#endif  // PADLESS_CUDA_SRC_ROTARY_KERNELS_H_
