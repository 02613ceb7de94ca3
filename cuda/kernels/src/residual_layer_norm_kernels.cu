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
// Backward: per row, d_sum = rstd * (g*gamma - mean(g*gamma) - xhat * mean(g*gamma*xhat)). A row
// goes to a group of threads, one 16-byte vector each, so that every thread keeps the same columns
// from row to row and holds their column sums (d_gamma, d_beta, d_bias) in fp32 registers; a block
// adds its groups' sums into one row of partials, and a second kernel sums the partials in a fixed
// order. The first version (a warp per row, the sums in shared memory) was bound by those shared
// read-modify-writes (L1/shared 80% busy, DRAM 31%; ncu on the H200): 47.4 us against 37.4-37.9 us
// now for 16100 rows of H 768, bf16, as the FP8 step calls it; a copy of the same bytes takes
// 28.0 us (bench/cuda/layer_norm_backward_probe.cu).
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
// At most 16 vectors (256 bytes) of a row per lane: H <= 4096 for bf16/fp16, 2048 for fp32. The
// backward takes the same rows, at one vector per thread: groups of up to 512 threads.
constexpr int kMaxIters = 16;
constexpr int kReduceRows = 32;  // threads per column of ReducePartialsKernel

// Resident blocks of 4 warps per SM that the forward's register budget aims at (__launch_bounds__):
// a warp works on one row at a time, so latency is hidden by warps alone. The value is the
// largest at which ptxas still keeps the row in registers (sm_90, bf16: H <= 768 in 64
// registers); wider rows get what they need.
constexpr int ForwardMinBlocks(int iters) { return iters <= 3 ? 8 : 1; }

// The backward's blocks hold as many row groups as fit in this many threads (at least one group).
constexpr int kBackwardBlockThreads = 192;
// Registers per backward thread: the row's vectors, the next row's (loaded ahead) and 3 vectors of
// column sums. H200, H 768 bf16, the probe's variants (FUSED_KERNELS.md, session 13): 96 (3 blocks
// of 192 threads per SM) ran 36.3 us, what ptxas picks unbounded (104: 2 blocks) 37.9 us, and
// 64-80 spilled and ran 56-89 us.
constexpr int kBackwardRegisters = 96;
// Shared slots per warp of a row group for the row sums: 2 sums, each for 2 rows in turn (a row
// reads its slots while the group's faster warps write the next row's).
constexpr int kRowSumSlotsPerWarp = 4;

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

// Columns of the backward's partials: d_gamma, d_beta and, when asked for, d_bias.
__host__ __device__ inline int64_t BackwardWidth(int64_t hidden, bool need_bias_grad) {
  return (need_bias_grad ? 3 : 2) * hidden;
}

// Threads of one backward row group: the row's 16-byte vectors, rounded up to whole warps (the
// sums across the group are warp shuffles, then one shared slot per warp).
__host__ __device__ inline int64_t BackwardGroupThreads(int64_t hidden, int vec) {
  const int64_t vecs = hidden / vec;
  return (vecs + kLanes - 1) / kLanes * kLanes;
}

// What one thread reads of one row: its vector of d_out, extra and sum, its mask bits, the row's
// statistics.
template <typename T>
struct BackwardRowSlice {
  Words d_out{}, extra{}, sum{};
  MaskBits<kVecOf<T>> keep = 0;
  float mean = 0.f, rstd = 0.f;
};

template <typename T>
__device__ __forceinline__ BackwardRowSlice<T> LoadRowSlice(const ResidualLayerNormBackwardArgs& a,
                                                            int64_t row, int64_t col) {
  constexpr int kVec = kVecOf<T>;
  const int64_t at = row * a.hidden + col;
  BackwardRowSlice<T> r;
  r.d_out = LoadWords(static_cast<const T*>(a.d_out) + at);
  if (a.extra != nullptr) r.extra = LoadWords(static_cast<const T*>(a.extra) + at);
  r.sum = LoadWords(static_cast<const T*>(a.sum) + at);
  if (a.mask != nullptr) r.keep = *reinterpret_cast<const MaskBits<kVec>*>(a.mask + at);
  r.mean = __ldg(a.mean + row);
  r.rstd = __ldg(a.rstd + row);
  return r;
}

// The sums of `a` and `b` over the calling thread's row group: warp sums, then the group's warps'
// sums through `slots` ([2][warps]) in warp order, after barrier `barrier` of the group's
// `threads`.
__device__ __forceinline__ void GroupSums(float& a, float& b, float* slots, int warps, int barrier,
                                          int threads) {
  a = WarpSum(a);
  b = WarpSum(b);
  const int warp = (static_cast<int>(threadIdx.x) % threads) / kLanes;
  if (threadIdx.x % kLanes == 0) {
    slots[warp] = a;
    slots[warps + warp] = b;
  }
  asm volatile("bar.sync %0, %1;" ::"r"(barrier), "r"(threads) : "memory");
  a = 0.f;
  b = 0.f;
  for (int w = 0; w < warps; ++w) {
    a += slots[w];
    b += slots[warps + w];
  }
}

// p[q * hidden + k] = sums of quantity q (d_gamma, d_beta, then d_bias when asked for), or
// += onto the sums from p when `load`: this thread's kVec columns, p already at its column.
template <int kVec>
__device__ __forceinline__ void MoveSums(float* p, int64_t hidden, bool need_bias_grad, bool load,
                                         float (&gamma)[kVec], float (&beta)[kVec],
                                         float (&bias)[kVec]) {
  auto move = [&](float* q, float(&sums)[kVec]) {
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
      if (load) {
        sums[k] += q[k];
      } else {
        q[k] = sums[k];
      }
    }
  };
  move(p, gamma);
  move(p + hidden, beta);
  if (need_bias_grad) move(p + 2 * hidden, bias);
}

// The block's column sums into its row of the partials: the groups past the first leave theirs in
// `others` ([groups - 1][quantities * hidden] of shared memory), and the first group adds them in
// group order. Every thread of the block calls it (a block barrier).
template <int kVec>
__device__ __forceinline__ void WriteBlockPartials(const ResidualLayerNormBackwardArgs& a,
                                                   float (&gamma)[kVec], float (&beta)[kVec],
                                                   float (&bias)[kVec], int groups, int group,
                                                   bool active, int64_t col, float* others) {
  const int64_t width = BackwardWidth(a.hidden, a.need_bias_grad);
  if (group > 0 && active) {
    MoveSums<kVec>(others + (group - 1) * width + col, a.hidden, a.need_bias_grad, false, gamma,
                   beta, bias);
  }
  __syncthreads();
  if (group > 0 || !active) return;
  for (int other = 1; other < groups; ++other) {
    MoveSums<kVec>(others + (other - 1) * width + col, a.hidden, a.need_bias_grad, true, gamma,
                   beta, bias);
  }
  MoveSums<kVec>(a.partials + blockIdx.x * width + col, a.hidden, a.need_bias_grad, false, gamma,
                 beta, bias);
}

// Launched with kBackwardBlockThreads / BackwardGroupThreads groups of BackwardGroupThreads
// threads (>= 1 group), and dynamic shared memory of BackwardSharedBytes.
template <typename T>
__global__ void __maxnreg__(kBackwardRegisters)
    BackwardKernel(const ResidualLayerNormBackwardArgs a) {
  WaitForPriorKernels();
  constexpr int kVec = kVecOf<T>;
  const int64_t hidden = a.hidden;
  const int group_threads = static_cast<int>(BackwardGroupThreads(hidden, kVec));
  const int groups = static_cast<int>(blockDim.x) / group_threads;
  const int group = static_cast<int>(threadIdx.x) / group_threads;
  const int t = static_cast<int>(threadIdx.x) % group_threads;
  const int warps = group_threads / kLanes;
  // The threads past the row's vectors load nothing: their slices stay zero, and so do their
  // contributions to the sums.
  const bool active = t < hidden / kVec;
  const int64_t col = active ? static_cast<int64_t>(t) * kVec : 0;
  // Shared: [groups][2][warps] slots for the two row sums (alternating rows, so that one barrier
  // a row suffices), then [groups - 1][quantities * hidden] for the other groups' column sums.
  extern __shared__ float4 shared_raw[];
  float* slots = reinterpret_cast<float*>(shared_raw) + group * kRowSumSlotsPerWarp * warps;
  const float inv_hidden = 1.f / static_cast<float>(hidden);
  const float scale = a.p > 0.f ? 1.f / (1.f - a.p) : 1.f;
  const bool fp8 = a.fp8.scale != nullptr;
  const float fp8_scale = fp8 ? *a.fp8.scale : 0.f;
  float fp8_max = 0.f;
  float gamma[kVec], acc_gamma[kVec] = {}, acc_beta[kVec] = {}, acc_bias[kVec] = {};
  LoadParams<kVec>(a.gamma + col, gamma);

  // The next row's loads go out before this row's arithmetic: with one vector per thread, a
  // thread's own loads would otherwise be all the memory traffic it has in flight.
  const int64_t stride = static_cast<int64_t>(gridDim.x) * groups;
  int64_t row = static_cast<int64_t>(blockIdx.x) * groups + group;
  BackwardRowSlice<T> next;
  if (active && row < a.rows) next = LoadRowSlice<T>(a, row, col);
  for (int parity = 0; row < a.rows; row += stride, parity ^= 1) {
    const BackwardRowSlice<T> r = next;
    if (active && row + stride < a.rows) next = LoadRowSlice<T>(a, row + stride, col);
    float g[kVec], xhat[kVec];
    IncomingGrad<T, kVec>(r.d_out, r.extra, a.extra != nullptr, g);
    UnpackWords<T, kVec>(r.sum, xhat);
    float sum_gg = 0.f, sum_gg_xhat = 0.f;
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
      // Zero already for the threads past the row; said again because it keeps ptxas's spills at
      // 96 registers to 8 bytes (36 without).
      if (!active) g[k] = 0.f;
      xhat[k] = (xhat[k] - r.mean) * r.rstd;
      const float gg = g[k] * gamma[k];
      acc_gamma[k] += g[k] * xhat[k];
      acc_beta[k] += g[k];
      sum_gg += gg;
      sum_gg_xhat += gg * xhat[k];
    }
    GroupSums(sum_gg, sum_gg_xhat, slots + parity * 2 * warps, warps, 1 + group, group_threads);
    const float mean_gg = sum_gg * inv_hidden, mean_gg_xhat = sum_gg_xhat * inv_hidden;
    if (!active) continue;
    const int64_t at = row * hidden + col;
    float d[kVec];
#pragma unroll
    for (int k = 0; k < kVec; ++k)
      d[k] = r.rstd * (g[k] * gamma[k] - mean_gg - xhat[k] * mean_gg_xhat);
    Store<T, kVec>(static_cast<T*>(a.d_sum) + at, d);
    if (a.mask != nullptr) {
#pragma unroll
      for (int k = 0; k < kVec; ++k) d[k] = Kept<kVec>(r.keep, k) ? d[k] * scale : 0.f;
      if (!fp8) Store<T, kVec>(static_cast<T*>(a.d_input) + at, d);
    }
    if (fp8) {  // d_input as T holds it, in FP8
      float rounded[kVec];
#pragma unroll
      for (int k = 0; k < kVec; ++k) rounded[k] = ToFloat(FromFloat<T>(d[k]));
      StoreFp8<kVec>(a.fp8, a.fp8_d_input + at, rounded, fp8_scale, fp8_max);
    }
#pragma unroll
    for (int k = 0; k < kVec; ++k) acc_bias[k] += d[k];
  }
  if (fp8) {
    // The FP8 rows past the real ones are zero; the warps' maxima go into the amax.
    for (int64_t pad = a.rows + static_cast<int64_t>(blockIdx.x) * groups + group;
         active && pad < a.fp8.padded_rows; pad += stride) {
      StoreFp8Zeros<kVec>(a.fp8_d_input + pad * hidden + col);
    }
    WarpMaxToAmax(fp8_max, a.fp8.amax);
  }
  WriteBlockPartials<kVec>(
      a, acc_gamma, acc_beta, acc_bias, groups, group, active, col,
      reinterpret_cast<float*>(shared_raw) + groups * kRowSumSlotsPerWarp * warps);
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

// Row groups of one backward block for rows of `hidden` elements of T (>= 1).
template <typename T>
int BackwardGroups(int64_t hidden) {
  const int64_t fit = kBackwardBlockThreads / BackwardGroupThreads(hidden, kVecOf<T>);
  return static_cast<int>(fit < 1 ? 1 : fit);
}

template <typename T>
unsigned BackwardBlockThreads(int64_t hidden) {
  return static_cast<unsigned>(BackwardGroups<T>(hidden) * BackwardGroupThreads(hidden, kVecOf<T>));
}

// Dynamic shared memory of one backward block: the row sums' slots, then the column sums of the
// groups past the first (BackwardKernel).
template <typename T>
size_t BackwardSharedBytes(int64_t hidden, bool need_bias_grad) {
  const int64_t groups = BackwardGroups<T>(hidden);
  const int64_t warps = BackwardGroupThreads(hidden, kVecOf<T>) / kLanes;
  return static_cast<size_t>(groups * kRowSumSlotsPerWarp * warps +
                             (groups - 1) * BackwardWidth(hidden, need_bias_grad)) *
         sizeof(float);
}

template <typename T>
cudaError_t BackwardTyped(const ResidualLayerNormBackwardArgs& a, cudaStream_t stream) {
  const int64_t width = BackwardWidth(a.hidden, a.need_bias_grad);
  const cudaError_t err =
      LaunchDependent(BackwardKernel<T>, dim3(static_cast<unsigned>(a.blocks)),
                      dim3(BackwardBlockThreads<T>(a.hidden)),
                      BackwardSharedBytes<T>(a.hidden, a.need_bias_grad), stream, a);
  if (err != cudaSuccess) return err;
  return LaunchDependent(ReducePartialsKernel, dim3(PartialsGrid(width)),
                         PartialsBlock<kReduceRows>(), 0, stream, a.partials, a.d_gamma, a.d_beta,
                         a.d_bias, a.blocks, a.hidden, width);
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
  return ClearIfFailed(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      per_sm, BackwardKernel<T>, static_cast<int>(BackwardBlockThreads<T>(hidden)),
      BackwardSharedBytes<T>(hidden, need_bias_grad)));
}

// QueryBackwardBlocksPerSm (>= 1) for the current device, remembered per (device, type, hidden,
// need_bias_grad), which fix the kernel instance, its block size and its shared memory: the
// query took microseconds of host time, and a training step runs the backward 24 times. A failed
// query only costs occupancy: one block per SM, and the next call asks again.
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
  const int64_t groups = DispatchType(type, int64_t{1}, [&](auto tag) {
    return static_cast<int64_t>(BackwardGroups<typename decltype(tag)::type>(hidden));
  });
  const int64_t by_rows = (rows + groups - 1) / groups;
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
