#include "op_util.h"

#include <ATen/ATen.h>

#ifdef PADLESS_HAVE_CUDA_KERNELS
#include <cuda_runtime_api.h>
#endif

namespace padless::cuda::internal {

absl::Status ArgError(const char* file, int line, const char* op, const std::string& message) {
  return absl::InvalidArgumentError(std::string(file) + ":" + std::to_string(line) + ": " + op +
                                    ": " + message);
}

absl::Status CheckCuSeqlens(const at::Tensor& cu, const c10::Device& device, const char* op) {
  if (!cu.defined()) return ArgError(__FILE__, __LINE__, op, "cu_seqlens is undefined");
  if (cu.dim() != 1 || cu.numel() < 1) {
    return ArgError(__FILE__, __LINE__, op,
                    "cu_seqlens must be 1-D with >= 1 element, got shape " + c10::str(cu.sizes()));
  }
  if (cu.scalar_type() != at::kInt) {
    return ArgError(
        __FILE__, __LINE__, op,
        std::string("cu_seqlens must be int32, got ") + c10::toString(cu.scalar_type()));
  }
  if (cu.device() != device) {
    return ArgError(
        __FILE__, __LINE__, op,
        "cu_seqlens is on " + cu.device().str() + " but the data is on " + device.str());
  }
  if (!cu.is_contiguous()) return ArgError(__FILE__, __LINE__, op, "cu_seqlens must be contiguous");
  if (cu.is_cpu()) {
    const int32_t* p = cu.data_ptr<int32_t>();
    if (p[0] != 0) return ArgError(__FILE__, __LINE__, op, "cu_seqlens[0] must be 0");
    for (int64_t i = 1; i < cu.numel(); ++i) {
      if (p[i] < p[i - 1]) {
        return ArgError(__FILE__, __LINE__, op,
                        "cu_seqlens decreases at index " + std::to_string(i));
      }
    }
  }
  return absl::OkStatus();
}

void CheckRows(const at::Tensor& t, const char* name, const at::Tensor& like, const RowsSpec& spec,
               const char* op) {
  TORCH_CHECK(t.defined(), op, ": ", name, " is undefined");
  TORCH_CHECK(t.dim() == 2, op, ": ", name, " must be 2-D ", spec.shape, ", got shape ", t.sizes());
  TORCH_CHECK(spec.dtype_ok(t.scalar_type()), op, ": ", name, " must be ", spec.dtypes, ", got ",
              t.scalar_type());
  if (&t == &like) return;
  TORCH_CHECK(t.sizes() == like.sizes(), op, ": ", name, " has shape ", t.sizes(), " but expected ",
              like.sizes());
  TORCH_CHECK(t.scalar_type() == like.scalar_type(), op, ": ", name, " is ", t.scalar_type(),
              " but expected ", like.scalar_type());
  TORCH_CHECK(t.device() == like.device(), op, ": ", name, " is on ", t.device(), " but expected ",
              like.device());
}

int64_t ResolveTotalTokens(const at::Tensor& cu, int64_t total_tokens) {
  if (total_tokens >= 0) return total_tokens;
  return cu[cu.numel() - 1].item<int64_t>();
}

std::pair<at::Tensor, at::Tensor> ReferenceVarlenIds(const at::Tensor& cu, int64_t total) {
  const auto long_opts = cu.options().dtype(at::kLong);
  const at::Tensor cu64 = cu.to(at::kLong);
  const at::Tensor lengths = cu64.slice(0, 1) - cu64.slice(0, 0, -1);
  at::Tensor sequence_ids = at::repeat_interleave(lengths, std::optional<int64_t>(total));
  at::Tensor position_ids = at::arange(total, long_opts) - cu64.index_select(0, sequence_ids);
  return {sequence_ids, position_ids};
}

int64_t PaddedRows(int64_t rows, int64_t multiple) {
  return (rows + multiple - 1) / multiple * multiple;
}

int64_t RowBytes(const at::Tensor& t, int64_t token_dims) {
  int64_t n = static_cast<int64_t>(t.element_size());
  for (int64_t d = token_dims; d < t.dim(); ++d) n *= t.size(d);
  return n;
}

bool Is16BitFloat(at::ScalarType t) { return t == at::kBFloat16 || t == at::kHalf; }

bool IsFp8(at::ScalarType t) { return t == at::kFloat8_e4m3fn || t == at::kFloat8_e5m2; }

bool UseKernel(const at::Tensor& t) {
#ifdef PADLESS_HAVE_CUDA_KERNELS
  return t.is_cuda();
#else
  (void)t;
  return false;
#endif
}

bool Aligned16(std::initializer_list<const at::Tensor*> tensors) {
  for (const at::Tensor* t : tensors) {
    if (t->defined() && reinterpret_cast<uintptr_t>(t->data_ptr()) % 16 != 0) return false;
  }
  return true;
}

#ifdef PADLESS_HAVE_CUDA_KERNELS
void CheckLaunch(cudaError_t err, const char* op) {
  TORCH_CHECK(err == cudaSuccess, op, ": CUDA launch failed: ", cudaGetErrorString(err));
}

Fp8GradRows MakeFp8GradRows(const Fp8GradOutput& out, const at::Tensor& like, int64_t rows,
                            int64_t cols) {
  Fp8GradRows r;
  r.args.scale = out.scale.data_ptr<float>();
  r.args.amax = out.amax.defined() ? out.amax.data_ptr<float>() : nullptr;
  r.args.padded_rows = PaddedRows(rows, out.pad_rows_to);
  r.args.format = out.format == Fp8Format::kE4M3 ? Fp8Type::kE4M3 : Fp8Type::kE5M2;
  r.rows = at::empty({r.args.padded_rows, cols}, like.options().dtype(Fp8ScalarType(out.format)));
  return r;
}

std::optional<FloatType> KernelFloatType(at::ScalarType t) {
  switch (t) {
    case at::kBFloat16:
      return FloatType::kBFloat16;
    case at::kHalf:
      return FloatType::kFloat16;
    case at::kFloat:
      return FloatType::kFloat32;
    default:
      return std::nullopt;
  }
}
#endif

}  // namespace padless::cuda::internal
