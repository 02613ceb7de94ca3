// Device-side helpers shared by the .cu files: fp32 <-> storage type conversions and a vector of
// kVec elements with the alignment of its size, for 16-byte (or narrower) loads and stores.
// CUDA-only (included by .cu files, never by C++ translation units).
#ifndef PADLESS_CUDA_SRC_FLOAT_PACK_CUH_
#define PADLESS_CUDA_SRC_FLOAT_PACK_CUH_

#include <cuda_bf16.h>
#include <cuda_fp16.h>

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

}  // namespace padless::cuda::internal

#endif  // PADLESS_CUDA_SRC_FLOAT_PACK_CUH_
