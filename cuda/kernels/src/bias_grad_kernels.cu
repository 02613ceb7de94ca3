// A gradient pass that also sums its output's columns (a bias gradient): see bias_grad_kernels.h.
#include "bias_grad_kernels.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "float_pack.cuh"

namespace padless::cuda::internal {
namespace {

constexpr int kVec = 8;                // elements per 16-byte vector
constexpr int kThreads = 128;          // vectors (columns / 8) per block
constexpr int64_t kRowsPerBlock = 64;  // rows per block: 256 row blocks at T = 16384
constexpr int kReduceCols = 32;        // columns per reduction block
constexpr int kReduceRows = 16;        // threads per column
constexpr int kUnroll = 4;             // rows loaded ahead of their stores

template <typename T>
using Vec = Pack<T, kVec>;

template <typename T>
__device__ __forceinline__ Vec<T> Load(const T* p) {
  return *reinterpret_cast<const Vec<T>*>(p);
}

template <typename T>
struct Stack3Op {
  const T* src[3];
  int64_t width;  // columns of each source
  __device__ Vec<T> operator()(int64_t row, int64_t col) const {
    const int64_t which = col / width;
    return Load(src[which] + row * width + (col - which * width));
  }
};

// Block (x, y): rows [x * kRowsPerBlock, ...), column vectors [y * kThreads, ...). Writes the
// outputs and, when partials is set, the block's column sums as row x of partials.
template <typename T, typename Op>
__global__ void __launch_bounds__(kThreads)
    MapRowsKernel(Op op, T* __restrict__ out, float* __restrict__ partials, int64_t rows,
                  int64_t cols) {
  const int64_t col = (static_cast<int64_t>(blockIdx.y) * kThreads + threadIdx.x) * kVec;
  if (col >= cols) return;  // no shared memory or barriers below
  const int64_t begin = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock;
  const int64_t end = min(rows, begin + kRowsPerBlock);
  float sum[kVec] = {};
  const auto emit = [&](int64_t row, const Vec<T>& v) {
    *reinterpret_cast<Vec<T>*>(out + row * cols + col) = v;
#pragma unroll
    for (int i = 0; i < kVec; ++i) sum[i] += ToFloat(v.v[i]);
  };
  // kUnroll rows' loads before their stores: enough loads in flight to approach the bandwidth
  // (one row at a time reached about half of it on the H200).
  int64_t row = begin;
  for (; row + kUnroll <= end; row += kUnroll) {
    Vec<T> v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) v[u] = op(row + u, col);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) emit(row + u, v[u]);
  }
  for (; row < end; ++row) emit(row, op(row, col));
  if (partials == nullptr) return;
#pragma unroll
  for (int i = 0; i < kVec; ++i) partials[blockIdx.x * cols + col + i] = sum[i];
}

// bias_grad[j] = the sum of partials[b, j] over the row blocks b, in a fixed order: thread (x, y)
// of a block sums rows y, y + kReduceRows, ... of column tile * kReduceCols + x, then row 0 adds
// the kReduceRows sums in order. Enough threads per column to keep many loads in flight (a thread
// per column, looping over every block, was latency-bound).
__global__ void __launch_bounds__(kReduceCols* kReduceRows)
    SumPartialsKernel(const float* __restrict__ partials, float* __restrict__ bias_grad,
                      int64_t blocks, int64_t cols) {
  __shared__ float tile[kReduceRows][kReduceCols + 1];
  const int64_t col = static_cast<int64_t>(blockIdx.x) * kReduceCols + threadIdx.x;
  float total = 0.f;
  if (col < cols) {
    for (int64_t b = threadIdx.y; b < blocks; b += kReduceRows) total += partials[b * cols + col];
  }
  tile[threadIdx.y][threadIdx.x] = total;
  __syncthreads();
  if (threadIdx.y != 0 || col >= cols) return;
  float sum = 0.f;
#pragma unroll
  for (int r = 0; r < kReduceRows; ++r) sum += tile[r][threadIdx.x];
  bias_grad[col] = sum;
}

template <typename T, typename Op>
cudaError_t Launch(const Op& op, const BiasGradOutput& o, cudaStream_t stream) {
  const int64_t blocks = BiasGradBlocks(o.rows);
  const int64_t vectors = o.cols / kVec;
  if (o.rows > 0) {
    const dim3 grid(static_cast<unsigned>(blocks),
                    static_cast<unsigned>((vectors + kThreads - 1) / kThreads));
    MapRowsKernel<T>
        <<<grid, kThreads, 0, stream>>>(op, static_cast<T*>(o.out), o.partials, o.rows, o.cols);
  } else if (o.partials != nullptr) {
    // No rows: the sums are zero (the reduction reads one zero row).
    const cudaError_t err = cudaMemsetAsync(o.partials, 0, sizeof(float) * o.cols, stream);
    if (err != cudaSuccess) return err;
  }
  if (o.partials != nullptr) {
    const auto grid = static_cast<unsigned>((o.cols + kReduceCols - 1) / kReduceCols);
    SumPartialsKernel<<<grid, dim3(kReduceCols, kReduceRows), 0, stream>>>(o.partials, o.bias_grad,
                                                                           blocks, o.cols);
  }
  return cudaGetLastError();
}

}  // namespace

bool BiasGradSupported(int64_t cols, FloatType type) {
  return type != FloatType::kFloat32 && cols > 0 && cols % kVec == 0;
}

int64_t BiasGradBlocks(int64_t rows) {
  return rows <= 0 ? 1 : (rows + kRowsPerBlock - 1) / kRowsPerBlock;
}

cudaError_t LaunchStack3(const void* a, const void* b, const void* c, const BiasGradOutput& out,
                         cudaStream_t stream) {
  if (out.type == FloatType::kBFloat16) {
    using T = __nv_bfloat16;
    return Launch<T>(
        Stack3Op<T>{{static_cast<const T*>(a), static_cast<const T*>(b), static_cast<const T*>(c)},
                    out.cols / 3},
        out, stream);
  }
  using T = __half;
  return Launch<T>(
      Stack3Op<T>{{static_cast<const T*>(a), static_cast<const T*>(b), static_cast<const T*>(c)},
                  out.cols / 3},
      out, stream);
}

}  // namespace padless::cuda::internal
