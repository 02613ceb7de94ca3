// Mean pooling of packed hidden states per sequence: one block per (sequence, column tile); the
// 8 warps of a block stride over the sequence's tokens with 16-byte loads and reduce in shared
// memory. Accumulation is fp32 for every input type; the output is the input's type or fp32 (a
// half hidden state pooled into fp32 vectors without an fp32 copy of the whole state first).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "float_pack.cuh"
#include "kernels.h"

namespace padless::cuda::internal {
namespace {

constexpr int kLanes = 32;
constexpr int kWarps = 8;

template <typename T, typename TOut, int kVec>
__global__ void SegmentMeanKernel(const T* __restrict__ in, TOut* __restrict__ out,
                                  const int32_t* __restrict__ cu, int64_t hidden) {
  __shared__ float partial[kWarps][kLanes * kVec];
  const int64_t b = blockIdx.y;
  const int64_t begin = __ldg(cu + b);
  const int64_t end = __ldg(cu + b + 1);
  const int64_t col = (static_cast<int64_t>(blockIdx.x) * kLanes + threadIdx.x) * kVec;
  float acc[kVec];
#pragma unroll
  for (int k = 0; k < kVec; ++k) acc[k] = 0.f;
  if (col < hidden) {
    for (int64_t t = begin + threadIdx.y; t < end; t += kWarps) {
      const Pack<T, kVec> p = *reinterpret_cast<const Pack<T, kVec>*>(in + t * hidden + col);
#pragma unroll
      for (int k = 0; k < kVec; ++k) acc[k] += ToFloat(p.v[k]);
    }
  }
#pragma unroll
  for (int k = 0; k < kVec; ++k) partial[threadIdx.y][threadIdx.x * kVec + k] = acc[k];
  __syncthreads();
  if (threadIdx.y != 0 || col >= hidden) return;
  const float scale = end > begin ? 1.f / static_cast<float>(end - begin) : 0.f;
  Pack<TOut, kVec> result;
#pragma unroll
  for (int k = 0; k < kVec; ++k) {
    float sum = 0.f;
    for (int w = 0; w < kWarps; ++w) sum += partial[w][threadIdx.x * kVec + k];
    result.v[k] = FromFloat<TOut>(sum * scale);
  }
  *reinterpret_cast<Pack<TOut, kVec>*>(out + b * hidden + col) = result;
}

template <typename T, typename TOut>
cudaError_t Launch(const void* in, void* out, const int32_t* cu, int64_t batch, int64_t hidden,
                   cudaStream_t stream) {
  // 16-byte loads; the stores are as wide as kWide outputs (32 bytes for bf16 in, fp32 out).
  constexpr int kWide = 16 / sizeof(T);
  const dim3 block(kLanes, kWarps);
  const bool aligned = hidden % kWide == 0 && reinterpret_cast<uintptr_t>(in) % 16 == 0 &&
                       reinterpret_cast<uintptr_t>(out) % alignof(Pack<TOut, kWide>) == 0;
  const auto* src = static_cast<const T*>(in);
  auto* dst = static_cast<TOut*>(out);
  if (aligned) {
    const dim3 grid(static_cast<unsigned>((hidden / kWide + kLanes - 1) / kLanes),
                    static_cast<unsigned>(batch));
    SegmentMeanKernel<T, TOut, kWide><<<grid, block, 0, stream>>>(src, dst, cu, hidden);
  } else {
    const dim3 grid(static_cast<unsigned>((hidden + kLanes - 1) / kLanes),
                    static_cast<unsigned>(batch));
    SegmentMeanKernel<T, TOut, 1><<<grid, block, 0, stream>>>(src, dst, cu, hidden);
  }
  return cudaGetLastError();
}

// The input's type, or fp32 when `float_out`.
template <typename T>
cudaError_t LaunchInto(const void* in, void* out, const int32_t* cu, int64_t batch, int64_t hidden,
                       bool float_out, cudaStream_t stream) {
  return float_out ? Launch<T, float>(in, out, cu, batch, hidden, stream)
                   : Launch<T, T>(in, out, cu, batch, hidden, stream);
}

}  // namespace

cudaError_t LaunchSegmentMean(const void* in, void* out, const int32_t* cu_seqlens, int64_t batch,
                              int64_t hidden, FloatType type, bool float_out, cudaStream_t stream) {
  if (batch == 0 || hidden == 0) return cudaSuccess;
  switch (type) {
    case FloatType::kFloat32:
      return Launch<float, float>(in, out, cu_seqlens, batch, hidden, stream);
    case FloatType::kBFloat16:
      return LaunchInto<__nv_bfloat16>(in, out, cu_seqlens, batch, hidden, float_out, stream);
    case FloatType::kFloat16:
      return LaunchInto<__half>(in, out, cu_seqlens, batch, hidden, float_out, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace padless::cuda::internal
