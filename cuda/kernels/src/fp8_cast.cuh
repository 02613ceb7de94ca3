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

// v[0..kVec) (4 or 8 values, already rounded to the 16-bit type they stand for) times `scale`, as
// kVec FP8 bytes at p (4- or 8-byte aligned); max |v| folded into m (fmaxf ignores NaN).
template <Fp8Type F, int kVec>
__device__ __forceinline__ void StoreFp8(uint8_t* p, const float (&v)[kVec], float scale,
                                         float& m) {
  static_assert(kVec == 4 || kVec == 8, "one or two FP8 words");
  float scaled[kVec];
#pragma unroll
  for (int k = 0; k < kVec; ++k) {
    m = fmaxf(m, fabsf(v[k]));
    scaled[k] = __fmul_rn(v[k], scale);
  }
  if constexpr (kVec == 8) {
    *reinterpret_cast<uint2*>(p) = make_uint2(Fp8x4<F>(scaled), Fp8x4<F>(scaled + 4));
  } else {
    *reinterpret_cast<uint32_t*>(p) = Fp8x4<F>(scaled);
  }
}

// kVec zero bytes at p, as StoreFp8 stores kVec values (zero is +0 in both formats): padding rows.
template <int kVec>
__device__ __forceinline__ void StoreFp8Zeros(uint8_t* p) {
  static_assert(kVec == 4 || kVec == 8, "one or two FP8 words");
  if constexpr (kVec == 8) {
    *reinterpret_cast<uint2*>(p) = make_uint2(0u, 0u);
  } else {
    *reinterpret_cast<uint32_t*>(p) = 0u;
  }
}

// StoreFp8 in the format of `out`.
template <int kVec>
__device__ __forceinline__ void StoreFp8(const Fp8RowsOutput& out, uint8_t* p,
                                         const float (&v)[kVec], float scale, float& m) {
  if (out.format == Fp8Type::kE5M2) {
    StoreFp8<Fp8Type::kE5M2, kVec>(p, v, scale, m);
  } else {
    StoreFp8<Fp8Type::kE4M3, kVec>(p, v, scale, m);
  }
}

// Folds the max of m over the calling warp's active lanes into *amax (m >= 0, so the float bits
// order as ints). Call with the warp converged; no block barrier.
__device__ __forceinline__ void WarpMaxToAmax(float m, float* amax) {
  const unsigned lanes = __activemask();
  for (int offset = 16; offset > 0; offset /= 2) m = fmaxf(m, __shfl_xor_sync(lanes, m, offset));
  if (amax != nullptr && threadIdx.x % 32 == __ffs(lanes) - 1) {
    atomicMax(reinterpret_cast<int*>(amax), __float_as_int(m));
  }
}

}  // namespace padless::cuda::internal

#endif  // PADLESS_CUDA_SRC_FP8_CAST_CUH_
