#include "padless/cuda/kernels/packed_masks.h"

#include <ATen/ATen.h>

#include "src/op_util.h"

namespace padless::cuda {
namespace {

using internal::ArgError;
using internal::CatchC10;

absl::StatusOr<VarlenIds> VarlenIdsEntry(const at::Tensor& cu, int64_t total_tokens,
                                         bool allow_kernel) {
  if (absl::Status s = internal::CheckCuSeqlens(cu, cu.defined() ? cu.device() : c10::kCPU,
                                                "VarlenIdsFromCuSeqlens");
      !s.ok()) {
    return s;
  }
  return CatchC10(__FILE__, __LINE__, "VarlenIdsFromCuSeqlens", [&] {
    const int64_t total = internal::ResolveTotalTokens(cu, total_tokens);
#ifdef PADLESS_HAVE_CUDA_KERNELS
    if (allow_kernel && internal::UseKernel(cu)) {
      const c10::cuda::CUDAGuard guard(cu.device());
      VarlenIds ids{at::empty({total}, cu.options().dtype(at::kLong)),
                    at::empty({total}, cu.options().dtype(at::kLong))};
      internal::CheckLaunch(internal::LaunchVarlenIds(cu.data_ptr<int32_t>(), cu.numel() - 1, total,
                                                      ids.sequence_ids.data_ptr<int64_t>(),
                                                      ids.position_ids.data_ptr<int64_t>(),
                                                      c10::cuda::getCurrentCUDAStream()),
                            "VarlenIdsFromCuSeqlens");
      return ids;
    }
#endif
    (void)allow_kernel;
    auto [sequence_ids, position_ids] = internal::ReferenceVarlenIds(cu, total);
    return VarlenIds{sequence_ids, position_ids};
  });
}

absl::StatusOr<at::Tensor> SegmentIdsEntry(const at::Tensor& cu, const at::Tensor& locations,
                                           int64_t rows, int64_t len, int64_t total_tokens,
                                           bool allow_kernel) {
  constexpr const char* kOp = "SegmentIdsFromCuSeqlens";
  if (!locations.defined() || locations.dim() != 2 || locations.size(1) != 2 ||
      locations.scalar_type() != at::kLong) {
    return ArgError(__FILE__, __LINE__, kOp, "locations must be int64 [n, 2]");
  }
  if (absl::Status s = internal::CheckCuSeqlens(cu, locations.device(), kOp); !s.ok()) return s;
  if (locations.size(0) != cu.numel() - 1) {
    return ArgError(__FILE__, __LINE__, kOp,
                    "locations has " + std::to_string(locations.size(0)) +
                        " rows, cu_seqlens describes " + std::to_string(cu.numel() - 1) +
                        " sequences");
  }
  if (rows < 0 || len < 0) return ArgError(__FILE__, __LINE__, kOp, "rows and len must be >= 0");
  return CatchC10(__FILE__, __LINE__, kOp, [&] {
    const int64_t total = internal::ResolveTotalTokens(cu, total_tokens);
    const int64_t n = cu.numel() - 1;
#ifdef PADLESS_HAVE_CUDA_KERNELS
    if (allow_kernel && internal::UseKernel(cu)) {
      const c10::cuda::CUDAGuard guard(cu.device());
      const at::Tensor loc = locations.contiguous();
      at::Tensor seg = at::empty({rows, len}, locations.options());
      internal::CheckLaunch(internal::LaunchSegmentIdsFromLocations(
                                cu.data_ptr<int32_t>(), loc.data_ptr<int64_t>(), n, total, rows,
                                len, seg.data_ptr<int64_t>(), c10::cuda::getCurrentCUDAStream()),
                            kOp);
      return seg;
    }
#endif
    (void)allow_kernel;
    (void)n;
    const auto [sequence_ids, position_ids] = internal::ReferenceVarlenIds(cu, total);
    const at::Tensor row = locations.select(1, 0).index_select(0, sequence_ids);
    const at::Tensor col = locations.select(1, 1).index_select(0, sequence_ids) + position_ids;
    // Tokens outside the grid are dropped, as the kernel does.
    const at::Tensor inside = (row >= 0) & (row < rows) & (col >= 0) & (col < len);
    at::Tensor seg = at::full({rows * len}, -1, locations.options());
    seg.index_put_({(row * len + col).masked_select(inside)}, sequence_ids.masked_select(inside));
    return seg.reshape({rows, len});
  });
}

absl::StatusOr<at::Tensor> MaskEntry(const at::Tensor& seg, bool pad_attends_self,
                                     bool allow_kernel) {
  if (!seg.defined() || seg.dim() != 2 || seg.scalar_type() != at::kLong) {
    return ArgError(__FILE__, __LINE__, "BlockDiagonalMask", "segment_ids must be int64 [R, L]");
  }
  return CatchC10(__FILE__, __LINE__, "BlockDiagonalMask", [&] {
    const int64_t rows = seg.size(0);
    const int64_t len = seg.size(1);
#ifdef PADLESS_HAVE_CUDA_KERNELS
    if (allow_kernel && internal::UseKernel(seg)) {
      const c10::cuda::CUDAGuard guard(seg.device());
      const at::Tensor src = seg.contiguous();
      at::Tensor mask = at::empty({rows, 1, len, len}, seg.options().dtype(at::kBool));
      internal::CheckLaunch(internal::LaunchBlockDiagonalMask(
                                src.data_ptr<int64_t>(), rows, len, pad_attends_self,
                                mask.data_ptr<bool>(), c10::cuda::getCurrentCUDAStream()),
                            "BlockDiagonalMask");
      return mask;
    }
#endif
    (void)allow_kernel;
    at::Tensor mask = (seg.unsqueeze(2) == seg.unsqueeze(1)) & (seg >= 0).unsqueeze(2);
    if (pad_attends_self) {
      mask = mask | at::eye(len, seg.options().dtype(at::kBool)).unsqueeze(0);
    }
    return mask.unsqueeze(1).contiguous();
  });
}

}  // namespace

absl::StatusOr<VarlenIds> VarlenIdsFromCuSeqlens(const at::Tensor& cu_seqlens,
                                                 int64_t total_tokens) {
  return VarlenIdsEntry(cu_seqlens, total_tokens, /*allow_kernel=*/true);
}

absl::StatusOr<at::Tensor> SegmentIdsFromCuSeqlens(const at::Tensor& cu_seqlens,
                                                   const at::Tensor& locations, int64_t rows,
                                                   int64_t len, int64_t total_tokens) {
  return SegmentIdsEntry(cu_seqlens, locations, rows, len, total_tokens, /*allow_kernel=*/true);
}

absl::StatusOr<at::Tensor> BlockDiagonalMask(const at::Tensor& segment_ids, bool pad_attends_self) {
  return MaskEntry(segment_ids, pad_attends_self, /*allow_kernel=*/true);
}

absl::StatusOr<at::Tensor> BlockDiagonalMaskFromCuSeqlens(const at::Tensor& cu_seqlens,
                                                          const at::Tensor& locations, int64_t rows,
                                                          int64_t len, bool pad_attends_self,
                                                          int64_t total_tokens) {
  absl::StatusOr<at::Tensor> seg =
      SegmentIdsFromCuSeqlens(cu_seqlens, locations, rows, len, total_tokens);
  if (!seg.ok()) return seg.status();
  return BlockDiagonalMask(*seg, pad_attends_self);
}

namespace reference {

absl::StatusOr<VarlenIds> VarlenIdsFromCuSeqlens(const at::Tensor& cu_seqlens,
                                                 int64_t total_tokens) {
  return VarlenIdsEntry(cu_seqlens, total_tokens, /*allow_kernel=*/false);
}

absl::StatusOr<at::Tensor> SegmentIdsFromCuSeqlens(const at::Tensor& cu_seqlens,
                                                   const at::Tensor& locations, int64_t rows,
                                                   int64_t len, int64_t total_tokens) {
  return SegmentIdsEntry(cu_seqlens, locations, rows, len, total_tokens, /*allow_kernel=*/false);
}

absl::StatusOr<at::Tensor> BlockDiagonalMask(const at::Tensor& segment_ids, bool pad_attends_self) {
  return MaskEntry(segment_ids, pad_attends_self, /*allow_kernel=*/false);
}

}  // namespace reference
}  // namespace padless::cuda
