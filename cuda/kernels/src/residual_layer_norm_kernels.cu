// Fused bias + dropout + residual + LayerNorm, forward and backward. One warp per row with the row
// in registers (16-byte loads and stores), fp32 statistics and arithmetic for every storage type.
//
// Forward: sum = residual + dropout(input + bias) is rounded to the storage type first and the
// statistics are taken of the rounded values, so that `out`, `mean` and `rstd` describe exactly
// the `sum` tensor the backward reads (as at::native_layer_norm on that tensor would).
//
// Dropout: Philox subsequence row * 32 + lane at the generator's offset, so the mask is a pure
// function of (seed, offset, row, column): restoring the generator state reproduces it. One Philox
// draw (four 32-bit words) covers a vector of up to 8 elements: each word gives two 16-bit
// uniforms, and an element is kept when its uniform is below round((1 - p) * 65536). The keep
// probability is thus 1 - p to within 2^-17 (p = 0.1: 0.899994), for half the Philox work of one
// draw per element, which was a third of the forward kernel's instructions.
//
// Both kernels issue every load of a row before its first store: the compiler may not move a load
// above a store through pointers that could alias, so loads and stores would otherwise alternate,
// one memory round trip per vector.
//
// Backward: per row, d_sum = rstd * (g*gamma - mean(g*gamma) - xhat * mean(g*gamma*xhat)); the
// column sums (d_gamma, d_beta, d_bias) go to per-warp fp32 accumulators in shared memory, then to
// one row of partials per block, then a second kernel sums the partials in a fixed order.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <curand_kernel.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>
#include <type_traits>

#include "dependent_launch.cuh"
#include "float_pack.cuh"
#include "float_type_dispatch.cuh"
#include "fp8_cast.cuh"
#include "partials_reduction.cuh"
#include "residual_layer_norm_kernels.h"

namespace padless::cuda::internal {
namespace {

constexpr int kLanes = 32;
constexpr unsigned kFullWarp = 0xffffffffu;
constexpr int kForwardWarps = 4;
// At most 16 vectors (256 bytes) of a row per lane: H <= 4096 for bf16/fp16, 2048 for fp32. At 16
// the bf16 backward spills ~100 bytes per thread (ptxas -v); narrower rows do not spill.
constexpr int kMaxIters = 16;
constexpr int kMaxBackwardWarps = 4;
// The backward's shared accumulators stay within the default 48 KiB of one block.
constexpr int64_t kBackwardSharedFloats = 48 * 1024 / 4;
constexpr int kReduceRows = 32;  // threads per column of ReducePartialsKernel

// Resident blocks of 4 warps per SM that the kernels' register budgets aim at (__launch_bounds__):
// a warp works on one row at a time, so latency is hidden by warps alone. The values are the
// largest at which ptxas still keeps the row in registers (sm_90, bf16: H <= 768 in 64 forward and
// 96 backward registers, H = 1024 in 128 backward ones); wider rows get what they need. The
// backward sizes its grid by what the device reports
// (cudaOccupancyMaxActiveBlocksPerMultiprocessor).
constexpr int ForwardMinBlocks(int iters) { return iters <= 3 ? 8 : 1; }
constexpr int BackwardMinBlocks(int iters) { return iters <= 3 ? 5 : (iters == 4 ? 4 : 1); }

// Elements of T in one 16-byte vector.
template <typename T>
constexpr int kVecOf = static_cast<int>(16 / sizeof(T));

// kVec mask bytes (bool is one byte holding 0 or 1) as one register-sized word: byte k is
// element k's keep flag.
template <int kVec>
using MaskBits = std::conditional_t<kVec == 8, uint64_t, uint32_t>;

template <int kVec>
__device__ __forceinline__ bool Kept(MaskBits<kVec> bits, int k) {
  return ((bits >> (8 * k)) & 0xffu) != 0;
}

// Rounds `in` to T.
template <typename T, int kVec>
__device__ __forceinline__ Words PackWords(const float (&in)[kVec]) {
  Pack<T, kVec> pack;
#pragma unroll
  for (int k = 0; k < kVec; ++k) pack.v[k] = FromFloat<T>(in[k]);
  Words words;
  memcpy(&words, &pack, sizeof(words));
  return words;
}

template <typename T, int kVec>
__device__ __forceinline__ void Load(const T* p, float (&out)[kVec]) {
  UnpackWords<T, kVec>(LoadWords(p), out);
}

// Keep decisions for one vector of kVec <= 8 elements from one Philox draw (see the file comment).
template <int kVec>
__device__ __forceinline__ MaskBits<kVec> DrawKeep(curandStatePhilox4_32_10_t& rng,
                                                   uint32_t keep_below) {
  static_assert(kVec <= 8, "one draw holds 8 16-bit uniforms");
  const uint4 r = curand4(&rng);
  const uint32_t words[4] = {r.x, r.y, r.z, r.w};
  MaskBits<kVec> keep = 0;
#pragma unroll
  for (int k = 0; k < kVec; ++k) {
    const uint32_t uniform = (words[k / 2] >> (16 * (k % 2))) & 0xffffu;
    keep |= static_cast<MaskBits<kVec>>(uniform < keep_below ? 1 : 0) << (8 * k);
  }
  return keep;
}

// fp32 parameters as float4 loads (their vectors are 16-byte aligned whatever T is).
template <int kVec>
__device__ __forceinline__ void LoadParams(const float* p, float (&out)[kVec]) {
#pragma unroll
  for (int q = 0; q < kVec / 4; ++q) {
    const float4 f = __ldg(reinterpret_cast<const float4*>(p) + q);
    out[4 * q] = f.x;
    out[4 * q + 1] = f.y;
    out[4 * q + 2] = f.z;
    out[4 * q + 3] = f.w;
  }
}

template <typename T, int kVec>
__device__ __forceinline__ void Store(T* p, const float (&in)[kVec]) {
  *reinterpret_cast<Words*>(p) = PackWords<T, kVec>(in);
}

// p[k] += in[k] on this lane's slice of the shared accumulators.
template <int kVec>
__device__ __forceinline__ void AddShared(float* p, const float (&in)[kVec]) {
#pragma unroll
  for (int q = 0; q < kVec / 4; ++q) {
    float4* slot = reinterpret_cast<float4*>(p) + q;
    float4 f = *slot;
    f.x += in[4 * q];
    f.y += in[4 * q + 1];
    f.z += in[4 * q + 2];
    f.w += in[4 * q + 3];
    *slot = f;
  }
}

__device__ __forceinline__ float WarpSum(float v) {
#pragma unroll
  for (int offset = kLanes / 2; offset > 0; offset >>= 1) {
    v += __shfl_xor_sync(kFullWarp, v, offset);
  }
  return v;
}

__device__ __forceinline__ float WarpMax(float v) {
#pragma unroll
  for (int offset = kLanes / 2; offset > 0; offset >>= 1) {
    v = fmaxf(v, __shfl_xor_sync(kFullWarp, v, offset));
  }
  return v;
}

// One vector of the LayerNorm's output in fp32, before its rounding to T: the same expression for
// the stored output and for the FP8 copy's second pass, so both see the same values.
template <typename T, int kVec>
__device__ __forceinline__ void NormalizeVector(const Words& x, const float* gamma,
                                                const float* beta, float mean, float rstd,
                                                float (&y)[kVec]) {
  float g[kVec], b[kVec];
  UnpackWords<T, kVec>(x, y);
  LoadParams<kVec>(gamma, g);
  LoadParams<kVec>(beta, b);
#pragma unroll
  for (int k = 0; k < kVec; ++k) y[k] = (y[k] - mean) * rstd * g[k] + b[k];
}

// The FP8 copy of a padded row: zeros at scale 1, as Fp8QuantizeRows pads.
template <int kVec>
__device__ __forceinline__ void ZeroFp8Row(const ResidualLayerNormForwardArgs& a, int64_t row,
                                           int lane) {
  const int64_t vecs = a.hidden / kVec;
  for (int64_t v = lane; v < vecs; v += kLanes)
    StoreFp8Zeros<kVec>(a.fp8 + row * a.hidden + v * kVec);
  if (lane == 0) a.fp8_scale_inv[row] = a.fp8_fixed_scale_inv > 0.f ? a.fp8_fixed_scale_inv : 1.f;
}

// The FP8 copy of the row just stored (Fp8QuantizeRows of `out`, or Fp8QuantizeAtScale at a fixed
// scale): the amax of the stored values `stored_max` (this lane's), then each vector normalised
// again, rounded to T, scaled and cast.
template <typename T, int kIters>
__device__ __forceinline__ void WriteFp8Row(const ResidualLayerNormForwardArgs& a, int64_t row,
                                            int lane, const Words (&x)[kIters], float mean,
                                            float rstd, float stored_max) {
  constexpr int kVec = kVecOf<T>;
  static_assert(kVec == kFp8Vec, "FP8 copies of 16-bit rows only: 8 elements a vector");
  float scale = a.fp8_fixed_scale;
  if (a.fp8_fixed_scale_inv > 0.f) {
    if (lane == 0) a.fp8_scale_inv[row] = a.fp8_fixed_scale_inv;
  } else {
    const float amax = WarpMax(stored_max);
    const bool scaled = amax > 0.f && isfinite(amax);
    scale = scaled ? __fdiv_rn(448.f, amax) : 1.f;
    if (lane == 0) a.fp8_scale_inv[row] = scaled ? __fdiv_rn(amax, 448.f) : 1.f;
  }
  const int64_t vecs = a.hidden / kVec;
#pragma unroll
  for (int i = 0; i < kIters; ++i) {
    const int64_t v = lane + static_cast<int64_t>(i) * kLanes;
    if (v >= vecs) continue;
    float y[kVec];
    NormalizeVector<T, kVec>(x[i], a.gamma + v * kVec, a.beta + v * kVec, mean, rstd, y);
    UnpackWords<T, kVec>(PackWords<T, kVec>(y), y);  // the stored (rounded) values
#pragma unroll
    for (int k = 0; k < kVec; ++k) y[k] = __fmul_rn(y[k], scale);
    *reinterpret_cast<uint2*>(a.fp8 + row * a.hidden + v * kVec) =
        make_uint2(Fp8x4<Fp8Type::kE4M3>(y), Fp8x4<Fp8Type::kE4M3>(y + 4));
  }
}

template <typename T, int kIters>
__global__ void __launch_bounds__(kForwardWarps* kLanes, ForwardMinBlocks(kIters))
    ForwardKernel(const ResidualLayerNormForwardArgs a) {
  WaitForPriorKernels();
  constexpr int kVec = kVecOf<T>;
  const int lane = threadIdx.x % kLanes;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kForwardWarps + threadIdx.x / kLanes;
  if (row >= a.rows) {  // the whole warp: the shuffles below see full warps only
    if constexpr (kVec == kFp8Vec) {
      if (a.fp8 != nullptr && row < a.padded_rows) ZeroFp8Row<kVec>(a, row, lane);
    }
    return;
  }
  const int64_t vecs = a.hidden / kVec;
  const int64_t base = row * a.hidden;
  const T* __restrict__ input = static_cast<const T*>(a.input) + base;
  const T* __restrict__ residual = static_cast<const T*>(a.residual) + base;
  const T* __restrict__ bias = static_cast<const T*>(a.bias);
  // Inference keeps nothing for a backward: no sum, no statistics (null pointers).
  T* __restrict__ sum = a.sum != nullptr ? static_cast<T*>(a.sum) + base : nullptr;
  T* __restrict__ out = static_cast<T*>(a.out) + base;
  const bool dropout = a.p > 0.f;
  const float keep_prob = 1.f - a.p;
  const float scale = 1.f / keep_prob;
  const uint32_t keep_below = __float2uint_rn(keep_prob * 65536.f);

  curandStatePhilox4_32_10_t rng;
  if (dropout) curand_init(a.seed, static_cast<uint64_t>(row) * kLanes + lane, a.offset, &rng);

  // The row's loads first (file comment). x becomes the row as stored: T holds the rounded sum
  // exactly, in half the registers of fp32 for bf16/fp16.
  Words in_raw[kIters], x[kIters];
#pragma unroll
  for (int i = 0; i < kIters; ++i) {
    const int64_t v = lane + static_cast<int64_t>(i) * kLanes;
    if (v >= vecs) continue;
    in_raw[i] = LoadWords(input + v * kVec);
    x[i] = LoadWords(residual + v * kVec);
  }
  float total = 0.f;
#pragma unroll
  for (int i = 0; i < kIters; ++i) {
    const int64_t v = lane + static_cast<int64_t>(i) * kLanes;
    if (v >= vecs) continue;
    float in[kVec], res[kVec];
    UnpackWords<T, kVec>(in_raw[i], in);
    UnpackWords<T, kVec>(x[i], res);
    if (bias != nullptr) {
      float b[kVec];
      Load<T, kVec>(bias + v * kVec, b);
#pragma unroll
      for (int k = 0; k < kVec; ++k) in[k] += b[k];
    }
    if (dropout) {
      const MaskBits<kVec> keep = DrawKeep<kVec>(rng, keep_below);
#pragma unroll
      for (int k = 0; k < kVec; ++k) in[k] = Kept<kVec>(keep, k) ? in[k] * scale : 0.f;
      *reinterpret_cast<MaskBits<kVec>*>(a.mask + base + v * kVec) = keep;
    }
#pragma unroll
    for (int k = 0; k < kVec; ++k) res[k] += in[k];
    x[i] = PackWords<T, kVec>(res);
    UnpackWords<T, kVec>(x[i], res);  // statistics of the stored (rounded) sum
#pragma unroll
    for (int k = 0; k < kVec; ++k) total += res[k];
    if (sum != nullptr) *reinterpret_cast<Words*>(sum + v * kVec) = x[i];
  }
  const float inv_hidden = 1.f / static_cast<float>(a.hidden);
  const float mean = WarpSum(total) * inv_hidden;

  // Second pass over the registers: the variance of (x - mean), free of E[x^2] - mean^2
  // cancellation.
  float squares = 0.f;
#pragma unroll
  for (int i = 0; i < kIters; ++i) {
    if (lane + static_cast<int64_t>(i) * kLanes >= vecs) continue;
    float xs[kVec];
    UnpackWords<T, kVec>(x[i], xs);
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
      const float d = xs[k] - mean;
      squares += d * d;
    }
  }
  const float rstd = rsqrtf(WarpSum(squares) * inv_hidden + a.eps);
  if (lane == 0 && a.mean != nullptr) {
    a.mean[row] = mean;
    a.rstd[row] = rstd;
  }

  float stored_max = 0.f;  // max |out| of this lane's elements, for the FP8 copy
#pragma unroll
  for (int i = 0; i < kIters; ++i) {
    const int64_t v = lane + static_cast<int64_t>(i) * kLanes;
    if (v >= vecs) continue;
    float y[kVec];
    NormalizeVector<T, kVec>(x[i], a.gamma + v * kVec, a.beta + v * kVec, mean, rstd, y);
    const Words stored = PackWords<T, kVec>(y);
    *reinterpret_cast<Words*>(out + v * kVec) = stored;
    if (a.fp8 != nullptr) {
      UnpackWords<T, kVec>(stored, y);
#pragma unroll
      for (int k = 0; k < kVec; ++k) stored_max = fmaxf(stored_max, fabsf(y[k]));
    }
  }
  if constexpr (kVec == kFp8Vec) {
    if (a.fp8 != nullptr) WriteFp8Row<T, kIters>(a, row, lane, x, mean, rstd, stored_max);
  }
}

// Shared memory: [warps][quantities][hidden] fp32 accumulators; each lane only touches its own
// columns of its own warp's slice until the final cross-warp sum.
// g = d_out (+ extra) for one vector, in fp32.
template <typename T, int kVec>
__device__ __forceinline__ void IncomingGrad(const Words& d_out, const Words& extra, bool has_extra,
                                             float (&g)[kVec]) {
  UnpackWords<T, kVec>(d_out, g);
  if (has_extra) {
    float e[kVec];
    UnpackWords<T, kVec>(extra, e);
#pragma unroll
    for (int k = 0; k < kVec; ++k) g[k] += e[k];
  }
}

template <typename T, int kIters>
__global__ void __launch_bounds__(kMaxBackwardWarps* kLanes, BackwardMinBlocks(kIters))
    BackwardKernel(const ResidualLayerNormBackwardArgs a) {
  WaitForPriorKernels();
  constexpr int kVec = kVecOf<T>;
  extern __shared__ float4 shared_raw[];
  float* accumulators = reinterpret_cast<float*>(shared_raw);
  const int warps = blockDim.x / kLanes;
  const int warp = threadIdx.x / kLanes;
  const int lane = threadIdx.x % kLanes;
  const int64_t hidden = a.hidden;
  const int64_t vecs = hidden / kVec;
  const int quantities = a.need_bias_grad ? 3 : 2;
  const int64_t block_floats = static_cast<int64_t>(quantities) * hidden;
  for (int64_t j = threadIdx.x; j < warps * block_floats; j += blockDim.x) accumulators[j] = 0.f;
  __syncthreads();

  float* d_gamma_acc = accumulators + warp * block_floats;
  float* d_beta_acc = d_gamma_acc + hidden;
  float* d_bias_acc = d_beta_acc + hidden;  // used only when need_bias_grad
  const float inv_hidden = 1.f / static_cast<float>(hidden);
  const float scale = a.p > 0.f ? 1.f / (1.f - a.p) : 1.f;
  const bool has_extra = a.extra != nullptr;
  const bool has_mask = a.mask != nullptr;
  const bool fp8 = a.fp8.scale != nullptr;
  const float fp8_scale = fp8 ? *a.fp8.scale : 0.f;
  float fp8_max = 0.f;

  for (int64_t row = static_cast<int64_t>(blockIdx.x) * warps + warp; row < a.rows;
       row += static_cast<int64_t>(gridDim.x) * warps) {
    const int64_t base = row * hidden;
    const T* __restrict__ d_out = static_cast<const T*>(a.d_out) + base;
    const T* __restrict__ extra = has_extra ? static_cast<const T*>(a.extra) + base : nullptr;
    const T* __restrict__ sum = static_cast<const T*>(a.sum) + base;
    const bool* __restrict__ mask = has_mask ? a.mask + base : nullptr;
    const float mean = __ldg(a.mean + row);
    const float rstd = __ldg(a.rstd + row);

    // The row's loads first (file comment); g * gamma is recomputed in the second pass rather
    // than held, which keeps the register count (and so the occupancy) up.
    Words g_raw[kIters], e_raw[kIters], sum_row[kIters];
    MaskBits<kVec> keep[kIters];
#pragma unroll
    for (int i = 0; i < kIters; ++i) {
      const int64_t v = lane + static_cast<int64_t>(i) * kLanes;
      if (v >= vecs) continue;
      g_raw[i] = LoadWords(d_out + v * kVec);
      e_raw[i] = has_extra ? LoadWords(extra + v * kVec) : Words{};
      sum_row[i] = LoadWords(sum + v * kVec);
      keep[i] = has_mask ? *reinterpret_cast<const MaskBits<kVec>*>(mask + v * kVec) : 0;
    }

    float sum_gg = 0.f, sum_gg_xhat = 0.f;
#pragma unroll
    for (int i = 0; i < kIters; ++i) {
      const int64_t v = lane + static_cast<int64_t>(i) * kLanes;
      if (v >= vecs) continue;
      float g[kVec], gamma[kVec], x[kVec], g_xhat[kVec];
      IncomingGrad<T, kVec>(g_raw[i], e_raw[i], has_extra, g);
      LoadParams<kVec>(a.gamma + v * kVec, gamma);
      UnpackWords<T, kVec>(sum_row[i], x);
#pragma unroll
      for (int k = 0; k < kVec; ++k) {
        const float xhat = (x[k] - mean) * rstd;
        const float gg = g[k] * gamma[k];
        g_xhat[k] = g[k] * xhat;
        sum_gg += gg;
        sum_gg_xhat += gg * xhat;
      }
      AddShared<kVec>(d_gamma_acc + v * kVec, g_xhat);
      AddShared<kVec>(d_beta_acc + v * kVec, g);
    }
    const float mean_gg = WarpSum(sum_gg) * inv_hidden;
    const float mean_gg_xhat = WarpSum(sum_gg_xhat) * inv_hidden;

#pragma unroll
    for (int i = 0; i < kIters; ++i) {
      const int64_t v = lane + static_cast<int64_t>(i) * kLanes;
      if (v >= vecs) continue;
      float g[kVec], gamma[kVec], x[kVec], d[kVec];
      IncomingGrad<T, kVec>(g_raw[i], e_raw[i], has_extra, g);
      LoadParams<kVec>(a.gamma + v * kVec, gamma);
      UnpackWords<T, kVec>(sum_row[i], x);
#pragma unroll
      for (int k = 0; k < kVec; ++k) {
        const float xhat = (x[k] - mean) * rstd;
        d[k] = rstd * (g[k] * gamma[k] - mean_gg - xhat * mean_gg_xhat);
      }
      Store<T, kVec>(static_cast<T*>(a.d_sum) + base + v * kVec, d);
      if (has_mask) {
#pragma unroll
        for (int k = 0; k < kVec; ++k) d[k] = Kept<kVec>(keep[i], k) ? d[k] * scale : 0.f;
        if (!fp8) Store<T, kVec>(static_cast<T*>(a.d_input) + base + v * kVec, d);
      }
      if (fp8) {  // d_input as T holds it, in FP8
        float rounded[kVec];
#pragma unroll
        for (int k = 0; k < kVec; ++k) rounded[k] = ToFloat(FromFloat<T>(d[k]));
        StoreFp8<kVec>(a.fp8, a.fp8_d_input + base + v * kVec, rounded, fp8_scale, fp8_max);
      }
      if (a.need_bias_grad) AddShared<kVec>(d_bias_acc + v * kVec, d);
    }
  }
  if (fp8) {
    // The FP8 rows past the real ones are zero; the warps' maxima go into the amax.
    for (int64_t row = a.rows + static_cast<int64_t>(blockIdx.x) * warps + warp;
         row < a.fp8.padded_rows; row += static_cast<int64_t>(gridDim.x) * warps) {
      for (int64_t v = lane; v < vecs; v += kLanes) {
        StoreFp8Zeros<kVec>(a.fp8_d_input + row * hidden + v * kVec);
      }
    }
    WarpMaxToAmax(fp8_max, a.fp8.amax);
  }

  // This block's column sums, warps added in a fixed order.
  __syncthreads();
  for (int64_t j = threadIdx.x; j < block_floats; j += blockDim.x) {
    float total = 0.f;
    for (int w = 0; w < warps; ++w) total += accumulators[w * block_floats + j];
    a.partials[blockIdx.x * block_floats + j] = total;
  }
}

// Column j of the partials [blocks, quantities * hidden] summed over the blocks
// (partials_reduction.cuh), written to d_gamma / d_beta / d_bias (quantity j / hidden). Many
// threads per column: the backward runs hundreds of blocks.
__global__ void __launch_bounds__(kPartialsCols* kReduceRows)
    ReducePartialsKernel(const float* __restrict__ partials, float* __restrict__ d_gamma,
                         float* __restrict__ d_beta, float* __restrict__ d_bias, int64_t blocks,
                         int64_t hidden, int64_t width) {
  WaitForPriorKernels();
  ReducePartialsColumn<kReduceRows>(partials, blocks, width, [&](int64_t col, float sum) {
    const int64_t quantity = col / hidden;
    float* out = quantity == 0 ? d_gamma : (quantity == 1 ? d_beta : d_bias);
    out[col - quantity * hidden] = sum;
  });
}

// Vectors per lane for rows of `hidden` elements of T: the smallest instantiated count that covers
// the row, or 0 when the row does not fit in registers.
template <typename T>
int ItersFor(int64_t hidden) {
  constexpr int kVec = kVecOf<T>;
  if (hidden <= 0 || hidden % kVec != 0) return 0;
  const int64_t needed = (hidden / kVec + kLanes - 1) / kLanes;
  for (int iters : {1, 2, 3, 4, 6, 8, kMaxIters}) {
    if (needed <= iters) return iters;
  }
  return 0;
}

// Calls f(std::integral_constant<int, kIters>{}) for ItersFor<T>(hidden).
template <typename T, typename F>
cudaError_t DispatchIters(int64_t hidden, F&& f) {
  static_assert(kMaxIters == 16, "DispatchIters instantiates the counts of ItersFor");
  switch (ItersFor<T>(hidden)) {
    case 1:
      return f(std::integral_constant<int, 1>{});
    case 2:
      return f(std::integral_constant<int, 2>{});
    case 3:
      return f(std::integral_constant<int, 3>{});
    case 4:
      return f(std::integral_constant<int, 4>{});
    case 6:
      return f(std::integral_constant<int, 6>{});
    case 8:
      return f(std::integral_constant<int, 8>{});
    case 16:
      return f(std::integral_constant<int, 16>{});
    default:
      break;
  }
  return cudaErrorInvalidValue;
}

template <typename T>
cudaError_t ForwardTyped(const ResidualLayerNormForwardArgs& a, cudaStream_t stream) {
  return DispatchIters<T>(a.hidden, [&](auto iters) {
    constexpr int kIters = decltype(iters)::value;
    const int64_t rows = a.fp8 != nullptr && a.padded_rows > a.rows ? a.padded_rows : a.rows;
    const int64_t blocks = (rows + kForwardWarps - 1) / kForwardWarps;
    return LaunchDependent(ForwardKernel<T, kIters>, dim3(static_cast<unsigned>(blocks)),
                           dim3(kForwardWarps * kLanes), 0, stream, a);
  });
}

int BackwardWarps(int64_t hidden) {
  const int64_t fit = kBackwardSharedFloats / (3 * hidden);
  return static_cast<int>(fit < 1 ? 1 : (fit > kMaxBackwardWarps ? kMaxBackwardWarps : fit));
}

// Columns of the backward's partials: d_gamma, d_beta and, when asked for, d_bias.
int64_t BackwardWidth(int64_t hidden, bool need_bias_grad) {
  return (need_bias_grad ? 3 : 2) * hidden;
}

// Dynamic shared memory of one backward block: a row of accumulators per warp.
size_t BackwardSharedBytes(int64_t hidden, bool need_bias_grad) {
  return static_cast<size_t>(BackwardWarps(hidden)) * BackwardWidth(hidden, need_bias_grad) *
         sizeof(float);
}

template <typename T>
cudaError_t BackwardTyped(const ResidualLayerNormBackwardArgs& a, cudaStream_t stream) {
  return DispatchIters<T>(a.hidden, [&](auto iters) {
    constexpr int kIters = decltype(iters)::value;
    const int warps = BackwardWarps(a.hidden);
    const int64_t width = BackwardWidth(a.hidden, a.need_bias_grad);
    const size_t shared = BackwardSharedBytes(a.hidden, a.need_bias_grad);
    const cudaError_t err =
        LaunchDependent(BackwardKernel<T, kIters>, dim3(static_cast<unsigned>(a.blocks)),
                        dim3(warps * kLanes), shared, stream, a);
    if (err != cudaSuccess) return err;
    return LaunchDependent(ReducePartialsKernel, dim3(PartialsGrid(width)),
                           PartialsBlock<kReduceRows>(), 0, stream, a.partials, a.d_gamma, a.d_beta,
                           a.d_bias, a.blocks, a.hidden, width);
  });
}

int ItersForType(int64_t hidden, FloatType type) {
  return DispatchType(type, 0,
                      [&](auto tag) { return ItersFor<typename decltype(tag)::type>(hidden); });
}

// `err`, a runtime call's result; when that call failed, its error is also taken off the thread's
// last-error slot, so that the next launcher's cudaGetLastError() does not report it as its own.
// Only after a failed call: clearing unconditionally would hide an earlier launch's error.
cudaError_t ClearIfFailed(cudaError_t err) {
  if (err != cudaSuccess) cudaGetLastError();
  return err;
}

// Resident backward blocks per SM on the current device (the CUDA occupancy query; may be 0).
template <typename T>
cudaError_t QueryBackwardBlocksPerSm(int64_t hidden, bool need_bias_grad, int* per_sm) {
  return DispatchIters<T>(hidden, [&](auto iters) {
    const auto kernel = BackwardKernel<T, decltype(iters)::value>;
    // The shared accumulators compete with L1 for the same memory: ask for the largest carveout.
    // A preference: when it is refused, the query answers for the default split.
    ClearIfFailed(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                       cudaSharedmemCarveoutMaxShared));
    return ClearIfFailed(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
        per_sm, kernel, BackwardWarps(hidden) * kLanes,
        BackwardSharedBytes(hidden, need_bias_grad)));
  });
}

// QueryBackwardBlocksPerSm (>= 1) for the current device, remembered per (device, type, hidden,
// need_bias_grad), which fix the kernel instance, its block size and its shared memory: the
// attribute and the query took about 8 us of host time, and a training step runs the backward 24
// times. A failed query only costs occupancy: one block per SM, and the next call asks again.
int BackwardBlocksPerSm(int64_t hidden, FloatType type, bool need_bias_grad) {
  int device = 0;
  if (ClearIfFailed(cudaGetDevice(&device)) != cudaSuccess) return 1;
  using Key = std::tuple<int, FloatType, int64_t, bool>;
  static std::mutex mutex;
  static auto* const cache = new std::map<Key, int>();  // never destroyed: usable during exit
  const Key key(device, type, hidden, need_bias_grad);
  {
    const std::lock_guard<std::mutex> lock(mutex);
    if (const auto it = cache->find(key); it != cache->end()) return it->second;
  }
  int per_sm = 0;
  const cudaError_t err = DispatchType(type, cudaErrorInvalidValue, [&](auto tag) {
    return QueryBackwardBlocksPerSm<typename decltype(tag)::type>(hidden, need_bias_grad, &per_sm);
  });
  if (err != cudaSuccess) return 1;
  per_sm = per_sm < 1 ? 1 : per_sm;
  const std::lock_guard<std::mutex> lock(mutex);
  cache->emplace(key, per_sm);
  return per_sm;
}

}  // namespace

bool ResidualLayerNormSupported(int64_t hidden, FloatType type) {
  return ItersForType(hidden, type) > 0;
}

int64_t ResidualLayerNormRandomsPerThread(int64_t hidden, FloatType type) {
  // One Philox draw of four 32-bit randoms per vector (DrawKeep), kIters vectors.
  return static_cast<int64_t>(ItersForType(hidden, type)) * 4;
}

cudaError_t LaunchResidualLayerNormForward(const ResidualLayerNormForwardArgs& args,
                                           cudaStream_t stream) {
  if (!ResidualLayerNormSupported(args.hidden, args.type) || args.rows < 0) {
    return cudaErrorInvalidValue;
  }
  if (args.rows == 0) return cudaGetLastError();
  return DispatchType(args.type, cudaErrorInvalidValue, [&](auto tag) {
    return ForwardTyped<typename decltype(tag)::type>(args, stream);
  });
}

int64_t ResidualLayerNormBackwardBlocks(int64_t rows, int64_t hidden, FloatType type,
                                        bool need_bias_grad, int64_t sm_count) {
  const int64_t warps = BackwardWarps(hidden);
  const int64_t by_rows = (rows + warps - 1) / warps;
  const int64_t by_device =
      BackwardBlocksPerSm(hidden, type, need_bias_grad) * (sm_count < 1 ? 1 : sm_count);
  const int64_t blocks = by_rows < by_device ? by_rows : by_device;
  return blocks < 1 ? 1 : blocks;
}

cudaError_t LaunchResidualLayerNormBackward(const ResidualLayerNormBackwardArgs& args,
                                            cudaStream_t stream) {
  // Even with zero rows the row kernel runs: it writes the (zero) partials the reduction reads.
  if (!ResidualLayerNormSupported(args.hidden, args.type) || args.rows < 0 || args.blocks < 1) {
    return cudaErrorInvalidValue;
  }
  return DispatchType(args.type, cudaErrorInvalidValue, [&](auto tag) {
    return BackwardTyped<typename decltype(tag)::type>(args, stream);
  });
}

}  // namespace padless::cuda::internal
