#include "padless/cuda/kernels/segment_pool.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>

#include "src/op_util.h"

namespace padless::cuda {
namespace {

using internal::ArgError;
using internal::CatchC10;

// grid.y of the mean kernel is the sequence count.
constexpr int64_t kMaxKernelSequences = 65535;

at::Tensor Lengths(const at::Tensor& cu) {
  const at::Tensor cu64 = cu.to(at::kLong);
  return cu64.slice(0, 1) - cu64.slice(0, 0, -1);
}

// `out_type` is hidden's dtype or float32 (PoolEntry checks).
at::Tensor PoolCore(const at::Tensor& hidden, const at::Tensor& cu, PoolMode mode,
                    at::ScalarType out_type, bool allow_kernel) {
  const int64_t n = cu.numel() - 1;
  const int64_t total = hidden.size(0);
  const int64_t width = hidden.size(1);
#ifdef PADLESS_HAVE_CUDA_KERNELS
  const auto st = hidden.scalar_type();
  const bool kernel_dtype = st == at::kFloat || st == at::kBFloat16 || st == at::kHalf;
  if (allow_kernel && internal::UseKernel(hidden) && kernel_dtype && n <= kMaxKernelSequences) {
    const c10::cuda::CUDAGuard guard(hidden.device());
    const at::Tensor src = hidden.contiguous();
    const auto stream = c10::cuda::getCurrentCUDAStream();
    if (mode == PoolMode::kCls) {
      // Row copies: n rows are cast afterwards, if at all.
      at::Tensor out = at::empty({n, width}, hidden.options());
      internal::CheckLaunch(
          internal::LaunchFirstRows(src.data_ptr(), out.data_ptr(), cu.data_ptr<int32_t>(), n,
                                    internal::RowBytes(src, 1), stream),
          "SegmentPool(cls)");
      return out.to(out_type);
    }
    at::Tensor out = at::empty({n, width}, hidden.options().dtype(out_type));
    const auto type = st == at::kFloat      ? internal::FloatType::kFloat32
                      : st == at::kBFloat16 ? internal::FloatType::kBFloat16
                                            : internal::FloatType::kFloat16;
    internal::CheckLaunch(
        internal::LaunchSegmentMean(src.data_ptr(), out.data_ptr(), cu.data_ptr<int32_t>(), n,
                                    width, type, /*float_out=*/out_type == at::kFloat, stream),
        "SegmentPool(mean)");
    return out;
  }
#endif
  (void)allow_kernel;
  const at::Tensor lengths = Lengths(cu);
  if (mode == PoolMode::kCls) {
    if (total == 0) return at::zeros({n, width}, hidden.options().dtype(out_type));
    const at::Tensor first = cu.slice(0, 0, -1).to(at::kLong).clamp_max(total - 1);
    const at::Tensor rows = hidden.index_select(0, first);
    return at::where((lengths > 0).unsqueeze(1), rows, at::zeros_like(rows)).to(out_type);
  }
  const auto acc_type = hidden.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
  const at::Tensor sequence_ids = at::repeat_interleave(lengths, std::optional<int64_t>(total));
  at::Tensor sums = at::zeros({n, width}, hidden.options().dtype(acc_type));
  sums.index_add_(0, sequence_ids, hidden.to(acc_type));
  return (sums / lengths.clamp_min(1).unsqueeze(1).to(acc_type)).to(out_type);
}

// Backward: mean spreads grad/len over the sequence's tokens, CLS routes grad to the first token.
class PoolFunction : public torch::autograd::Function<PoolFunction> {
 public:
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& hidden,
                            const at::Tensor& cu, int64_t mode, at::ScalarType out_type,
                            bool allow_kernel) {
    ctx->save_for_backward({cu});
    ctx->saved_data["total"] = hidden.size(0);
    ctx->saved_data["mode"] = mode;
    ctx->saved_data["hidden_type"] = hidden.scalar_type();
    return PoolCore(hidden, cu, static_cast<PoolMode>(mode), out_type, allow_kernel);
  }
  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grads) {
    const at::Tensor cu = ctx->get_saved_variables()[0];
    const int64_t total = ctx->saved_data["total"].toInt();
    const auto mode = static_cast<PoolMode>(ctx->saved_data["mode"].toInt());
    // The gradient of a pooling into fp32 goes back to hidden's own dtype.
    const at::Tensor g = grads[0].to(ctx->saved_data["hidden_type"].toScalarType());
    const at::Tensor lengths = Lengths(cu);
    at::Tensor grad_hidden;
    if (mode == PoolMode::kMean) {
      const at::Tensor scaled = g / lengths.clamp_min(1).unsqueeze(1).to(g.scalar_type());
      grad_hidden =
          scaled.index_select(0, at::repeat_interleave(lengths, std::optional<int64_t>(total)));
    } else {
      grad_hidden = at::zeros({total, g.size(1)}, g.options());
      const at::Tensor nonempty = (lengths > 0).nonzero().squeeze(1);
      grad_hidden.index_copy_(0, cu.to(at::kLong).index_select(0, nonempty),
                              g.index_select(0, nonempty));
    }
    return {grad_hidden, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

absl::StatusOr<at::Tensor> PoolEntry(const at::Tensor& hidden, const at::Tensor& cu, PoolMode mode,
                                     std::optional<at::ScalarType> out_dtype, bool allow_kernel) {
  if (!hidden.defined() || hidden.dim() != 2 || !hidden.is_floating_point()) {
    return ArgError(__FILE__, __LINE__, "SegmentPool", "hidden must be a floating [T, H] tensor");
  }
  const at::ScalarType out_type = out_dtype.value_or(hidden.scalar_type());
  if (out_type != hidden.scalar_type() && out_type != at::kFloat) {
    return ArgError(
        __FILE__, __LINE__, "SegmentPool",
        std::string("out_dtype must be hidden's dtype or float32, got ") + c10::toString(out_type));
  }
  if (absl::Status s = internal::CheckCuSeqlens(cu, hidden.device(), "SegmentPool"); !s.ok()) {
    return s;
  }
  if (cu.is_cpu() && cu.data_ptr<int32_t>()[cu.numel() - 1] != hidden.size(0)) {
    return ArgError(__FILE__, __LINE__, "SegmentPool",
                    "cu_seqlens[-1] != hidden.size(0) = " + std::to_string(hidden.size(0)));
  }
  return CatchC10(__FILE__, __LINE__, "SegmentPool", [&] {
    if (at::GradMode::is_enabled() && hidden.requires_grad()) {
      return PoolFunction::apply(hidden, cu, static_cast<int64_t>(mode), out_type, allow_kernel);
    }
    return PoolCore(hidden, cu, mode, out_type, allow_kernel);
  });
}

}  // namespace

absl::StatusOr<at::Tensor> SegmentPool(const at::Tensor& hidden, const at::Tensor& cu_seqlens,
                                       PoolMode mode, std::optional<at::ScalarType> out_dtype) {
  return PoolEntry(hidden, cu_seqlens, mode, out_dtype, /*allow_kernel=*/true);
}

namespace reference {
absl::StatusOr<at::Tensor> SegmentPool(const at::Tensor& hidden, const at::Tensor& cu_seqlens,
                                       PoolMode mode, std::optional<at::ScalarType> out_dtype) {
  return PoolEntry(hidden, cu_seqlens, mode, out_dtype, /*allow_kernel=*/false);
}
}  // namespace reference

}  // namespace padless::cuda
