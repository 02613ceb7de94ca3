// Rotary position embeddings in one pass: each thread rotates one pair (x_i, x_{i + half}) of one
// head of one token, reading the pair and the token's cos/sin once and writing the pair once. The
// ATen form (fp32 copy, rotate_half's negation and concatenation, two products and a sum, the cast
// back) makes about nine passes over [T, heads, head_dim] per tensor.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "float_pack.cuh"
#include "float_type_dispatch.cuh"
#include "rotary_kernels.h"

namespace padless::cuda::internal {
namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void RotaryKernel(const T* __restrict__ x, int64_t x_row_stride,
                             const float* __restrict__ cos, const float* __restrict__ sin,
                             T* __restrict__ out, int64_t tokens, int64_t heads, int64_t head_dim,
                             float sin_sign) {
  const int64_t half = head_dim / 2;
  const int64_t pairs = tokens * heads * half;
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; p < pairs;
       p += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t i = p % half;
    const int64_t head = (p / half) % heads;
    const int64_t t = p / (half * heads);
    const T* in = x + t * x_row_stride + head * head_dim;
    const float x1 = ToFloat(in[i]);
    const float x2 = ToFloat(in[i + half]);
    const float c = __ldg(cos + t * head_dim + i);
    const float s = sin_sign * __ldg(sin + t * head_dim + i);
    T* o = out + (t * heads + head) * head_dim;
    o[i] = FromFloat<T>(x1 * c - x2 * s);
    o[i + half] = FromFloat<T>(x2 * c + x1 * s);
  }
}

}  // namespace

cudaError_t LaunchRotary(const void* x, int64_t x_row_stride, const float* cos, const float* sin,
                         void* out, int64_t tokens, int64_t heads, int64_t head_dim, bool inverse,
                         FloatType type, cudaStream_t stream) {
  const int64_t pairs = tokens * heads * (head_dim / 2);
  if (pairs == 0) return cudaSuccess;
  // A grid-stride loop: enough blocks to fill the GPU several times over, never more than needed.
  const int64_t blocks = std::min<int64_t>((pairs + kThreads - 1) / kThreads, 65535 * 8);
  const float sin_sign = inverse ? -1.f : 1.f;
  return DispatchType(type, cudaErrorInvalidValue, [&](auto tag) {
    using T = typename decltype(tag)::type;
    RotaryKernel<T><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
        static_cast<const T*>(x), x_row_stride, cos, sin, static_cast<T*>(out), tokens, heads,
        head_dim, sin_sign);
    return cudaGetLastError();
  });
}

}  // namespace padless::cuda::internal
