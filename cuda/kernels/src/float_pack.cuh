// Device-side helpers shared by the .cu files: fp32 <-> storage type conversions, a vector of kVec
// elements with the alignment of its size, for 16-byte (or narrower) loads and stores, and such a
// vector as loaded (Words) with its elements in fp32.
// CUDA-only (included by .cu files, never by C++ translation units).
#ifndef PADLESS_CUDA_SRC_FLOAT_PACK_CUH_
#define PADLESS_CUDA_SRC_FLOAT_PACK_CUH_

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstring>

namespace padless::cuda::internal {

__device__ __forceinline__ float ToFloat(float v) { return v; }
__device__ __forceinline__ float ToFloat(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float ToFloat(__half v) { return __half2float(v); }

template <typename T>
__device__ __forceinline__ T FromFloat(float v);
template <>
__device__ __forceinline__ float FromFloat<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ __nv_bfloat16 FromFloat<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}
template <>
__device__ __forceinline__ __half FromFloat<__half>(float v) {
  return __float2half_rn(v);
}

template <typename T, int kVec>
struct alignas(sizeof(T) * kVec) Pack {
  T v[kVec];
};

// A 16-byte vector as loaded: four 32-bit words. Held in this form between a load and its use it
// takes 4 registers, where ptxas splits a Pack<bf16, 8> into 8; and its copy is one 16-byte access.
using Words = uint4;

template <typename T>
__device__ __forceinline__ Words LoadWords(const T* p) {
  return *reinterpret_cast<const Words*>(p);
}

// The kVec elements of T in a vector, in fp32 (exact for every storage type). Element by element
// on purpose: a form by word pairs (shift and mask for bf16) saves an instruction per odd bf16
// element but moves the LayerNorm kernels' registers, and the backward sizes its grid, and so its
// column-sum order, by the occupancy those registers allow.
template <typename T, int kVec>
__device__ __forceinline__ void UnpackWords(const Words& words, float (&out)[kVec]) {
  static_assert(sizeof(Pack<T, kVec>) == sizeof(Words), "a vector is 16 bytes");
  Pack<T, kVec> pack;
  memcpy(&pack, &words, sizeof(pack));
#pragma unroll
  for (int k = 0; k < kVec; ++k) out[k] = ToFloat(pack.v[k]);
}

}  // namespace padless::cuda::internal

#endif  // PADLESS_CUDA_SRC_FLOAT_PACK_CUH_
