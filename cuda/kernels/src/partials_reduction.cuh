// The second pass of the kernels that sum columns without atomics (the LayerNorm backward's
// d_gamma / d_beta / d_bias, the bias gradients of bias_grad_kernels.cu): their first pass writes
// each block's column sums as one row of fp32 partials [blocks, width]; this sums every column over
// the blocks in a fixed order, so that the result is the same from run to run.
// CUDA-only (included by .cu files, never by C++ translation units).
#ifndef PADLESS_CUDA_SRC_PARTIALS_REDUCTION_CUH_
#define PADLESS_CUDA_SRC_PARTIALS_REDUCTION_CUH_

#include <cuda_runtime.h>

#include <cstdint>

namespace padless::cuda::internal {

// Columns per reduction block: one warp reads 32 consecutive floats of a partials row.
constexpr int kPartialsCols = 32;

// The grid and block of a kernel that calls ReducePartialsColumn with kRows threads per column.
inline unsigned PartialsGrid(int64_t width) {
  return static_cast<unsigned>((width + kPartialsCols - 1) / kPartialsCols);
}
template <int kRows>
dim3 PartialsBlock() {
  return dim3(kPartialsCols, kRows);
}

// Thread (x, y) of block b sums rows y, y + kRows, ... of column b * kPartialsCols + x, then row 0
// of the block adds the kRows sums in order and hands the total to store(column, total). Several
// threads per column keep many loads in flight (a thread per column, looping over every block,
// was latency-bound). The caller's kernel is launched with PartialsGrid / PartialsBlock<kRows>.
template <int kRows, typename Store>
__device__ __forceinline__ void ReducePartialsColumn(const float* __restrict__ partials,
                                                     int64_t blocks, int64_t width,
                                                     const Store& store) {
  __shared__ float tile[kRows][kPartialsCols + 1];
  const int64_t col = static_cast<int64_t>(blockIdx.x) * kPartialsCols + threadIdx.x;
  float total = 0.f;
  if (col < width) {
    for (int64_t b = threadIdx.y; b < blocks; b += kRows) total += partials[b * width + col];
  }
  tile[threadIdx.y][threadIdx.x] = total;
  __syncthreads();
  if (threadIdx.y != 0 || col >= width) return;
  float sum = 0.f;
#pragma unroll
  for (int r = 0; r < kRows; ++r) sum += tile[r][threadIdx.x];
  store(col, sum);
}

}  // namespace padless::cuda::internal

#endif  // PADLESS_CUDA_SRC_PARTIALS_REDUCTION_CUH_
