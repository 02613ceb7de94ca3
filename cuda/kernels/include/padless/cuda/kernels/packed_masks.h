// Index tensors that packed batches need, computed from cu_seqlens on the batch's device: per-token
// sequence and position ids (positions restart at 0 for every sequence), segment ids of packed
// rows, and the block-diagonal attention mask [R, 1, L, L] that keeps packed sequences apart.
#ifndef PADLESS_CUDA_KERNELS_PACKED_MASKS_H_
#define PADLESS_CUDA_KERNELS_PACKED_MASKS_H_

#include <ATen/core/Tensor.h>

#include <cstdint>

#include "absl/status/statusor.h"

namespace padless::cuda {

struct VarlenIds {
  at::Tensor sequence_ids;  // int64 [T]: the sequence holding each token
  at::Tensor position_ids;  // int64 [T]: the token's position inside its sequence
};

// cu_seqlens: int32 [n+1]; total_tokens = cu_seqlens[n], or -1 to read it (a sync on a GPU).
absl::StatusOr<VarlenIds> VarlenIdsFromCuSeqlens(const at::Tensor& cu_seqlens,
                                                 int64_t total_tokens = -1);

// Segment ids of packed rows: int64 [rows, len], -1 on padding, b on the tokens of sequence b,
// which sits in row locations[b, 0] from column locations[b, 1] (int64 [n, 2], as
// batching::Batch::sequence_location). Tokens outside the grid are dropped.
absl::StatusOr<at::Tensor> SegmentIdsFromCuSeqlens(const at::Tensor& cu_seqlens,
                                                   const at::Tensor& locations, int64_t rows,
                                                   int64_t len, int64_t total_tokens = -1);

// Bool [R, 1, L, L] from segment ids [R, L] (int64, -1 on padding): true where query and key are
// tokens of the same sequence. With pad_attends_self, padding queries attend to themselves only,
// so that no softmax row is fully masked (which would give NaN).
absl::StatusOr<at::Tensor> BlockDiagonalMask(const at::Tensor& segment_ids,
                                             bool pad_attends_self = true);

// SegmentIdsFromCuSeqlens followed by BlockDiagonalMask.
absl::StatusOr<at::Tensor> BlockDiagonalMaskFromCuSeqlens(const at::Tensor& cu_seqlens,
                                                          const at::Tensor& locations, int64_t rows,
                                                          int64_t len, bool pad_attends_self = true,
                                                          int64_t total_tokens = -1);

// The same from torch ops (repeat_interleave, index_select, index_put_, broadcast compares).
namespace reference {
absl::StatusOr<VarlenIds> VarlenIdsFromCuSeqlens(const at::Tensor& cu_seqlens,
                                                 int64_t total_tokens = -1);
absl::StatusOr<at::Tensor> SegmentIdsFromCuSeqlens(const at::Tensor& cu_seqlens,
                                                   const at::Tensor& locations, int64_t rows,
                                                   int64_t len, int64_t total_tokens = -1);
absl::StatusOr<at::Tensor> BlockDiagonalMask(const at::Tensor& segment_ids,
                                             bool pad_attends_self = true);
}  // namespace reference

}  // namespace padless::cuda

#endif  // PADLESS_CUDA_KERNELS_PACKED_MASKS_H_
