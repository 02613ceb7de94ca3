// The per-row FP8 cast: see fp8_rowwise_kernels.h. Values and scales follow the reference of
// fp8_rowwise.cc (the tanh GELU to within the hardware tanh's error): the activation in fp32,
// amax = max |v| ignoring NaN, scale = 448 / amax in IEEE fp32 (1 when amax is 0 or infinite),
// v * scale rounded to nearest-even and saturated by cvt.rn.satfinite (what the reference's clamp
// then cast gives), NaN written as c10's byte.
#include "fp8_rowwise_kernels.h"

#include <cstdint>

#include "float_type_dispatch.cuh"
#include "fp8_cast.cuh"

namespace padless::cuda::internal {
namespace {

constexpr int kVec = kFp8Vec;  // elements per thread: one 16-byte load of a 16-bit type
constexpr int kMaxThreads = 1024;
constexpr float kE4M3Max = 448.f;

// The activations in fp32: at::gelu's, at::relu's, and the tanh GELU with the hardware tanh.
template <RowActivationKind A>
__device__ __forceinline__ float Activate(float x) {
  if constexpr (A == RowActivationKind::kGelu) {
    return x * 0.5f * (1.f + erff(x * 0.70710678118654752440f));
  } else if constexpr (A == RowActivationKind::kGeluTanh) {
    // The hardware tanh (tanh.approx.f32, relative error below 2^-10.9) instead of tanhf: the
    // result is rounded to E4M3 (a step of 2^-3) next, and tanhf made this pass over the FFN's
    // [T, 4H] activation compute-bound (179 against about 100 us at T = 32k, 4H = 3072, H200).
    constexpr float kBeta = 0.79788456080286535588f;  // sqrt(2 / pi)
    constexpr float kKappa = 0.044715f;
    const float inner = kBeta * (x + kKappa * x * x * x);
    float t;
    asm("tanh.approx.f32 %0, %1;" : "=f"(t) : "f"(inner));
    return 0.5f * x * (1.f + t);
  } else if constexpr (A == RowActivationKind::kRelu) {
    return x > 0.f || isnan(x) ? x : 0.f;
  } else {
    return x;
  }
}

// The block's max of m (every thread gets it).
__device__ __forceinline__ float BlockMax(float m) {
  __shared__ float warp_max[kMaxThreads / 32];
  __shared__ float result;
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) {
    m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, offset));
  }
  if (threadIdx.x % 32 == 0) warp_max[threadIdx.x / 32] = m;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (unsigned w = 1; w < blockDim.x / 32; ++w) m = fmaxf(m, warp_max[w]);
    result = m;
  }
  __syncthreads();
  return result;
}

template <typename T, RowActivationKind A>
__global__ void QuantizeRowsKernel(const T* __restrict__ x, uint8_t* __restrict__ out,
                                   float* __restrict__ scale_inv, int64_t rows, int64_t cols) {
  const int64_t row = blockIdx.x;
  const int64_t col = static_cast<int64_t>(threadIdx.x) * kVec;
  const bool real = row < rows && col < cols;
  float v[kVec];
  float m = 0.f;
  if (real) {
    LoadFloats(x + row * cols + col, v);
#pragma unroll
    for (int i = 0; i < kVec; ++i) {
      v[i] = Activate<A>(v[i]);
      m = fmaxf(m, fabsf(v[i]));  // fmaxf returns the other operand for NaN: NaN is ignored
    }
  }
  const float amax = BlockMax(m);
  const bool scaled = amax > 0.f && isfinite(amax);
  const float scale = scaled ? __fdiv_rn(kE4M3Max, amax) : 1.f;
  if (threadIdx.x == 0) scale_inv[row] = scaled ? __fdiv_rn(amax, kE4M3Max) : 1.f;
  if (col >= cols) return;
  uint2 bytes = make_uint2(0u, 0u);
  if (real) {
#pragma unroll
    for (int i = 0; i < kVec; ++i) v[i] = __fmul_rn(v[i], scale);
    bytes = make_uint2(Fp8x4<Fp8Type::kE4M3>(v), Fp8x4<Fp8Type::kE4M3>(v + 4));
  }
  *reinterpret_cast<uint2*>(out + row * cols + col) = bytes;
}

template <typename T, RowActivationKind A>
cudaError_t LaunchTyped(const Fp8QuantizeRowsArgs& a, cudaStream_t stream) {
  const int threads = static_cast<int>((a.cols / kVec + 31) / 32 * 32);
  QuantizeRowsKernel<T, A><<<static_cast<unsigned>(a.padded_rows), threads, 0, stream>>>(
      static_cast<const T*>(a.x), a.out, a.scale_inv, a.rows, a.cols);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchActivation(const Fp8QuantizeRowsArgs& a, cudaStream_t stream) {
  switch (a.activation) {
    case RowActivationKind::kNone:
      return LaunchTyped<T, RowActivationKind::kNone>(a, stream);
    case RowActivationKind::kGelu:
      return LaunchTyped<T, RowActivationKind::kGelu>(a, stream);
    case RowActivationKind::kGeluTanh:
      return LaunchTyped<T, RowActivationKind::kGeluTanh>(a, stream);
    case RowActivationKind::kRelu:
      return LaunchTyped<T, RowActivationKind::kRelu>(a, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace

bool Fp8QuantizeRowsSupported(int64_t cols) {
  return cols > 0 && cols % kVec == 0 && cols / kVec <= kMaxThreads;
}

cudaError_t LaunchFp8QuantizeRows(const Fp8QuantizeRowsArgs& a, cudaStream_t stream) {
  if (a.padded_rows == 0) return cudaSuccess;
  if (a.padded_rows > INT32_MAX) return cudaErrorInvalidValue;  // one block per row
  return DispatchType(a.type, cudaErrorInvalidValue, [&](auto tag) {
    return LaunchActivation<typename decltype(tag)::type>(a, stream);
  });
}

}  // namespace padless::cuda::internal
