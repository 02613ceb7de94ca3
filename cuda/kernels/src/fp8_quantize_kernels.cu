// The FP8 cast and cast-transpose with the amax of the input: see fp8_quantize_kernels.h.
//
// The bytes match the reference's (clamp to +-max in fp32, then torch's float -> float8 cast):
// cvt.rn.satfinite (what __nv_cvt_float2_to_fp8x2 emits on sm_89+) rounds to nearest-even like
// c10's Float8_e4m3fn / Float8_e5m2 constructors, and saturates +-inf and everything beyond the
// largest finite value to it, which is what the clamp does first. Only NaN could differ: cvt
// writes 0x7f whatever the sign, c10 writes 0x7f | sign (both formats). The GPU's multiply returns
// the positive canonical NaN for a NaN operand (on the H200: -NaN * 2 = 0x7fffffff), so the bytes
// agree already; NaN is still patched to c10's byte here so that they agree whatever sign a NaN
// product has.
#include "fp8_quantize_kernels.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <algorithm>
#include <cstdint>

#include "dependent_launch.cuh"
#include "float_type_dispatch.cuh"
#include "fp8_cast.cuh"

namespace padless::cuda::internal {
namespace {

constexpr int kVec = kFp8Vec;
constexpr int kThreads = 256;    // per block, both kernels
constexpr int kBlocksPerSm = 8;  // rows-only grid: 2048 resident threads per SM
constexpr int kUnroll = 4;       // rows-only: vectors loaded ahead of their stores
constexpr int kTile = 64;        // cast-transpose: a block's tile is kTile x kTile elements
constexpr int kTileVecs = kTile * kTile / kVec / kThreads;  // vectors per thread in a tile
// Shared row stride of the tile in 4-byte words: 16 words of bytes plus one, so that the 4 x 4
// byte blocks one warp reads (8 row groups x 4 column groups) fall in 32 different banks.
constexpr int kTileWords = kTile / 4 + 1;

static_assert(kTileVecs * kVec * kThreads == kTile * kTile, "the tile splits into whole vectors");

// x * scale (fp32 multiply, as the reference's) as 8 fp8 bytes; folds max |x| into `m`.
template <Fp8Type F>
__device__ __forceinline__ uint2 Quantize8(const float (&x)[kVec], float scale, float& m) {
  float v[kVec];
#pragma unroll
  for (int i = 0; i < kVec; ++i) {
    m = fmaxf(m, fabsf(x[i]));  // fmaxf returns the other operand for NaN: NaN is ignored
    v[i] = __fmul_rn(x[i], scale);
  }
  return make_uint2(Fp8x4<F>(v), Fp8x4<F>(v + 4));
}

// amax = max(amax, the block's max of `m`). Every thread of the block calls it. atomicMax on the
// bits orders non-negative floats (m >= 0) correctly, and any negative old value is below them.
__device__ __forceinline__ void BlockMaxToAmax(float m, float* amax) {
  __shared__ float warp_max[kThreads / 32];
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) {
    m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, offset));
  }
  if (threadIdx.x % 32 == 0) warp_max[threadIdx.x / 32] = m;
  __syncthreads();
  if (threadIdx.x != 0) return;
#pragma unroll
  for (int w = 1; w < kThreads / 32; ++w) m = fmaxf(m, warp_max[w]);
  atomicMax(reinterpret_cast<int*>(amax), __float_as_int(m));
}

// Rows only: vector v (8 elements) of the [padded_rows, cols] output, grid-stride; vectors from
// real_vecs on are padding (zero).
template <typename T, Fp8Type F>
__global__ void __launch_bounds__(kThreads)
    CastRowsKernel(const T* __restrict__ x, const float* __restrict__ scale,
                   float* __restrict__ amax, uint2* __restrict__ out, int64_t real_vecs,
                   int64_t total_vecs) {
  WaitForPriorKernels();
  const float s = *scale;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  int64_t v = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  float m = 0.f;
  // kUnroll vectors' loads before their stores: enough bytes in flight for the bandwidth.
  for (; v + (kUnroll - 1) * stride < real_vecs; v += kUnroll * stride) {
    float f[kUnroll][kVec];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) LoadFloats(x + (v + u * stride) * kVec, f[u]);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) out[v + u * stride] = Quantize8<F>(f[u], s, m);
  }
  for (; v < real_vecs; v += stride) {
    float f[kVec];
    LoadFloats(x + v * kVec, f);
    out[v] = Quantize8<F>(f, s, m);
  }
  for (; v < total_vecs; v += stride) out[v] = make_uint2(0u, 0u);
  if (amax != nullptr) BlockMaxToAmax(m, amax);
}

// Four 4-byte rows of a 4 x 4 byte block -> its four columns (o[j] byte i = a[i] byte j).
__device__ __forceinline__ void Transpose4x4(const uint32_t (&a)[4], uint32_t (&o)[4]) {
  const uint32_t lo01 = __byte_perm(a[0], a[1], 0x5140), hi01 = __byte_perm(a[0], a[1], 0x7362);
  const uint32_t lo23 = __byte_perm(a[2], a[3], 0x5140), hi23 = __byte_perm(a[2], a[3], 0x7362);
  o[0] = __byte_perm(lo01, lo23, 0x5410);
  o[1] = __byte_perm(lo01, lo23, 0x7632);
  o[2] = __byte_perm(hi01, hi23, 0x5410);
  o[3] = __byte_perm(hi01, hi23, 0x7632);
}

struct TileArgs {
  const float* scale;
  float* amax;
  uint8_t* out;    // null: rows not written
  uint8_t* out_t;  // [cols, padded_rows]
  int64_t rows, padded_rows, cols;
  int64_t col_tiles;  // tiles per row of tiles

  // The first row and column of this block's tile. Block b owns tile b of the tiles in row-major
  // order, so that the blocks running at the same time read whole rows of x between them (the
  // column-major order measured 2-4 % slower at C = 3072 on the H200, within noise at C = 768),
  // and a 1-D grid has no 65535 limit.
  __device__ int64_t Row0() const { return static_cast<int64_t>(blockIdx.x) / col_tiles * kTile; }
  __device__ int64_t Col0() const { return static_cast<int64_t>(blockIdx.x) % col_tiles * kTile; }
};

// Phase 1's k-th vector of a thread: row r of the tile, columns [c, c + kVec).
struct TileSlot {
  int r, c;
};
__device__ __forceinline__ TileSlot SlotOf(int k) {
  const int i = threadIdx.x + k * kThreads;
  return {i / (kTile / kVec), i % (kTile / kVec) * kVec};
}

// Phase 1 of a tile: the block's rows [row0, row0 + kTile) x columns [col0, col0 + kTile), read
// along the rows (a warp reads 4 rows of 64 elements), converted, written to `out` when asked for
// and to the shared tile. Rows from a.rows on are zero; nothing beyond padded_rows is written.
template <typename T, Fp8Type F>
__device__ __forceinline__ float CastTile(const T* __restrict__ x, const TileArgs& a, int64_t row0,
                                          int64_t col0, uint32_t (*tile)[kTileWords]) {
  const float s = *a.scale;
  float f[kTileVecs][kVec];
  bool real[kTileVecs];
  // Every load of the thread before its first store.
#pragma unroll
  for (int k = 0; k < kTileVecs; ++k) {
    const auto [r, c] = SlotOf(k);
    real[k] = row0 + r < a.rows && col0 + c < a.cols;
    if (real[k]) LoadFloats(x + (row0 + r) * a.cols + col0 + c, f[k]);
  }
  float m = 0.f;
#pragma unroll
  for (int k = 0; k < kTileVecs; ++k) {
    const auto [r, c] = SlotOf(k);
    const uint2 bytes = real[k] ? Quantize8<F>(f[k], s, m) : make_uint2(0u, 0u);
    const int64_t row = row0 + r, col = col0 + c;
    if (a.out != nullptr && row < a.padded_rows && col < a.cols) {
      *reinterpret_cast<uint2*>(a.out + row * a.cols + col) = bytes;
    }
    tile[r][c / 4] = bytes.x;
    tile[r][c / 4 + 1] = bytes.y;
  }
  return m;
}

// Phase 2: thread (lane, warp) owns the 4 x 4 byte block at row group lane % 8 + 8 (warp % 2),
// column group lane / 8 + 4 (warp / 2) of the tile; its 4 transposed rows get one word each, so a
// warp writes 32 contiguous bytes of each of 4 transposed rows per store.
__device__ __forceinline__ void WriteTransposedTile(const TileArgs& a, int64_t row0, int64_t col0,
                                                    const uint32_t (*tile)[kTileWords]) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int rg = lane % 8 + 8 * (warp % 2), cg = lane / 8 + 4 * (warp / 2);
  const int64_t row = row0 + 4 * rg, col = col0 + 4 * cg;
  if (row >= a.padded_rows || col >= a.cols) return;  // padded_rows, cols: multiples of 4
  uint32_t in[4], t[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) in[i] = tile[4 * rg + i][cg];
  Transpose4x4(in, t);
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    *reinterpret_cast<uint32_t*>(a.out_t + (col + j) * a.padded_rows + row) = t[j];
  }
}

// Cast-transpose: a block converts its tile (TileArgs::Row0) and writes it in both layouts.
template <typename T, Fp8Type F>
__global__ void __launch_bounds__(kThreads)
    CastTransposeKernel(const T* __restrict__ x, const TileArgs a) {
  WaitForPriorKernels();
  __shared__ uint32_t tile[kTile][kTileWords];
  const int64_t row0 = a.Row0(), col0 = a.Col0();
  const float m = CastTile<T, F>(x, a, row0, col0, tile);
  __syncthreads();
  if (a.amax != nullptr) BlockMaxToAmax(m, a.amax);
  WriteTransposedTile(a, row0, col0, tile);
}

// The transpose of bytes already in FP8 (a producer wrote the rows): phase 1 reads the tile's
// rows as 8-byte vectors into shared memory (nothing to convert), phase 2 is the cast-transpose's.
// a.rows == a.padded_rows; a.scale and a.amax are unused.
__global__ void __launch_bounds__(kThreads)
    TransposeBytesKernel(const uint8_t* __restrict__ x, const TileArgs a) {
  WaitForPriorKernels();
  __shared__ uint32_t tile[kTile][kTileWords];
  const int64_t row0 = a.Row0(), col0 = a.Col0();
  uint2 bytes[kTileVecs];
#pragma unroll
  for (int k = 0; k < kTileVecs; ++k) {
    const auto [r, c] = SlotOf(k);
    const bool inside = row0 + r < a.rows && col0 + c < a.cols;
    bytes[k] = inside ? *reinterpret_cast<const uint2*>(x + (row0 + r) * a.cols + col0 + c)
                      : make_uint2(0u, 0u);
  }
#pragma unroll
  for (int k = 0; k < kTileVecs; ++k) {
    const auto [r, c] = SlotOf(k);
    tile[r][c / 4] = bytes[k].x;
    tile[r][c / 4 + 1] = bytes[k].y;
  }
  __syncthreads();
  WriteTransposedTile(a, row0, col0, tile);
}

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

template <typename T, Fp8Type F>
cudaError_t LaunchRows(const Fp8QuantizeArgs& a, cudaStream_t stream) {
  const int64_t total_vecs = a.padded_rows * a.cols / kVec;
  int device = 0, sms = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err == cudaSuccess) {
    err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  }
  if (err != cudaSuccess) return err;
  const int64_t blocks =
      std::min<int64_t>(CeilDiv(total_vecs, kThreads), static_cast<int64_t>(sms) * kBlocksPerSm);
  LaunchDependent(CastRowsKernel<T, F>, dim3(static_cast<unsigned>(blocks)), dim3(kThreads), 0,
                  stream, static_cast<const T*>(a.x), a.scale, a.amax,
                  reinterpret_cast<uint2*>(a.out), a.rows * a.cols / kVec, total_vecs);
  return cudaGetLastError();
}

template <typename T, Fp8Type F>
cudaError_t LaunchTiles(const Fp8QuantizeArgs& a, cudaStream_t stream) {
  const int64_t col_tiles = CeilDiv(a.cols, kTile);
  const auto blocks = static_cast<unsigned>(CeilDiv(a.padded_rows, kTile) * col_tiles);
  const TileArgs t{a.scale, a.amax, a.out, a.out_t, a.rows, a.padded_rows, a.cols, col_tiles};
  LaunchDependent(CastTransposeKernel<T, F>, dim3(blocks), dim3(kThreads), 0, stream,
                  static_cast<const T*>(a.x), t);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchTyped(const Fp8QuantizeArgs& a, cudaStream_t stream) {
  if (a.out_t == nullptr) {
    return a.fp8 == Fp8Type::kE4M3 ? LaunchRows<T, Fp8Type::kE4M3>(a, stream)
                                   : LaunchRows<T, Fp8Type::kE5M2>(a, stream);
  }
  return a.fp8 == Fp8Type::kE4M3 ? LaunchTiles<T, Fp8Type::kE4M3>(a, stream)
                                 : LaunchTiles<T, Fp8Type::kE5M2>(a, stream);
}

}  // namespace

bool Fp8QuantizeSupported(int64_t padded_rows, int64_t cols, bool transposed) {
  if (cols % 16 != 0) return false;
  // The cast-transpose grid has one block per tile (at most 2^31 - 1).
  return !transposed ||
         (padded_rows % 4 == 0 && CeilDiv(padded_rows, kTile) * CeilDiv(cols, kTile) <= INT32_MAX);
}

bool Fp8TransposeSupported(int64_t rows, int64_t cols) {
  return cols % kVec == 0 && rows % 4 == 0 &&
         CeilDiv(rows, kTile) * CeilDiv(cols, kTile) <= INT32_MAX;
}

cudaError_t LaunchFp8Transpose(const uint8_t* in, uint8_t* out_t, int64_t rows, int64_t cols,
                               cudaStream_t stream) {
  if (rows == 0 || cols == 0) return cudaSuccess;
  const int64_t col_tiles = CeilDiv(cols, kTile);
  const auto blocks = static_cast<unsigned>(CeilDiv(rows, kTile) * col_tiles);
  const TileArgs t{nullptr, nullptr, nullptr, out_t, rows, rows, cols, col_tiles};
  LaunchDependent(TransposeBytesKernel, dim3(blocks), dim3(kThreads), 0, stream, in, t);
  return cudaGetLastError();
}

cudaError_t LaunchFp8Quantize(const Fp8QuantizeArgs& a, cudaStream_t stream) {
  if (a.padded_rows == 0 || a.cols == 0) return cudaSuccess;
  return DispatchType(a.type, cudaErrorInvalidValue, [&](auto tag) {
    return LaunchTyped<typename decltype(tag)::type>(a, stream);
  });
}

}  // namespace padless::cuda::internal
