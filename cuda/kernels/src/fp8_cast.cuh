// Device-side helpers of the two FP8 casts (fp8_quantize_kernels.cu, fp8_rowwise_kernels.cu): eight
// elements of a row loaded as fp32, and four scaled fp32 values written as four FP8 bytes the way
// torch's cast writes them.
// CUDA-only (included by .cu files, never by C++ translation units).
#ifndef PADLESS_CUDA_SRC_FP8_CAST_CUH_
#define PADLESS_CUDA_SRC_FP8_CAST_CUH_

#include <cuda_fp8.h>

#include <cstdint>

#include "float_pack.cuh"
#include "fp8_quantize_kernels.h"

namespace padless::cuda::internal {

constexpr int kFp8Vec = 8;  // elements a thread converts at once: one 8-byte store

// x[0..8) as fp32: one 16-byte load of a 16-bit type, two of fp32.
template <typename T>
__device__ __forceinline__ void LoadFloats(const T* __restrict__ p, float (&f)[kFp8Vec]) {
  const Pack<T, kFp8Vec> v = *reinterpret_cast<const Pack<T, kFp8Vec>*>(p);
#pragma unroll
  for (int i = 0; i < kFp8Vec; ++i) f[i] = ToFloat(v.v[i]);
}

template <>
__device__ __forceinline__ void LoadFloats<float>(const float* __restrict__ p,
                                                 float (&f)[kFp8Vec]) {
#pragma unroll
  for (int h = 0; h < kFp8Vec; h += 4) {
    const Pack<float, 4> v = *reinterpret_cast<const Pack<float, 4>*>(p + h);
#pragma unroll
    for (int i = 0; i < 4; ++i) f[h + i] = v.v[i];
  }
}

// Four scaled values as four fp8 bytes, v[0] in the lowest (the first in memory).
template <Fp8Type F>
__device__ __forceinline__ uint32_t Fp8x4(const float* v) {
  constexpr __nv_fp8_interpretation_t kFormat = F == Fp8Type::kE4M3 ? __NV_E4M3 : __NV_E5M2;
  uint32_t word = __nv_cvt_float2_to_fp8x2(make_float2(v[0], v[1]), __NV_SATFINITE, kFormat);
  word |= static_cast<uint32_t>(
              __nv_cvt_float2_to_fp8x2(make_float2(v[2], v[3]), __NV_SATFINITE, kFormat))
          << 16;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    if (isnan(v[i])) {  // c10's NaN byte: 0x7f with the value's sign (fp8_quantize_kernels.cu)
      const uint32_t nan = 0x7fu | ((__float_as_uint(v[i]) >> 24) & 0x80u);
      word = (word & ~(0xffu << (8 * i))) | (nan << (8 * i));
    }
  }
  return word;
}

}  // namespace padless::cuda::internal

#endif  // PADLESS_CUDA_SRC_FP8_CAST_CUH_
