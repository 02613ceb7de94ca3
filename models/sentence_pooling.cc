#include "padless/models/sentence_pooling.h"

#include <ATen/ATen.h>

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "padless/cuda/kernels/segment_pool.h"

namespace padless::models {
namespace {

// Half inputs pool in fp32; float64 stays float64 so that tests can compare exactly enough.
at::ScalarType PooledType(const at::Tensor& t) {
  return t.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
}

absl::Status CheckHidden(const at::Tensor& hidden) {
  if (!hidden.defined() || hidden.dim() != 2 || !hidden.is_floating_point()) {
    return absl::InvalidArgumentError("PoolSequences: hidden must be a floating [T, H] tensor");
  }
  return absl::OkStatus();
}

// The values are read only on the CPU: on CUDA that would be a device sync per batch.
absl::Status CheckCuSeqlens(const at::Tensor& cu, const at::Tensor& hidden) {
  if (!cu.defined() || cu.dim() != 1 || cu.scalar_type() != at::kInt || cu.numel() < 1) {
    return absl::InvalidArgumentError("PoolSequences: cu_seqlens must be an int32 [n + 1] tensor");
  }
  if (cu.device() != hidden.device()) {
    return absl::InvalidArgumentError(absl::StrCat("PoolSequences: cu_seqlens is on ",
                                                   cu.device().str(), ", hidden on ",
                                                   hidden.device().str()));
  }
  const int64_t total = hidden.size(0);
  if (!cu.is_cpu()) {
    // The sequence count is known on the host, so this much is checked without a sync.
    if (cu.numel() == 1 && total != 0) {
      return absl::InvalidArgumentError("PoolSequences: no sequences but hidden has rows");
    }
    return absl::OkStatus();
  }
  const at::Tensor host = cu.contiguous();
  const int32_t* values = host.data_ptr<int32_t>();
  if (values[0] != 0) return absl::InvalidArgumentError("PoolSequences: cu_seqlens[0] != 0");
  for (int64_t i = 1; i < host.numel(); ++i) {
    if (values[i] <= values[i - 1]) {
      return absl::InvalidArgumentError(
          absl::StrCat("PoolSequences: sequence ", i - 1, " is empty (or cu_seqlens decreases)"));
    }
  }
  if (values[host.numel() - 1] != total) {
    return absl::InvalidArgumentError(
        absl::StrCat("PoolSequences: cu_seqlens[-1] = ", values[host.numel() - 1],
                     " != hidden.size(0) = ", total));
  }
  return absl::OkStatus();
}

// int64 [n] sequence lengths, on cu's device.
at::Tensor Lengths(const at::Tensor& cu) {
  const at::Tensor cu64 = cu.to(at::kLong);
  return cu64.slice(0, 1) - cu64.slice(0, 0, -1);
}

// Rows of empty sequences (possible only on unchecked device input) become zeros, as
// cuda::SegmentPool makes them, instead of -inf (max) or a neighbour's token (last token).
at::Tensor ZeroEmptyRows(const at::Tensor& pooled, const at::Tensor& lengths) {
  return at::where((lengths > 0).unsqueeze(1), pooled, at::zeros_like(pooled));
}

absl::StatusOr<at::Tensor> Mean(const at::Tensor& hidden, const at::Tensor& cu) {
  // Half rows are read as they are and summed in fp32 by the kernel, which writes fp32: no fp32
  // copy of the whole [T, H] state.
  return cuda::SegmentPool(hidden, cu, cuda::PoolMode::kMean, PooledType(hidden));
}

absl::StatusOr<at::Tensor> Cls(const at::Tensor& hidden, const at::Tensor& cu) {
  return cuda::SegmentPool(hidden, cu, cuda::PoolMode::kCls, PooledType(hidden));
}

at::Tensor LastToken(const at::Tensor& hidden, const at::Tensor& cu) {
  const at::Tensor last = (cu.slice(0, 1).to(at::kLong) - 1).clamp_min(0);
  return ZeroEmptyRows(hidden.index_select(0, last).to(PooledType(hidden)), Lengths(cu));
}

at::Tensor Max(const at::Tensor& hidden, const at::Tensor& cu) {
  // unsafe: segment_reduce's own check of the offsets reads them on the host (a sync on CUDA);
  // CheckCuSeqlens has done it where the values are on the host anyway.
  const at::Tensor max = at::segment_reduce(hidden.to(PooledType(hidden)), "max",
                                            /*lengths=*/std::nullopt, /*indices=*/std::nullopt,
                                            /*offsets=*/cu, /*axis=*/0, /*unsafe=*/true);
  return ZeroEmptyRows(max, Lengths(cu));
}

// sum(w_i x_i) / sum(w_i) with w_i = i + 1: the segment mean of w x is sum(w x) / L and
// sum(w) = L (L + 1) / 2, so the result is that mean times 2 / (L + 1). The weights come from
// cu_seqlens on the device: position = token index - its sequence's start.
absl::StatusOr<at::Tensor> WeightedMean(const at::Tensor& hidden, const at::Tensor& cu) {
  const int64_t total = hidden.size(0);
  const at::Tensor x = hidden.to(PooledType(hidden));
  const at::Tensor lengths = Lengths(cu);
  const at::Tensor starts = at::repeat_interleave(cu.slice(0, 0, -1).to(at::kLong), lengths,
                                                  /*dim=*/0, /*output_size=*/total);
  const at::Tensor positions = at::arange(total, lengths.options()) - starts;
  const at::Tensor weights = (positions + 1).to(x.scalar_type()).unsqueeze(1);
  absl::StatusOr<at::Tensor> mean = cuda::SegmentPool(x * weights, cu, cuda::PoolMode::kMean);
  if (!mean.ok()) return mean.status();
  return *mean * (2.0 / (lengths + 1).to(x.scalar_type())).unsqueeze(1);
}

// sum / sqrt(L) = mean * sqrt(L).
absl::StatusOr<at::Tensor> MeanSqrtLen(const at::Tensor& hidden, const at::Tensor& cu) {
  absl::StatusOr<at::Tensor> mean = Mean(hidden, cu);
  if (!mean.ok()) return mean.status();
  return *mean * Lengths(cu).to(mean->scalar_type()).sqrt().unsqueeze(1);
}

absl::StatusOr<at::Tensor> PoolChecked(const at::Tensor& hidden, const at::Tensor& cu,
                                       SentencePooling mode) {
  const int64_t sequences = cu.numel() - 1;
  if (hidden.size(0) == 0) {
    // Nothing to index or reduce; only unchecked device input has sequences here (all empty).
    return at::zeros({sequences, hidden.size(1)}, hidden.options().dtype(PooledType(hidden)));
  }
  switch (mode) {
    case SentencePooling::kCls:
      return Cls(hidden, cu);
    case SentencePooling::kMean:
      return Mean(hidden, cu);
    case SentencePooling::kMax:
      return Max(hidden, cu);
    case SentencePooling::kLastToken:
      return LastToken(hidden, cu);
    case SentencePooling::kWeightedMean:
      return WeightedMean(hidden, cu);
    case SentencePooling::kMeanSqrtLen:
      return MeanSqrtLen(hidden, cu);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("PoolSequences: unknown pooling mode ", static_cast<int>(mode)));
}

}  // namespace

absl::StatusOr<at::Tensor> PoolSequences(const at::Tensor& hidden, const at::Tensor& cu_seqlens,
                                         SentencePooling mode) {
  if (absl::Status s = CheckHidden(hidden); !s.ok()) return s;
  if (absl::Status s = CheckCuSeqlens(cu_seqlens, hidden); !s.ok()) return s;
  try {
    // cuda::SegmentPool takes contiguous offsets only.
    return PoolChecked(hidden, cu_seqlens.contiguous(), mode);
  } catch (const c10::Error& e) {
    return absl::InternalError(absl::StrCat("PoolSequences: ", e.what_without_backtrace()));
  }
}

absl::StatusOr<at::Tensor> FinishEmbeddings(at::Tensor pooled, bool normalize, int64_t dimensions) {
  if (!pooled.defined() || pooled.dim() != 2 || !pooled.is_floating_point()) {
    return absl::InvalidArgumentError("FinishEmbeddings: pooled must be a floating [n, H] tensor");
  }
  if (dimensions < 0 || dimensions > pooled.size(1)) {
    return absl::InvalidArgumentError(absl::StrCat("FinishEmbeddings: dimensions = ", dimensions,
                                                   " is outside [0, ", pooled.size(1), "]"));
  }
  try {
    at::Tensor out = pooled.to(PooledType(pooled));
    if (dimensions > 0) out = out.slice(1, 0, dimensions);
    if (normalize) {
      // torch.nn.functional.normalize's eps: a zero row stays zero instead of becoming NaN.
      constexpr double kNormFloor = 1e-12;
      out = out / at::linalg_vector_norm(out, 2, {1}, /*keepdim=*/true).clamp_min(kNormFloor);
    }
    return out.contiguous();
  } catch (const c10::Error& e) {
    return absl::InternalError(absl::StrCat("FinishEmbeddings: ", e.what_without_backtrace()));
  }
}

}  // namespace padless::models
