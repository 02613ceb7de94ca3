// Does programmatic dependent launch shrink the gap between two kernels on this GPU
// (cuda/kernels/src/dependent_launch.cuh)? A loop of: a cuBLAS bf16 GEMM ([16384, 768] x
// [768, 3072], as the FFN-in GEMM), then `copies` memory-bound kernels (25 MB each, a LayerNorm's
// or a cast's traffic) and `tiny` one-warp kernels, each of these launched with and without the
// attribute (padless's LaunchDependent; PADLESS_DEPENDENT_LAUNCH must not be 0); each kernel waits
// for the one ahead first (WaitForPriorKernels), as padless's do.
// Prints the time per loop iteration, each case twice. Not part of the build (it needs nvcc and
// cuBLAS); on the GPU machine:
//   nvcc -O2 -arch=sm_90 -std=c++17 -Icuda/kernels/src bench/cuda/dependent_launch_probe.cu \
//     -lcublas -o /tmp/probe
//   /tmp/probe
// H200 (2026-12-04, this file): 6 copies + 6 tiny kernels 184.9 / 185.3 us an iteration without,
// 168.2 / 168.4 with (1.4 us a boundary); 6 copies alone 173.3 / 173.5 against 162.9 / 163.0; 6
// tiny alone 116.8 / 117.3 against 110.1 / 110.6; the GEMM alone 104.2 either way.
#include <cublas_v2.h>
#include <cuda_bf16.h>

#include <cstdio>

#include "dependent_launch.cuh"

__global__ void CopyKernel(const int4* __restrict__ in, int4* __restrict__ out, long n) {
  padless::cuda::internal::WaitForPriorKernels();
  for (long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long>(gridDim.x) * blockDim.x) {
    out[i] = in[i];
  }
}

__global__ void TinyKernel(float* p) {
  padless::cuda::internal::WaitForPriorKernels();
  if (threadIdx.x == 0) p[blockIdx.x] += 1.f;
}

// With `dependent`, through padless's own launcher; else the ordinary way.
template <typename... Params, typename... Args>
void Launch(bool dependent, void (*kernel)(Params...), dim3 grid, dim3 block, cudaStream_t s,
            Args... args) {
  if (dependent) {
    padless::cuda::internal::LaunchDependent(kernel, grid, block, 0, s, args...);
  } else {
    kernel<<<grid, block, 0, s>>>(args...);
  }
}

int main() {
  const int t = 16384, k = 768, n = 3072;
  cublasHandle_t h;
  cublasCreate(&h);
  cudaStream_t s;
  cudaStreamCreate(&s);
  cublasSetStream(h, s);
  __nv_bfloat16 *a, *b, *c;
  cudaMalloc(&a, size_t{2} * t * k);
  cudaMalloc(&b, size_t{2} * k * n);
  cudaMalloc(&c, size_t{2} * t * n);
  cudaMemset(a, 0, size_t{2} * t * k);
  cudaMemset(b, 0, size_t{2} * k * n);
  const long bytes = 2L * t * 768, vectors = bytes / 16;
  int4 *x, *y;
  float* counters;
  cudaMalloc(&x, bytes);
  cudaMalloc(&y, bytes);
  cudaMalloc(&counters, 4096);
  cudaMemset(x, 0, bytes);
  cudaMemset(counters, 0, 4096);
  const float one = 1, zero = 0;
  for (int copies : {0, 2, 6}) {
    for (int tiny : {0, 6}) {
      for (int dependent : {0, 1, 0, 1}) {
        const auto iteration = [&] {
          cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, t, k, &one, b, CUDA_R_16BF, n, a,
                       CUDA_R_16BF, k, &zero, c, CUDA_R_16BF, n, CUBLAS_COMPUTE_32F,
                       CUBLAS_GEMM_DEFAULT);
          for (int r = 0; r < copies; ++r) {
            Launch(dependent, CopyKernel, dim3(1056), dim3(256), s,
                   static_cast<const int4*>(r % 2 ? y : x), r % 2 ? x : y, vectors);
          }
          for (int r = 0; r < tiny; ++r) Launch(dependent, TinyKernel, dim3(4), dim3(32), s, counters);
        };
        for (int i = 0; i < 20; ++i) iteration();
        cudaEvent_t start, stop;
        cudaEventCreate(&start);
        cudaEventCreate(&stop);
        cudaEventRecord(start, s);
        for (int i = 0; i < 200; ++i) iteration();
        cudaEventRecord(stop, s);
        cudaEventSynchronize(stop);
        float ms = 0;
        cudaEventElapsedTime(&ms, start, stop);
        printf("copies %d tiny %d dependent %d: %.2f us/iter (%s)\n", copies, tiny, dependent,
               ms * 1000 / 200, cudaGetErrorString(cudaGetLastError()));
      }
    }
  }
  return 0;
}
