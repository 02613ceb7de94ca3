// Gradient passes that also sum their output's columns (bias gradients): see bias_grad_kernels.h.
#include "bias_grad_kernels.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstring>

#include "dependent_launch.cuh"
#include "float_pack.cuh"
#include "float_type_dispatch.cuh"
#include "fp8_cast.cuh"
#include "partials_reduction.cuh"

namespace padless::cuda::internal {
namespace {

constexpr int kVec = 8;                // elements per 16-byte vector
constexpr int kThreads = 128;          // vectors (columns / 8) per block
constexpr int64_t kRowsPerBlock = 64;  // rows per block: 256 row blocks at T = 16384
constexpr int kReduceRows = 16;        // threads per column of SumPartialsKernel

// Vectors of kVec elements travel as Words (float_pack.cuh): each word a pair of elements, the
// first in the low half; UnpackWords gives them in fp32.

// One 16-byte store (a plain assignment of the Words compiled to four 4-byte ones). No memory
// clobber: nothing in the kernels reads what they store.
template <typename T>
__device__ __forceinline__ void StoreWords(T* p, const Words& w) {
  asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(w.x), "r"(w.y), "r"(w.z),
               "r"(w.w));
}

// Two fp32 values rounded into a word (one conversion instruction for both).
__device__ __forceinline__ __nv_bfloat162 RoundPair(float a, float b, __nv_bfloat16) {
  return __floats2bfloat162_rn(a, b);
}
__device__ __forceinline__ __half2 RoundPair(float a, float b, __half) {
  return __floats2half2_rn(a, b);
}

template <typename T>
__device__ __forceinline__ uint32_t FloatsToPair(float a, float b) {
  const auto pair = RoundPair(a, b, T());
  uint32_t w;
  memcpy(&w, &pair, sizeof(w));
  return w;
}

// 2^x and 1 / x by the special function unit, one instruction each: relative errors of about
// 2^-22 (ex2) and 1 ulp (rcp); results below 2^-126 flush to zero.
__device__ __forceinline__ float Exp2Approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

__device__ __forceinline__ float RcpApprox(float x) {
  float y;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// dy * gelu_tanh'(x) in fp32 in about a dozen instructions (the first version of this kernel,
// with ATen's formula and tanhf, about 20 of its 55 in tanhf, was bound by instruction issue,
// not memory). With u = beta (x + kappa x^3), u' = beta (1 + 3 kappa x^2),
// e = exp(2u) and s = 1 / (1 + e): tanh u = 1 - 2s, 0.5 (1 + tanh u) = e s and
// 1 - tanh^2 u = 4 e s^2, so
//   gelu'(x) = 0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) u' = e s (1 + 2 x s u').
// e s does not cancel where 1 + tanh u does (x < -3: ATen's 1 + tanhf(u) loses up to all of
// itself there, at x = -5.2 it is one or two fp32 steps of tanh near -1). The slope is within a
// few 1e-7 of itself, plus about 1e-7 absolute from the cancellation at its zero (x near -0.75),
// far below a bf16 / fp16 rounding. 2u log2(e) is folded into the polynomial's constants. The
// exponent is clamped at 64 so that e s stays finite for large x (e = inf would give inf * 0; at
// 64, e s = 1 and 2 x s u' vanishes against 1); for large negative x, ex2 gives 0 and the slope
// 0, as ATen's tanhf(u) = -1 does.
__device__ __forceinline__ float GeluTanhGrad(float dy, float x) {
  constexpr float kBeta = 0.7978845608028654f;  // sqrt(2 / pi)
  constexpr float kKappa = 0.044715f;
  constexpr float kLog2E = 1.4426950408889634f;
  const float x2 = x * x;
  const float exponent =
      fminf(x * fmaf(2.f * kLog2E * kBeta * kKappa, x2, 2.f * kLog2E * kBeta), 64.f);
  const float e = Exp2Approx(exponent);
  const float s = RcpApprox(1.f + e);
  const float two_du = fmaf(6.f * kBeta * kKappa, x2, 2.f * kBeta);  // 2 u'
  return dy * (e * s) * fmaf(x * s, two_du, 1.f);
}

// The ops MapRowsKernel maps: Load(row, col) reads what one output vector needs, Compute(loaded)
// gives that vector; kGroup rows are loaded together (see MapRowsKernel), as many as the
// registers allow at the occupancy the grid needs.

// out = grad * gelu_tanh'(pre).
template <typename T>
struct GeluTanhBackwardOp {
  const T* grad;
  const T* pre;
  int64_t cols;
  // Two rows (60 registers): with four it took 100, too many to keep all of the grid resident
  // (768 blocks at F = 3072, 6 an SM).
  static constexpr int kGroup = 2;
  struct Loaded {
    Words grad, pre;
  };
  __device__ Loaded Load(int64_t row, int64_t col) const {
    return {LoadWords(grad + row * cols + col), LoadWords(pre + row * cols + col)};
  }
  __device__ Words Compute(const Loaded& in) const {
    float g[kVec], x[kVec];
    UnpackWords<T, kVec>(in.grad, g);
    UnpackWords<T, kVec>(in.pre, x);
    uint32_t out[kVec / 2];
#pragma unroll
    for (int k = 0; k < kVec / 2; ++k) {
      out[k] = FloatsToPair<T>(GeluTanhGrad(g[2 * k], x[2 * k]),
                               GeluTanhGrad(g[2 * k + 1], x[2 * k + 1]));
    }
    return make_uint4(out[0], out[1], out[2], out[3]);
  }
};

// out[r] = [a[r] | b[r] | c[r]].
template <typename T>
struct Stack3Op {
  const T* src[3];
  int64_t width;  // columns of each source
  static constexpr int kGroup = 4;
  using Loaded = Words;
  __device__ Words Load(int64_t row, int64_t col) const {
    const int64_t which = col / width;
    return LoadWords(src[which] + row * width + (col - which * width));
  }
  __device__ Words Compute(const Words& in) const { return in; }
};

// Where MapRowsKernel writes a vector: in T, or as FP8 bytes (kFp8: Fp8RowsOutput).
template <typename T, bool kFp8>
struct RowsWriter {
  void* out;
  Fp8RowsOutput fp8;
  int64_t cols;
  // v as stored in T and unpacked into f; m: the thread's max |f| so far (FP8 only).
  __device__ __forceinline__ void Write(int64_t row, int64_t col, const Words& v,
                                        const float (&f)[kVec], float& m) const {
    if constexpr (kFp8) {
      StoreFp8<kVec>(fp8, static_cast<uint8_t*>(out) + row * cols + col, f, *fp8.scale, m);
    } else {
      StoreWords(static_cast<T*>(out) + row * cols + col, v);
    }
  }
  // Rows [rows, padded_rows) of the FP8 output are zero; the last row block writes them.
  __device__ __forceinline__ void ZeroPadding(int64_t end, int64_t col) const {
    if constexpr (kFp8) {
      for (int64_t row = end; row < fp8.padded_rows; ++row) {
        StoreFp8Zeros<kVec>(static_cast<uint8_t*>(out) + row * cols + col);
      }
    }
  }
  // Threads past the last column returned early: a warp-level fold, no block barrier.
  __device__ __forceinline__ void RecordAmax(float m) const {
    if constexpr (kFp8) WarpMaxToAmax(m, fp8.amax);
  }
};

// Block (x, y): rows [x * kRowsPerBlock, ...), column vectors [y * kThreads, ...). Writes the
// outputs through `writer` and, when partials is set, the block's column sums (of the outputs as
// rounded to T) as row x of partials.
template <typename T, typename Op, typename Writer>
__global__ void __launch_bounds__(kThreads)
    MapRowsKernel(Op op, Writer writer, float* __restrict__ partials, int64_t rows, int64_t cols) {
  WaitForPriorKernels();
  const int64_t col = (static_cast<int64_t>(blockIdx.y) * kThreads + threadIdx.x) * kVec;
  if (col >= cols) return;  // no shared memory or barriers below
  const int64_t begin = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock;
  const int64_t end = min(rows, begin + kRowsPerBlock);
  float sum[kVec] = {};
  float m = 0.f;
  const auto emit = [&](int64_t row, const Words& v) {
    float f[kVec];
    UnpackWords<T, kVec>(v, f);
    writer.Write(row, col, v, f, m);
#pragma unroll
    for (int k = 0; k < kVec; ++k) sum[k] += f[k];
  };
  // Rows in groups of kGroup, the next group's loads issued before this group's work: enough
  // loads in flight to approach the bandwidth (one row at a time reached about half of it on the
  // H200). The loads' users are across the loop's back edge, so ptxas cannot sink them into the
  // work (within one group it did: a row's loads just before that row's arithmetic).
  constexpr int kGroup = Op::kGroup;
  using Loaded = typename Op::Loaded;
  const auto load = [&](int64_t first, Loaded(&in)[kGroup]) {
#pragma unroll
    for (int u = 0; u < kGroup; ++u) in[u] = op.Load(first + u, col);
  };
  int64_t row = begin;
  if (row + kGroup <= end) {
    Loaded in[kGroup];
    load(row, in);
    for (; row + 2 * kGroup <= end; row += kGroup) {
      Loaded next[kGroup];
      load(row + kGroup, next);
#pragma unroll
      for (int u = 0; u < kGroup; ++u) {
        emit(row + u, op.Compute(in[u]));
        in[u] = next[u];
      }
    }
#pragma unroll
    for (int u = 0; u < kGroup; ++u) emit(row + u, op.Compute(in[u]));
    row += kGroup;
  }
  for (; row < end; ++row) emit(row, op.Compute(op.Load(row, col)));
  if (end == rows) writer.ZeroPadding(end, col);
  writer.RecordAmax(m);
  if (partials == nullptr) return;
#pragma unroll
  for (int i = 0; i < kVec; ++i) partials[blockIdx.x * cols + col + i] = sum[i];
}

// bias_grad[j] = the sum of partials[b, j] over the row blocks b (partials_reduction.cuh).
__global__ void __launch_bounds__(kPartialsCols* kReduceRows)
    SumPartialsKernel(const float* __restrict__ partials, float* __restrict__ bias_grad,
                      int64_t blocks, int64_t cols) {
  WaitForPriorKernels();
  ReducePartialsColumn<kReduceRows>(partials, blocks, cols,
                                    [&](int64_t col, float sum) { bias_grad[col] = sum; });
}

template <typename T, typename Op>
void LaunchRows(const Op& op, const BiasGradOutput& o, dim3 grid, cudaStream_t stream) {
  const auto launch = [&](auto writer) {
    LaunchDependent(MapRowsKernel<T, Op, decltype(writer)>, grid, dim3(kThreads), 0, stream, op,
                    writer, o.partials, o.rows, o.cols);
  };
  if (o.fp8.scale == nullptr) {
    launch(RowsWriter<T, false>{o.out, o.fp8, o.cols});
  } else {
    launch(RowsWriter<T, true>{o.out, o.fp8, o.cols});
  }
}

template <typename T, typename Op>
cudaError_t Launch(const Op& op, const BiasGradOutput& o, cudaStream_t stream) {
  const int64_t blocks = BiasGradBlocks(o.rows);
  const int64_t vectors = o.cols / kVec;
  if (o.rows > 0) {
    LaunchRows<T>(op, o,
                  dim3(static_cast<unsigned>(blocks),
                       static_cast<unsigned>((vectors + kThreads - 1) / kThreads)),
                  stream);
  } else if (o.partials != nullptr) {
    // No rows: the sums are zero (the reduction reads one zero row).
    const cudaError_t err = cudaMemsetAsync(o.partials, 0, sizeof(float) * o.cols, stream);
    if (err != cudaSuccess) return err;
  }
  if (o.partials != nullptr) {
    LaunchDependent(SumPartialsKernel, dim3(PartialsGrid(o.cols)), PartialsBlock<kReduceRows>(), 0,
                    stream, o.partials, o.bias_grad, blocks, o.cols);
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

cudaError_t LaunchGeluTanhBackward(const void* grad, const void* pre, const BiasGradOutput& out,
                                   cudaStream_t stream) {
  return Dispatch16BitType(out.type, cudaErrorInvalidValue, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return Launch<T>(
        GeluTanhBackwardOp<T>{static_cast<const T*>(grad), static_cast<const T*>(pre), out.cols},
        out, stream);
  });
}

cudaError_t LaunchStack3(const void* a, const void* b, const void* c, const BiasGradOutput& out,
                         cudaStream_t stream) {
  return Dispatch16BitType(out.type, cudaErrorInvalidValue, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return Launch<T>(
        Stack3Op<T>{{static_cast<const T*>(a), static_cast<const T*>(b), static_cast<const T*>(c)},
                    out.cols / 3},
        out, stream);
  });
}

}  // namespace padless::cuda::internal
