// Row gather/scatter between padded and packed layouts, varlen ids, segment ids and block-diagonal
// masks. The row copies are dtype-agnostic: they move `row_bytes` with the widest vector type the
// row width and the pointers' alignment allow (16 bytes for bf16 H % 8 == 0 or fp32 H % 4 == 0).
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels.h"

namespace padless::cuda::internal {
namespace {

constexpr int kThreads = 256;
// Enough resident blocks to fill an H200 (132 SMs x 8 blocks of 256); the loops are grid-stride.
constexpr int64_t kMaxBlocks = 132 * 16;

int Blocks(int64_t work) {
  const int64_t b = (work + kThreads - 1) / kThreads;
  return static_cast<int>(b < 1 ? 1 : (b > kMaxBlocks ? kMaxBlocks : b));
}

// The sequence that holds token t: the largest b in [0, batch) with cu[b] <= t. Empty sequences
// (cu[b] == cu[b+1]) are skipped over naturally.
__device__ __forceinline__ int64_t SequenceOf(const int32_t* __restrict__ cu, int64_t batch,
                                              int64_t t) {
  int64_t lo = 0, hi = batch;
  while (hi - lo > 1) {
    const int64_t mid = (lo + hi) >> 1;
    if (__ldg(cu + mid) <= t) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return lo;
}

template <typename V>
__global__ void UnpadKernel(const V* __restrict__ padded, V* __restrict__ packed,
                            const int32_t* __restrict__ cu, int64_t batch, int64_t max_len,
                            int64_t total, int64_t vecs) {
  const int64_t n = total * vecs;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < n;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t t = idx / vecs;
    const int64_t c = idx - t * vecs;
    const int64_t b = SequenceOf(cu, batch, t);
    const int64_t i = t - __ldg(cu + b);
    V v{};
    if (i < max_len) v = padded[(b * max_len + i) * vecs + c];
    packed[idx] = v;
  }
}

template <typename V>
__global__ void PadKernel(const V* __restrict__ packed, V* __restrict__ padded,
                          const int32_t* __restrict__ cu, int64_t batch, int64_t max_len,
                          int64_t vecs) {
  const int64_t n = batch * max_len * vecs;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < n;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t row = idx / vecs;
    const int64_t c = idx - row * vecs;
    const int64_t b = row / max_len;
    const int64_t i = row - b * max_len;
    const int64_t begin = __ldg(cu + b);
    V v{};
    if (i < __ldg(cu + b + 1) - begin) v = packed[(begin + i) * vecs + c];
    padded[idx] = v;
  }
}

template <typename V>
__global__ void FirstRowsKernel(const V* __restrict__ in, V* __restrict__ out,
                                const int32_t* __restrict__ cu, int64_t batch, int64_t vecs) {
  const int64_t n = batch * vecs;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < n;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t b = idx / vecs;
    const int64_t c = idx - b * vecs;
    const int64_t begin = __ldg(cu + b);
    V v{};
    if (__ldg(cu + b + 1) > begin) v = in[begin * vecs + c];
    out[idx] = v;
  }
}

// Calls f(V{}) with the widest of uint4 / uint2 / uint32_t / uint16_t / uint8_t that divides the
// row width and the alignment of every pointer.
template <typename F>
cudaError_t WithVector(int64_t row_bytes, const void* a, const void* b, F&& f) {
  const auto align = [&](int64_t w) {
    return row_bytes % w == 0 && reinterpret_cast<uintptr_t>(a) % w == 0 &&
           reinterpret_cast<uintptr_t>(b) % w == 0;
  };
  if (align(16)) return f(uint4{}, row_bytes / 16);
  if (align(8)) return f(uint2{}, row_bytes / 8);
  if (align(4)) return f(uint32_t{}, row_bytes / 4);
  if (align(2)) return f(uint16_t{}, row_bytes / 2);
  return f(uint8_t{}, row_bytes);
}

__global__ void VarlenIdsKernel(const int32_t* __restrict__ cu, int64_t batch, int64_t total,
                                int64_t* __restrict__ sequence_ids,
                                int64_t* __restrict__ position_ids) {
  for (int64_t t = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; t < total;
       t += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t b = SequenceOf(cu, batch, t);
    if (sequence_ids != nullptr) sequence_ids[t] = b;
    if (position_ids != nullptr) position_ids[t] = t - __ldg(cu + b);
  }
}

__global__ void SegmentIdsKernel(const int32_t* __restrict__ cu,
                                 const int64_t* __restrict__ locations, int64_t batch,
                                 int64_t total, int64_t rows, int64_t len,
                                 int64_t* __restrict__ segment_ids) {
  for (int64_t t = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; t < total;
       t += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t b = SequenceOf(cu, batch, t);
    const int64_t row = __ldg(locations + 2 * b);
    const int64_t col = __ldg(locations + 2 * b + 1) + (t - __ldg(cu + b));
    if (row >= 0 && row < rows && col >= 0 && col < len) segment_ids[row * len + col] = b;
  }
}

// One thread writes 16 consecutive mask bytes of one query row (a single 16-byte store when the
// row length allows it).
__global__ void BlockDiagonalMaskKernel(const int64_t* __restrict__ seg, int64_t rows, int64_t len,
                                        bool pad_attends_self, bool* __restrict__ mask) {
  const int64_t chunks = (len + 15) / 16;
  const int64_t n = rows * len * chunks;
  const bool vector_store = len % 16 == 0 && reinterpret_cast<uintptr_t>(mask) % 16 == 0;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < n;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t query_row = idx / chunks;  // r * len + i
    const int64_t j0 = (idx - query_row * chunks) * 16;
    const int64_t r = query_row / len;
    const int64_t i = query_row - r * len;
    const int64_t si = __ldg(seg + query_row);
    const int64_t* key = seg + r * len;
    union {
      uint4 v;
      unsigned char b[16];
    } out;
    for (int k = 0; k < 16; ++k) {
      const int64_t j = j0 + k;
      bool m = false;
      if (j < len) m = (si >= 0 && __ldg(key + j) == si) || (pad_attends_self && i == j);
      out.b[k] = m ? 1 : 0;
    }
    bool* dst = mask + query_row * len + j0;
    if (vector_store) {
      *reinterpret_cast<uint4*>(dst) = out.v;
    } else {
      for (int k = 0; k < 16 && j0 + k < len; ++k) dst[k] = out.b[k] != 0;
    }
  }
}

// The fast path for rows whose length is a multiple of 16 (and at most kMaxSharedLen): the key
// row's segment ids sit in shared memory as int32, and each thread builds one 16-byte chunk of a
// query row from four 16-byte shared loads. Block (x, r) writes query rows
// [x * rows_per_block, ...) of packed row r.
constexpr int64_t kMaxSharedLen = 12288;  // 48 KiB of int32

__global__ void BlockDiagonalMaskSharedKernel(const int64_t* __restrict__ seg, int64_t len,
                                              int64_t rows_per_block, bool pad_attends_self,
                                              bool* __restrict__ mask) {
  extern __shared__ int4 shared_raw[];
  int32_t* keys = reinterpret_cast<int32_t*>(shared_raw);
  const int64_t r = blockIdx.y;
  for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
    keys[j] = static_cast<int32_t>(__ldg(seg + r * len + j));
  }
  __syncthreads();
  const int64_t chunks = len / 16;
  const int64_t first_row = blockIdx.x * rows_per_block;
  const int64_t work = rows_per_block * chunks;
  for (int64_t idx = threadIdx.x; idx < work; idx += blockDim.x) {
    const int64_t i = first_row + idx / chunks;
    if (i >= len) break;
    const int64_t c = idx - (idx / chunks) * chunks;
    const int32_t si = keys[i];
    const int4* k4 = reinterpret_cast<const int4*>(keys + c * 16);
    uint32_t words[4];
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const int4 k = k4[q];
      const int32_t kk[4] = {k.x, k.y, k.z, k.w};
      uint32_t w = 0;
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int64_t j = c * 16 + q * 4 + e;
        const bool m = (si >= 0 && kk[e] == si) || (pad_attends_self && i == j);
        w |= static_cast<uint32_t>(m) << (8 * e);
      }
      words[q] = w;
    }
    *reinterpret_cast<uint4*>(mask + (r * len + i) * len + c * 16) =
        make_uint4(words[0], words[1], words[2], words[3]);
  }
}

}  // namespace

cudaError_t LaunchUnpadRows(const void* padded, void* packed, const int32_t* cu_seqlens,
                            int64_t batch, int64_t max_len, int64_t total_tokens, int64_t row_bytes,
                            cudaStream_t stream) {
  if (total_tokens == 0 || row_bytes == 0) return cudaSuccess;
  return WithVector(row_bytes, padded, packed, [&](auto v, int64_t vecs) {
    using V = decltype(v);
    UnpadKernel<V><<<Blocks(total_tokens * vecs), kThreads, 0, stream>>>(
        static_cast<const V*>(padded), static_cast<V*>(packed), cu_seqlens, batch, max_len,
        total_tokens, vecs);
    return cudaGetLastError();
  });
}

cudaError_t LaunchPadRows(const void* packed, void* padded, const int32_t* cu_seqlens,
                          int64_t batch, int64_t max_len, int64_t row_bytes, cudaStream_t stream) {
  if (batch * max_len == 0 || row_bytes == 0) return cudaSuccess;
  return WithVector(row_bytes, packed, padded, [&](auto v, int64_t vecs) {
    using V = decltype(v);
    PadKernel<V><<<Blocks(batch * max_len * vecs), kThreads, 0, stream>>>(
        static_cast<const V*>(packed), static_cast<V*>(padded), cu_seqlens, batch, max_len, vecs);
    return cudaGetLastError();
  });
}

cudaError_t LaunchFirstRows(const void* in, void* out, const int32_t* cu_seqlens, int64_t batch,
                            int64_t row_bytes, cudaStream_t stream) {
  if (batch == 0 || row_bytes == 0) return cudaSuccess;
  return WithVector(row_bytes, in, out, [&](auto v, int64_t vecs) {
    using V = decltype(v);
    FirstRowsKernel<V><<<Blocks(batch * vecs), kThreads, 0, stream>>>(
        static_cast<const V*>(in), static_cast<V*>(out), cu_seqlens, batch, vecs);
    return cudaGetLastError();
  });
}

cudaError_t LaunchVarlenIds(const int32_t* cu_seqlens, int64_t batch, int64_t total_tokens,
                            int64_t* sequence_ids, int64_t* position_ids, cudaStream_t stream) {
  if (total_tokens == 0) return cudaSuccess;
  VarlenIdsKernel<<<Blocks(total_tokens), kThreads, 0, stream>>>(cu_seqlens, batch, total_tokens,
                                                                 sequence_ids, position_ids);
  return cudaGetLastError();
}

cudaError_t LaunchSegmentIdsFromLocations(const int32_t* cu_seqlens, const int64_t* locations,
                                          int64_t batch, int64_t total_tokens, int64_t rows,
                                          int64_t len, int64_t* segment_ids, cudaStream_t stream) {
  if (rows * len == 0) return cudaSuccess;
  // All-ones bytes are -1 in two's complement int64.
  cudaError_t err =
      cudaMemsetAsync(segment_ids, 0xff, static_cast<size_t>(rows * len) * sizeof(int64_t), stream);
  if (err != cudaSuccess || total_tokens == 0) return err;
  SegmentIdsKernel<<<Blocks(total_tokens), kThreads, 0, stream>>>(
      cu_seqlens, locations, batch, total_tokens, rows, len, segment_ids);
  return cudaGetLastError();
}

cudaError_t LaunchBlockDiagonalMask(const int64_t* segment_ids, int64_t rows, int64_t len,
                                    bool pad_attends_self, bool* mask, cudaStream_t stream) {
  if (rows * len == 0) return cudaSuccess;
  if (len % 16 == 0 && len <= kMaxSharedLen && reinterpret_cast<uintptr_t>(mask) % 16 == 0 &&
      rows <= 65535) {
    // About 64 KiB of mask per block: enough work to amortise loading the key row.
    const int64_t rows_per_block = len >= 65536 ? 1 : 65536 / len;
    const dim3 grid(static_cast<unsigned>((len + rows_per_block - 1) / rows_per_block),
                    static_cast<unsigned>(rows));
    BlockDiagonalMaskSharedKernel<<<grid, kThreads, len * sizeof(int32_t), stream>>>(
        segment_ids, len, rows_per_block, pad_attends_self, mask);
    return cudaGetLastError();
  }
  BlockDiagonalMaskKernel<<<Blocks(rows * len * ((len + 15) / 16)), kThreads, 0, stream>>>(
      segment_ids, rows, len, pad_attends_self, mask);
  return cudaGetLastError();
}

}  // namespace padless::cuda::internal
