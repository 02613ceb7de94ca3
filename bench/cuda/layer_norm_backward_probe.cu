// The fused LayerNorm backward (cuda/kernels/src/residual_layer_norm_kernels.cu) as the FP8
// training step calls it: 16100 rows of H 768, bf16, a dropout mask, E5M2 d_input and the d_bias
// sum, without and with the residual's `extra`; beside it a vectorised copy of the same bytes, the
// bandwidth it could reach. PROBE_KERNELS names the kernel file, so that another revision of it
// can be timed in the same call. Not part of the build (it needs nvcc); on the GPU machine:
//   nvcc -O3 -arch=sm_90 -std=c++17 -Icuda/kernels/src \
//     -DPROBE_KERNELS='"residual_layer_norm_kernels.cu"' bench/cuda/layer_norm_backward_probe.cu \
//     -o /tmp/probe_new
//   git show 5faed8a:cuda/kernels/src/residual_layer_norm_kernels.cu > /tmp/ln_old.cu
//   nvcc ... -DPROBE_KERNELS='"/tmp/ln_old.cu"' ... -o /tmp/probe_old
//   /tmp/probe_old; /tmp/probe_new; /tmp/probe_old; /tmp/probe_new
// H200 (2026-12-04, this file, session 13 of bench/cuda/FUSED_KERNELS.md): 5faed8a 47.4 / 47.3 us
// without `extra`, 52.9 / 53.0 with it; 702e6d5 (a row per group of threads, the column sums in
// registers) 37.9 / 37.4 and 39.8 / 39.2; the copy 28.0 and 34.2 us.
#include PROBE_KERNELS

#include <cstdio>
#include <cstdlib>

using namespace padless::cuda::internal;

#define CK(x)                                                                        \
  do {                                                                               \
    cudaError_t e_ = (x);                                                            \
    if (e_ != cudaSuccess) {                                                         \
      std::printf("CUDA %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, __LINE__); \
      std::exit(1);                                                                  \
    }                                                                                \
  } while (0)

struct Buffers {
  int64_t rows, hidden, padded;
  __nv_bfloat16 *d_out, *extra, *sum, *d_sum;
  float *mean, *rstd, *gamma, *partials, *dg, *db, *dbias, *scale, *amax;
  bool* mask;
  uint8_t* fp8;
};

template <typename F>
float TimeUs(F&& f, int reps) {
  for (int i = 0; i < 5; ++i) f();
  cudaEvent_t s, e;
  cudaEventCreate(&s);
  cudaEventCreate(&e);
  cudaEventRecord(s);
  for (int i = 0; i < reps; ++i) f();
  cudaEventRecord(e);
  CK(cudaEventSynchronize(e));
  float ms = 0;
  cudaEventElapsedTime(&ms, s, e);
  return ms * 1000.f / reps;
}

__global__ void Fill(__nv_bfloat16* p, int64_t n, uint32_t seed, float s) {
  for (int64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    uint32_t h = static_cast<uint32_t>(i) * 2654435761u ^ seed;
    h ^= h >> 13;
    h *= 0x5bd1e995u;
    h ^= h >> 15;
    p[i] = __float2bfloat16((static_cast<float>(h & 0xffff) / 65536.f - 0.5f) * s);
  }
}
__global__ void FillMask(bool* p, int64_t n) {
  for (int64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    p[i] = ((i * 2654435761u) >> 7) % 10 != 0;
}
__global__ void FillF(float* p, int64_t n, float base, float s) {
  for (int64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    p[i] = base + s * (((i * 2654435761u) >> 9) % 1000) / 1000.f;
}
__global__ void CopyKernel(const uint4* __restrict__ in, uint4* __restrict__ out, int64_t n) {
  for (int64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    out[i] = in[i];
}

int main() {
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  Buffers b;
  b.rows = 16100;
  b.hidden = 768;
  b.padded = 16384;
  const int64_t n = b.padded * b.hidden;
  CK(cudaMalloc(&b.d_out, n * 2));
  CK(cudaMalloc(&b.extra, n * 2));
  CK(cudaMalloc(&b.sum, n * 2));
  CK(cudaMalloc(&b.d_sum, n * 2));
  CK(cudaMalloc(&b.mask, n));
  CK(cudaMalloc(&b.fp8, n));
  CK(cudaMalloc(&b.mean, b.padded * 4));
  CK(cudaMalloc(&b.rstd, b.padded * 4));
  CK(cudaMalloc(&b.gamma, b.hidden * 4));
  CK(cudaMalloc(&b.partials, 4096 * 3 * b.hidden * 4));
  CK(cudaMalloc(&b.dg, b.hidden * 4));
  CK(cudaMalloc(&b.db, b.hidden * 4));
  CK(cudaMalloc(&b.dbias, b.hidden * 4));
  CK(cudaMalloc(&b.scale, 4));
  CK(cudaMalloc(&b.amax, 4));
  Fill<<<1024, 256>>>(b.d_out, n, 1, 2.f);
  Fill<<<1024, 256>>>(b.extra, n, 2, 2.f);
  Fill<<<1024, 256>>>(b.sum, n, 3, 4.f);
  FillMask<<<1024, 256>>>(b.mask, n);
  FillF<<<64, 256>>>(b.mean, b.padded, -0.1f, 0.2f);
  FillF<<<64, 256>>>(b.rstd, b.padded, 0.5f, 0.5f);
  FillF<<<64, 256>>>(b.gamma, b.hidden, 0.9f, 0.2f);
  FillF<<<1, 1>>>(b.scale, 1, 8.f, 0.f);
  CK(cudaDeviceSynchronize());

  for (int with_extra = 0; with_extra < 2; ++with_extra) {
    ResidualLayerNormBackwardArgs a;
    a.d_out = b.d_out;
    a.extra = with_extra ? b.extra : nullptr;
    a.sum = b.sum;
    a.mean = b.mean;
    a.rstd = b.rstd;
    a.gamma = b.gamma;
    a.mask = b.mask;
    a.d_sum = b.d_sum;
    a.partials = b.partials;
    a.d_gamma = b.dg;
    a.d_beta = b.db;
    a.d_bias = b.dbias;
    a.rows = b.rows;
    a.hidden = b.hidden;
    a.type = FloatType::kBFloat16;
    a.p = 0.1f;
    a.need_bias_grad = true;
    a.fp8.scale = b.scale;
    a.fp8.amax = b.amax;
    a.fp8.padded_rows = b.padded;
    a.fp8.format = Fp8Type::kE5M2;
    a.fp8_d_input = b.fp8;
    const double bytes = static_cast<double>(b.rows) * b.hidden * (with_extra ? 10 : 8);
    std::printf("== extra=%d  rows %lld hidden %lld  bytes %.1f MB\n", with_extra,
                (long long)b.rows, (long long)b.hidden, bytes / 1e6);
    {
      const int64_t words = static_cast<int64_t>(bytes / 2 / 16);
      uint4 *src = nullptr, *dst = nullptr;
      CK(cudaMalloc(&src, words * 16));
      CK(cudaMalloc(&dst, words * 16));
      cudaMemset(src, 0, words * 16);
      const float us = TimeUs([&] { CopyKernel<<<sms * 8, 256>>>(src, dst, words); }, 50);
      std::printf("copy of the same bytes: %.1f us  %.0f GB/s\n", us, bytes / us / 1e3);
      cudaFree(src);
      cudaFree(dst);
    }
    a.blocks = ResidualLayerNormBackwardBlocks(a.rows, a.hidden, a.type, true, sms);
    const float us = TimeUs([&] { CK(LaunchResidualLayerNormBackward(a, 0)); }, 50);
    std::printf("kernel: blocks %lld  %.1f us  %.0f GB/s\n", (long long)a.blocks, us,
                bytes / us / 1e3);
  }
  return 0;
}
