#include "padless/cuda/kernels/unpad.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>

#include <vector>

#include "src/op_util.h"

namespace padless::cuda {
namespace {

using internal::ArgError;
using internal::CatchC10;

std::vector<int64_t> WithTokenDims(std::vector<int64_t> token_dims, const at::Tensor& t,
                                   int64_t skip) {
  for (int64_t d = skip; d < t.dim(); ++d) token_dims.push_back(t.size(d));
  return token_dims;
}

// The throwing cores shared by the public functions and the autograd backward passes.
at::Tensor UnpadCore(const at::Tensor& padded, const at::Tensor& cu, int64_t total,
                     bool allow_kernel) {
  const int64_t batch = padded.size(0);
  const int64_t max_len = padded.size(1);
  const std::vector<int64_t> out_shape = WithTokenDims({total}, padded, 2);
#ifdef PADLESS_HAVE_CUDA_KERNELS
  if (allow_kernel && internal::UseKernel(padded)) {
    const c10::cuda::CUDAGuard guard(padded.device());
    const at::Tensor src = padded.contiguous();
    at::Tensor out = at::empty(out_shape, padded.options());
    internal::CheckLaunch(
        internal::LaunchUnpadRows(src.data_ptr(), out.data_ptr(), cu.data_ptr<int32_t>(), batch,
                                  max_len, total, internal::RowBytes(src, 2),
                                  c10::cuda::getCurrentCUDAStream()),
        "Unpad");
    return out;
  }
#endif
  (void)allow_kernel;
  const auto [sequence_ids, position_ids] = internal::ReferenceVarlenIds(cu, total);
  // Checked only on the CPU: on a GPU the check would be a device sync.
  TORCH_CHECK(!cu.is_cpu() || total == 0 || position_ids.max().item<int64_t>() < max_len,
              "a sequence is longer than the padded length ", max_len);
  const at::Tensor flat_index = sequence_ids * max_len + position_ids;
  return padded.reshape(WithTokenDims({batch * max_len}, padded, 2))
      .index_select(0, flat_index)
      .reshape(out_shape);
}

at::Tensor PadCore(const at::Tensor& packed, const at::Tensor& cu, int64_t max_len,
                   bool allow_kernel) {
  const int64_t batch = cu.numel() - 1;
  const int64_t total = packed.size(0);
  const std::vector<int64_t> out_shape = WithTokenDims({batch, max_len}, packed, 1);
#ifdef PADLESS_HAVE_CUDA_KERNELS
  if (allow_kernel && internal::UseKernel(packed)) {
    const c10::cuda::CUDAGuard guard(packed.device());
    const at::Tensor src = packed.contiguous();
    at::Tensor out = at::empty(out_shape, packed.options());
    internal::CheckLaunch(
        internal::LaunchPadRows(src.data_ptr(), out.data_ptr(), cu.data_ptr<int32_t>(), batch,
                                max_len, internal::RowBytes(src, 1),
                                c10::cuda::getCurrentCUDAStream()),
        "Pad");
    return out;
  }
#endif
  (void)allow_kernel;
  const auto [sequence_ids, position_ids] = internal::ReferenceVarlenIds(cu, total);
  TORCH_CHECK(!cu.is_cpu() || total == 0 || position_ids.max().item<int64_t>() < max_len,
              "a sequence is longer than max_len ", max_len);
  at::Tensor out = at::zeros(WithTokenDims({batch * max_len}, packed, 1), packed.options());
  out.index_copy_(0, sequence_ids * max_len + position_ids, packed);
  return out.reshape(out_shape);
}

class UnpadFunction : public torch::autograd::Function<UnpadFunction> {
 public:
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& padded,
                            const at::Tensor& cu, int64_t total, bool allow_kernel) {
    ctx->save_for_backward({cu});
    ctx->saved_data["max_len"] = padded.size(1);
    ctx->saved_data["allow_kernel"] = allow_kernel;
    return UnpadCore(padded, cu, total, allow_kernel);
  }
  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grads) {
    const at::Tensor cu = ctx->get_saved_variables()[0];
    return {PadCore(grads[0], cu, ctx->saved_data["max_len"].toInt(),
                    ctx->saved_data["allow_kernel"].toBool()),
            at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

class PadFunction : public torch::autograd::Function<PadFunction> {
 public:
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& packed,
                            const at::Tensor& cu, int64_t max_len, bool allow_kernel) {
    ctx->save_for_backward({cu});
    ctx->saved_data["total"] = packed.size(0);
    ctx->saved_data["allow_kernel"] = allow_kernel;
    return PadCore(packed, cu, max_len, allow_kernel);
  }
  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grads) {
    const at::Tensor cu = ctx->get_saved_variables()[0];
    return {UnpadCore(grads[0], cu, ctx->saved_data["total"].toInt(),
                      ctx->saved_data["allow_kernel"].toBool()),
            at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

absl::StatusOr<at::Tensor> UnpadEntry(const at::Tensor& padded, const at::Tensor& cu,
                                      int64_t total_tokens, bool allow_kernel) {
  if (!padded.defined() || padded.dim() < 2) {
    return ArgError(__FILE__, __LINE__, "Unpad", "padded must be [B, L, ...]");
  }
  if (absl::Status s = internal::CheckCuSeqlens(cu, padded.device(), "Unpad"); !s.ok()) return s;
  if (cu.numel() - 1 != padded.size(0)) {
    return ArgError(__FILE__, __LINE__, "Unpad",
                    "cu_seqlens has " + std::to_string(cu.numel() - 1) +
                        " sequences but padded has " + std::to_string(padded.size(0)) + " rows");
  }
  return CatchC10(__FILE__, __LINE__, "Unpad", [&] {
    const int64_t total = internal::ResolveTotalTokens(cu, total_tokens);
    if (at::GradMode::is_enabled() && padded.requires_grad()) {
      return UnpadFunction::apply(padded, cu, total, allow_kernel);
    }
    return UnpadCore(padded, cu, total, allow_kernel);
  });
}

absl::StatusOr<at::Tensor> PadEntry(const at::Tensor& packed, const at::Tensor& cu, int64_t max_len,
                                    bool allow_kernel) {
  if (!packed.defined() || packed.dim() < 1) {
    return ArgError(__FILE__, __LINE__, "Pad", "packed must be [T, ...]");
  }
  if (max_len < 0) return ArgError(__FILE__, __LINE__, "Pad", "max_len must be >= 0");
  if (absl::Status s = internal::CheckCuSeqlens(cu, packed.device(), "Pad"); !s.ok()) return s;
  if (cu.is_cpu() && cu.data_ptr<int32_t>()[cu.numel() - 1] != packed.size(0)) {
    return ArgError(__FILE__, __LINE__, "Pad",
                    "cu_seqlens[-1] != packed.size(0) = " + std::to_string(packed.size(0)));
  }
  return CatchC10(__FILE__, __LINE__, "Pad", [&] {
    if (at::GradMode::is_enabled() && packed.requires_grad()) {
      return PadFunction::apply(packed, cu, max_len, allow_kernel);
    }
    return PadCore(packed, cu, max_len, allow_kernel);
  });
}

}  // namespace

absl::StatusOr<at::Tensor> Unpad(const at::Tensor& padded, const at::Tensor& cu_seqlens,
                                 int64_t total_tokens) {
  return UnpadEntry(padded, cu_seqlens, total_tokens, /*allow_kernel=*/true);
}

absl::StatusOr<at::Tensor> Pad(const at::Tensor& packed, const at::Tensor& cu_seqlens,
                               int64_t max_len) {
  return PadEntry(packed, cu_seqlens, max_len, /*allow_kernel=*/true);
}

namespace reference {

absl::StatusOr<at::Tensor> Unpad(const at::Tensor& padded, const at::Tensor& cu_seqlens,
                                 int64_t total_tokens) {
  return UnpadEntry(padded, cu_seqlens, total_tokens, /*allow_kernel=*/false);
}

absl::StatusOr<at::Tensor> Pad(const at::Tensor& packed, const at::Tensor& cu_seqlens,
                               int64_t max_len) {
  return PadEntry(packed, cu_seqlens, max_len, /*allow_kernel=*/false);
}

}  // namespace reference
}  // namespace padless::cuda
