#include "padless/cuda/kernels/residual_layer_norm.h"

#include <ATen/ATen.h>

#include <cmath>
#include <cstdint>
#include <optional>
#include <tuple>
#include <utility>

#include "padless/cuda/kernels/fp8_static.h"
#include "src/op_util.h"

#ifdef PADLESS_HAVE_CUDA_KERNELS
#include <ATen/cuda/CUDAGeneratorImpl.h>

#include <mutex>

#include "src/residual_layer_norm_kernels.h"
#endif

namespace padless::cuda {
namespace {

constexpr const char* kForwardOp = "DropoutResidualLayerNorm";
constexpr const char* kBackwardOp = "DropoutResidualLayerNormBackward";

bool IsFloatType(at::ScalarType t) {
  return t == at::kDouble || t == at::kFloat || t == at::kBFloat16 || t == at::kHalf;
}

// The dtype of the statistics and of the LayerNorm arithmetic: fp32, or fp64 for fp64 rows (the
// reference path only; tests of callers check their algebra in fp64).
at::ScalarType StatType(at::ScalarType rows) {
  return rows == at::kDouble ? at::kDouble : at::kFloat;
}

// The activations: [T, H] of a type the op takes (internal::CheckRows).
constexpr internal::RowsSpec kActivationRows = {"[T, H]", IsFloatType,
                                                "float64, float32, bfloat16 or float16"};

// A [H] parameter on `like`'s device, in like's dtype or (when allow_fp32) fp32.
void CheckParam(const at::Tensor& t, const char* name, const at::Tensor& like, bool allow_fp32,
                const char* op) {
  const int64_t hidden = like.size(1);
  TORCH_CHECK(t.defined(), op, ": ", name, " is undefined");
  TORCH_CHECK(t.dim() == 1 && t.size(0) == hidden, op, ": ", name, " must be [H] with H = ", hidden,
              ", got shape ", t.sizes());
  TORCH_CHECK(
      t.scalar_type() == like.scalar_type() || (allow_fp32 && t.scalar_type() == at::kFloat), op,
      ": ", name, " is ", t.scalar_type(), " but must be ", like.scalar_type(),
      allow_fp32 ? " or float32" : "");
  TORCH_CHECK(t.device() == like.device(), op, ": ", name, " is on ", t.device(), " but expected ",
              like.device());
}

void CheckStat(const at::Tensor& t, const char* name, const at::Tensor& like, const char* op) {
  TORCH_CHECK(t.defined(), op, ": ", name, " is undefined");
  TORCH_CHECK(t.dim() == 1 && t.size(0) == like.size(0), op, ": ", name,
              " must be [T] with T = ", like.size(0), ", got shape ", t.sizes());
  TORCH_CHECK(t.scalar_type() == StatType(like.scalar_type()), op, ": ", name, " must be ",
              StatType(like.scalar_type()), ", got ", t.scalar_type());
  TORCH_CHECK(t.device() == like.device(), op, ": ", name, " is on ", t.device(), " but expected ",
              like.device());
}

void CheckProbability(double p, const char* op) {
  TORCH_CHECK(p >= 0.0 && p < 1.0, op, ": dropout probability must be in [0, 1), got ", p);
}

void CheckForwardArgs(const at::Tensor& input, const at::Tensor& bias, const at::Tensor& residual,
                      const at::Tensor& gamma, const at::Tensor& beta, double p, double eps) {
  internal::CheckRows(input, "input", input, kActivationRows, kForwardOp);
  internal::CheckRows(residual, "residual", input, kActivationRows, kForwardOp);
  TORCH_CHECK(input.is_contiguous() && residual.is_contiguous(), kForwardOp,
              ": input and residual must be contiguous");
  if (bias.defined()) CheckParam(bias, "bias", input, /*allow_fp32=*/false, kForwardOp);
  CheckParam(gamma, "gamma", input, /*allow_fp32=*/true, kForwardOp);
  CheckParam(beta, "beta", input, /*allow_fp32=*/true, kForwardOp);
  CheckProbability(p, kForwardOp);
  TORCH_CHECK(eps >= 0.0, kForwardOp, ": eps must be >= 0, got ", eps);
}

void CheckBackwardArgs(const at::Tensor& d_out, const at::Tensor& extra, const at::Tensor& sum,
                       const at::Tensor& mean, const at::Tensor& rstd, const at::Tensor& gamma,
                       const at::Tensor& mask, double p) {
  internal::CheckRows(sum, "sum", sum, kActivationRows, kBackwardOp);
  internal::CheckRows(d_out, "d_out", sum, kActivationRows, kBackwardOp);
  if (extra.defined()) internal::CheckRows(extra, "extra", sum, kActivationRows, kBackwardOp);
  CheckStat(mean, "mean", sum, kBackwardOp);
  CheckStat(rstd, "rstd", sum, kBackwardOp);
  CheckParam(gamma, "gamma", sum, /*allow_fp32=*/true, kBackwardOp);
  CheckProbability(p, kBackwardOp);
  if (p > 0.0) {
    TORCH_CHECK(mask.defined(), kBackwardOp, ": mask is undefined but p = ", p, " > 0");
    TORCH_CHECK(mask.scalar_type() == at::kBool, kBackwardOp, ": mask must be bool, got ",
                mask.scalar_type());
    TORCH_CHECK(mask.sizes() == sum.sizes() && mask.device() == sum.device(), kBackwardOp,
                ": mask must be [T, H] on ", sum.device(), " like sum, got shape ", mask.sizes(),
                " on ", mask.device());
  }
}

at::Tensor Float32(const at::Tensor& t) { return t.to(at::kFloat).contiguous(); }
at::Tensor ToStat(const at::Tensor& t, const at::Tensor& rows) {
  return t.to(StatType(rows.scalar_type())).contiguous();
}

// The unfused ops. LayerNorm runs in fp32 on the upcast sum (as the kernel does), so that the
// statistics are fp32 for every dtype and device (fp64 for fp64 rows).
DropoutResidualLayerNormResult ForwardReference(const at::Tensor& input, const at::Tensor& bias,
                                                const at::Tensor& residual, const at::Tensor& gamma,
                                                const at::Tensor& beta, double p, double eps) {
  const int64_t rows = input.size(0);
  const int64_t hidden = input.size(1);
  at::Tensor x = bias.defined() ? input + bias : input;
  at::Tensor mask;
  if (p > 0.0) {
    std::tie(x, mask) = at::native_dropout(x, p, /*train=*/true);
    mask = mask.to(at::kBool);  // the CPU op returns an input-dtype mask for empty inputs
  }
  at::Tensor sum = residual + x;
  auto [out, mean, rstd] = at::native_layer_norm(ToStat(sum, input), {hidden}, ToStat(gamma, input),
                                                 ToStat(beta, input), eps);
  return {out.to(input.scalar_type()), sum, mean.reshape({rows}), rstd.reshape({rows}), mask};
}

DropoutResidualLayerNormGrads BackwardReference(const at::Tensor& d_out, const at::Tensor& extra,
                                                const at::Tensor& sum, const at::Tensor& mean,
                                                const at::Tensor& rstd, const at::Tensor& gamma,
                                                const at::Tensor& mask, double p,
                                                bool need_bias_grad) {
  const int64_t rows = sum.size(0);
  const int64_t hidden = sum.size(1);
  at::Tensor g = ToStat(d_out, sum);
  if (extra.defined()) g = g + ToStat(extra, sum);
  const at::Tensor gamma_f = ToStat(gamma, sum);
  // native_layer_norm_backward sizes d_beta from its `bias` argument; gamma has the same shape.
  auto [d_sum_f, d_gamma, d_beta] =
      at::native_layer_norm_backward(g, ToStat(sum, sum), {hidden}, mean.reshape({rows, 1}),
                                     rstd.reshape({rows, 1}), gamma_f, gamma_f, {true, true, true});
  const at::Tensor d_input_f =
      p > 0.0 ? at::native_dropout_backward(d_sum_f, mask, 1.0 / (1.0 - p)) : d_sum_f;
  DropoutResidualLayerNormGrads grads;
  grads.d_sum = d_sum_f.to(sum.scalar_type());
  grads.d_input = p > 0.0 ? d_input_f.to(sum.scalar_type()) : grads.d_sum;
  grads.d_gamma = d_gamma;
  grads.d_beta = d_beta;
  if (need_bias_grad) grads.d_bias = d_input_f.sum(0);
  return grads;
}

#ifdef PADLESS_HAVE_CUDA_KERNELS
// The kernels' element type for [T, H] rows of `rows`' dtype, device and width; nullopt when the
// rows take the reference path (CPU, fp64, widths the kernels do not hold in registers).
std::optional<internal::FloatType> KernelType(const at::Tensor& rows) {
  const std::optional<internal::FloatType> type = internal::KernelFloatType(rows.scalar_type());
  if (!type || !internal::UseKernel(rows) ||
      !internal::ResidualLayerNormSupported(rows.size(1), *type)) {
    return std::nullopt;
  }
  return type;
}

// Reserves `randoms_per_thread` Philox randoms per thread from the device's default generator and
// returns the (seed, offset) the kernel starts from, as PyTorch's own dropout does.
std::pair<uint64_t, uint64_t> ReservePhilox(const c10::Device& device, int64_t randoms_per_thread) {
  auto* gen = at::get_generator_or_default<at::CUDAGeneratorImpl>(
      std::nullopt, at::cuda::detail::getDefaultCUDAGenerator(device.index()));
  at::PhiloxCudaState state;
  {
    const std::lock_guard<std::mutex> lock(gen->mutex_);
    state = gen->philox_cuda_state(static_cast<uint64_t>(randoms_per_thread));
  }
  // at::cuda::philox::unpack for a state taken outside graph capture (that header is CUDA-only).
  TORCH_CHECK(!state.captured_, kForwardOp, ": dropout under CUDA graph capture is not supported");
  return {state.seed_.val, state.offset_.val};
}

// The fused forward, or nullopt when this input has to take the reference path.
// With `keep` false (inference) only `out` is written: no sum or statistics for a backward.
// `fp8` (inference, 16-bit rows only): also write `out`'s FP8 copy there, its rows padded to a
// multiple of `pad_rows_to`, with one scale per row or, when `fp8_scale_inv` > 0, that one.
std::optional<DropoutResidualLayerNormResult> ForwardKernel(
    const at::Tensor& input, const at::Tensor& bias, const at::Tensor& residual,
    const at::Tensor& gamma, const at::Tensor& beta, double p, double eps, bool keep = true,
    Fp8Rows* fp8 = nullptr, int64_t pad_rows_to = 1, float fp8_scale_inv = 0.f) {
  const int64_t rows = input.size(0);
  const int64_t hidden = input.size(1);
  const std::optional<internal::FloatType> type = KernelType(input);
  if (!type) return std::nullopt;
  const c10::cuda::CUDAGuard guard(input.device());
  const at::Tensor bias_c = bias.defined() ? bias.contiguous() : bias;
  const at::Tensor gamma_f = Float32(gamma);
  const at::Tensor beta_f = Float32(beta);
  if (!internal::Aligned16({&input, &residual, &bias_c, &gamma_f, &beta_f})) return std::nullopt;
  const auto float_opts = input.options().dtype(at::kFloat);
  DropoutResidualLayerNormResult r;
  r.out = at::empty_like(input);
  if (keep) {
    r.sum = at::empty_like(input);
    r.mean = at::empty({rows}, float_opts);
    r.rstd = at::empty({rows}, float_opts);
  }
  internal::ResidualLayerNormForwardArgs args;
  if (p > 0.0) {
    r.mask = at::empty({rows, hidden}, input.options().dtype(at::kBool));
    std::tie(args.seed, args.offset) =
        ReservePhilox(input.device(), internal::ResidualLayerNormRandomsPerThread(hidden, *type));
    args.mask = r.mask.data_ptr<bool>();
  }
  args.input = input.data_ptr();
  args.bias = bias_c.defined() ? bias_c.data_ptr() : nullptr;
  args.residual = residual.data_ptr();
  args.gamma = gamma_f.data_ptr<float>();
  args.beta = beta_f.data_ptr<float>();
  args.out = r.out.data_ptr();
  if (keep) {
    args.sum = r.sum.data_ptr();
    args.mean = r.mean.data_ptr<float>();
    args.rstd = r.rstd.data_ptr<float>();
  }
  if (fp8 != nullptr) {
    fp8->rows = rows;
    const int64_t padded = internal::PaddedRows(rows, pad_rows_to);
    fp8->values = at::empty({padded, hidden}, input.options().dtype(at::kFloat8_e4m3fn));
    fp8->scale_inv = at::empty({padded, 1}, float_opts);
    args.fp8 = static_cast<uint8_t*>(fp8->values.data_ptr());
    args.fp8_scale_inv = fp8->scale_inv.data_ptr<float>();
    args.padded_rows = padded;
    if (fp8_scale_inv > 0.f) {
      args.fp8_fixed_scale = Fp8ScaleOf(fp8_scale_inv);
      args.fp8_fixed_scale_inv = fp8_scale_inv;
    }
  }
  args.rows = rows;
  args.hidden = hidden;
  args.type = *type;
  args.p = static_cast<float>(p);
  args.eps = static_cast<float>(eps);
  internal::CheckLaunch(
      internal::LaunchResidualLayerNormForward(args, c10::cuda::getCurrentCUDAStream()),
      kForwardOp);
  return r;
}

int64_t SmCount(const c10::Device& device) {
  int count = 0;
  const cudaError_t err =
      cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device.index());
  TORCH_CHECK(err == cudaSuccess, kBackwardOp,
              ": cudaDeviceGetAttribute failed: ", cudaGetErrorString(err));
  return count;
}

std::optional<DropoutResidualLayerNormGrads> BackwardKernel(
    const at::Tensor& d_out_in, const at::Tensor& extra_in, const at::Tensor& sum_in,
    const at::Tensor& mean_in, const at::Tensor& rstd_in, const at::Tensor& gamma,
    const at::Tensor& mask_in, double p, bool need_bias_grad, const Fp8GradOutput* fp8) {
  const int64_t rows = sum_in.size(0);
  const int64_t hidden = sum_in.size(1);
  const std::optional<internal::FloatType> type = KernelType(sum_in);
  if (!type) return std::nullopt;
  const c10::cuda::CUDAGuard guard(sum_in.device());
  // Incoming gradients may be expanded or strided views; the rest is normally contiguous already.
  const at::Tensor d_out = d_out_in.contiguous();
  const at::Tensor extra = extra_in.defined() ? extra_in.contiguous() : extra_in;
  const at::Tensor sum = sum_in.contiguous();
  const at::Tensor mean = mean_in.contiguous();
  const at::Tensor rstd = rstd_in.contiguous();
  const at::Tensor mask = p > 0.0 ? mask_in.contiguous() : at::Tensor();
  const at::Tensor gamma_f = Float32(gamma);
  if (!internal::Aligned16({&d_out, &extra, &sum, &mask, &gamma_f})) return std::nullopt;
  const auto float_opts = sum.options().dtype(at::kFloat);
  const int64_t quantities = need_bias_grad ? 3 : 2;
  const int64_t blocks = internal::ResidualLayerNormBackwardBlocks(
      rows, hidden, *type, need_bias_grad, SmCount(sum.device()));
  const at::Tensor partials = at::empty({blocks, quantities, hidden}, float_opts);
  DropoutResidualLayerNormGrads grads;
  grads.d_sum = at::empty_like(sum);
  std::optional<internal::Fp8GradRows> fp8_rows;
  if (fp8 != nullptr) {
    fp8_rows = internal::MakeFp8GradRows(*fp8, sum, rows, hidden);
    grads.d_input = fp8_rows->rows;
  } else {
    grads.d_input = p > 0.0 ? at::empty_like(sum) : grads.d_sum;
  }
  // Separate tensors rather than rows of one: autograd may keep them as the parameters' .grad.
  grads.d_gamma = at::empty({hidden}, float_opts);
  grads.d_beta = at::empty({hidden}, float_opts);
  if (need_bias_grad) grads.d_bias = at::empty({hidden}, float_opts);

  internal::ResidualLayerNormBackwardArgs args;
  args.d_out = d_out.data_ptr();
  args.extra = extra.defined() ? extra.data_ptr() : nullptr;
  args.sum = sum.data_ptr();
  args.mean = mean.data_ptr<float>();
  args.rstd = rstd.data_ptr<float>();
  args.gamma = gamma_f.data_ptr<float>();
  args.mask = mask.defined() ? mask.data_ptr<bool>() : nullptr;
  args.d_sum = grads.d_sum.data_ptr();
  args.d_input = p > 0.0 && fp8 == nullptr ? grads.d_input.data_ptr() : nullptr;
  if (fp8_rows) {
    args.fp8 = fp8_rows->args;
    args.fp8_d_input = static_cast<uint8_t*>(grads.d_input.data_ptr());
  }
  args.partials = partials.data_ptr<float>();
  args.d_gamma = grads.d_gamma.data_ptr<float>();
  args.d_beta = grads.d_beta.data_ptr<float>();
  args.d_bias = need_bias_grad ? grads.d_bias.data_ptr<float>() : nullptr;
  args.rows = rows;
  args.hidden = hidden;
  args.blocks = blocks;
  args.type = *type;
  args.p = static_cast<float>(p);
  args.need_bias_grad = need_bias_grad;
  internal::CheckLaunch(
      internal::LaunchResidualLayerNormBackward(args, c10::cuda::getCurrentCUDAStream()),
      kBackwardOp);
  return grads;
}
#endif  // PADLESS_HAVE_CUDA_KERNELS

DropoutResidualLayerNormResult Forward(const at::Tensor& input, const at::Tensor& bias,
                                       const at::Tensor& residual, const at::Tensor& gamma,
                                       const at::Tensor& beta, double p, double eps,
                                       bool allow_kernel) {
  CheckForwardArgs(input, bias, residual, gamma, beta, p, eps);
#ifdef PADLESS_HAVE_CUDA_KERNELS
  if (allow_kernel) {
    if (auto r = ForwardKernel(input, bias, residual, gamma, beta, p, eps)) return *std::move(r);
  }
#endif
  (void)allow_kernel;
  return ForwardReference(input, bias, residual, gamma, beta, p, eps);
}

DropoutResidualLayerNormGrads Backward(const at::Tensor& d_out, const at::Tensor& extra,
                                       const at::Tensor& sum, const at::Tensor& mean,
                                       const at::Tensor& rstd, const at::Tensor& gamma,
                                       const at::Tensor& mask, double p, bool need_bias_grad,
                                       const Fp8GradOutput* fp8, bool allow_kernel) {
  CheckBackwardArgs(d_out, extra, sum, mean, rstd, gamma, mask, p);
  CheckFp8GradOutput(fp8, sum, kBackwardOp);
#ifdef PADLESS_HAVE_CUDA_KERNELS
  if (allow_kernel) {
    if (auto g =
            BackwardKernel(d_out, extra, sum, mean, rstd, gamma, mask, p, need_bias_grad, fp8)) {
      return *std::move(g);
    }
  }
#endif
  (void)allow_kernel;
  DropoutResidualLayerNormGrads grads =
      BackwardReference(d_out, extra, sum, mean, rstd, gamma, mask, p, need_bias_grad);
  if (fp8 != nullptr) grads.d_input = QuantizeGradOutput(grads.d_input, *fp8);
  return grads;
}

}  // namespace

at::Tensor ResidualLayerNorm(const at::Tensor& input, const at::Tensor& bias,
                             const at::Tensor& residual, const at::Tensor& gamma,
                             const at::Tensor& beta, double eps) {
  CheckForwardArgs(input, bias, residual, gamma, beta, 0.0, eps);
#ifdef PADLESS_HAVE_CUDA_KERNELS
  if (auto r = ForwardKernel(input, bias, residual, gamma, beta, 0.0, eps, /*keep=*/false)) {
    return std::move(r->out);
  }
#endif
  return ForwardReference(input, bias, residual, gamma, beta, 0.0, eps).out;
}

ResidualLayerNormFp8Result ResidualLayerNormWithFp8(const at::Tensor& input, const at::Tensor& bias,
                                                    const at::Tensor& residual,
                                                    const at::Tensor& gamma, const at::Tensor& beta,
                                                    double eps, int64_t pad_rows_to,
                                                    float fp8_scale_inv) {
  CheckForwardArgs(input, bias, residual, gamma, beta, 0.0, eps);
  TORCH_CHECK(pad_rows_to >= 1, kForwardOp, ": pad_rows_to must be >= 1, got ", pad_rows_to);
  TORCH_CHECK(fp8_scale_inv >= 0.f && std::isfinite(fp8_scale_inv), kForwardOp,
              ": fp8_scale_inv must be finite and >= 0, got ", fp8_scale_inv);
  ResidualLayerNormFp8Result r;
#ifdef PADLESS_HAVE_CUDA_KERNELS
  if (internal::Is16BitFloat(input.scalar_type())) {
    if (auto k = ForwardKernel(input, bias, residual, gamma, beta, 0.0, eps, /*keep=*/false, &r.fp8,
                               pad_rows_to, fp8_scale_inv)) {
      r.out = std::move(k->out);
      return r;
    }
  }
#endif
  r.out = ResidualLayerNorm(input, bias, residual, gamma, beta, eps);
  r.fp8 = fp8_scale_inv > 0.f ? Fp8QuantizeAtScale(r.out, fp8_scale_inv, pad_rows_to)
                              : Fp8QuantizeRows(r.out, RowActivation::kNone, pad_rows_to);
  return r;
}

DropoutResidualLayerNormResult DropoutResidualLayerNorm(
    const at::Tensor& input, const at::Tensor& bias, const at::Tensor& residual,
    const at::Tensor& gamma, const at::Tensor& beta, double p, double eps) {
  return Forward(input, bias, residual, gamma, beta, p, eps, /*allow_kernel=*/true);
}

DropoutResidualLayerNormGrads DropoutResidualLayerNormBackward(
    const at::Tensor& d_out, const at::Tensor& extra, const at::Tensor& sum, const at::Tensor& mean,
    const at::Tensor& rstd, const at::Tensor& gamma, const at::Tensor& mask, double p,
    bool need_bias_grad, const Fp8GradOutput* fp8) {
  return Backward(d_out, extra, sum, mean, rstd, gamma, mask, p, need_bias_grad, fp8,
                  /*allow_kernel=*/true);
}

namespace reference {

DropoutResidualLayerNormResult DropoutResidualLayerNorm(
    const at::Tensor& input, const at::Tensor& bias, const at::Tensor& residual,
    const at::Tensor& gamma, const at::Tensor& beta, double p, double eps) {
  return Forward(input, bias, residual, gamma, beta, p, eps, /*allow_kernel=*/false);
}

DropoutResidualLayerNormGrads DropoutResidualLayerNormBackward(
    const at::Tensor& d_out, const at::Tensor& extra, const at::Tensor& sum, const at::Tensor& mean,
    const at::Tensor& rstd, const at::Tensor& gamma, const at::Tensor& mask, double p,
    bool need_bias_grad, const Fp8GradOutput* fp8) {
  return Backward(d_out, extra, sum, mean, rstd, gamma, mask, p, need_bias_grad, fp8,
                  /*allow_kernel=*/false);
}

}  // namespace reference
}  // namespace padless::cuda
