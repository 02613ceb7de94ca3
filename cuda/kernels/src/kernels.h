// Launchers of the CUDA kernels behind unpad.h, segment_pool.h and packed_masks.h. Raw pointers
// only: the .cu files must not include torch headers (nvcc on them is very slow). Every launcher
// enqueues on `stream`, returns cudaGetLastError(), and assumes the caller validated shapes.
#ifndef PADLESS_CUDA_SRC_KERNELS_H_
#define PADLESS_CUDA_SRC_KERNELS_H_

#include <cuda_runtime_api.h>

#include <cstdint>

namespace padless::cuda::internal {

enum class FloatType { kFloat32, kBFloat16, kFloat16 };

// packed[t] = padded[b, t - cu[b]] for the sequence b holding token t; rows are `row_bytes` wide.
// Tokens at positions >= max_len (an invalid cu_seqlens) are written as zeros.
cudaError_t LaunchUnpadRows(const void* padded, void* packed, const int32_t* cu_seqlens,
                            int64_t batch, int64_t max_len, int64_t total_tokens, int64_t row_bytes,
                            cudaStream_t stream);

// padded[b, i] = packed[cu[b] + i] for i < len(b), zeros elsewhere (every output row is written).
cudaError_t LaunchPadRows(const void* packed, void* padded, const int32_t* cu_seqlens,
                          int64_t batch, int64_t max_len, int64_t row_bytes, cudaStream_t stream);

// out[b] = in[cu[b]] (the first token of each sequence), zeros for empty sequences.
cudaError_t LaunchFirstRows(const void* in, void* out, const int32_t* cu_seqlens, int64_t batch,
                            int64_t row_bytes, cudaStream_t stream);

// out[b, :] = mean of in[cu[b]:cu[b+1], :] accumulated in fp32; zeros for empty sequences. `out`
// is of `type`, or fp32 when `float_out`.
cudaError_t LaunchSegmentMean(const void* in, void* out, const int32_t* cu_seqlens, int64_t batch,
                              int64_t hidden, FloatType type, bool float_out, cudaStream_t stream);

// For every token t < total: sequence_ids[t] = b and position_ids[t] = t - cu[b], where b holds t.
// Either output may be null.
cudaError_t LaunchVarlenIds(const int32_t* cu_seqlens, int64_t batch, int64_t total_tokens,
                            int64_t* sequence_ids, int64_t* position_ids, cudaStream_t stream);

// segment_ids [rows, len] = -1, then sequence b's tokens at (location[b,0], location[b,1] + k)
// for k < len(b) get b. Tokens that fall outside the grid are dropped.
cudaError_t LaunchSegmentIdsFromLocations(const int32_t* cu_seqlens, const int64_t* locations,
                                          int64_t batch, int64_t total_tokens, int64_t rows,
                                          int64_t len, int64_t* segment_ids, cudaStream_t stream);

// mask[r, i, j] = seg[r,i] >= 0 && seg[r,i] == seg[r,j], or i == j when pad_attends_self.
cudaError_t LaunchBlockDiagonalMask(const int64_t* segment_ids, int64_t rows, int64_t len,
                                    bool pad_attends_self, bool* mask, cudaStream_t stream);

}  // namespace padless::cuda::internal

#endif  // PADLESS_CUDA_SRC_KERNELS_H_
