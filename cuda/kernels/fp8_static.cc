#include "padless/cuda/kernels/fp8_static.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <c10/util/Exception.h>

#include <cmath>
#include <cstdint>

#include "padless/cuda/kernels/gemm_epilogue.h"
#include "src/fp8_reference.h"
#include "src/op_util.h"

namespace padless::cuda {
namespace {

thread_local bool g_last_static_fused = false;

void CheckFixedScaleInv(float scale_inv, const char* op) {
  TORCH_CHECK(scale_inv > 0.f && std::isfinite(scale_inv), op,
              ": the scale must be finite and > 0, got ", scale_inv);
}

void CheckStaticLinearArgs(const Fp8Rows& x, const Fp8Rows& weight, const at::Tensor& bias,
                           const Fp8FixedScale& out) {
  constexpr const char* kOp = "Fp8StaticLinearAct";
  internal::CheckFp8Operands(x, weight, kOp);
  TORCH_CHECK(weight.rows >= 1, kOp, ": the weight has no rows");
  TORCH_CHECK(bias.defined() && bias.dim() == 1 && bias.size(0) == weight.rows, kOp,
              ": bias must be [N] with N = ", weight.rows);
  TORCH_CHECK(at::isFloatingType(bias.scalar_type()), kOp, ": bias must be floating-point, got ",
              bias.scalar_type());
  CheckFixedScaleInv(out.scale_inv, kOp);
  TORCH_CHECK(out.scale.defined() && out.scale.numel() == 1 &&
                  out.scale.scalar_type() == at::kFloat && out.scale.device() == x.values.device(),
              kOp, ": the output scale must be one fp32 value on x's device (MakeFp8FixedScale)");
}

// Every row of x, padded ones included, as the fused GEMM computes them.
Fp8Rows ReferenceStaticLinearAct(const Fp8Rows& x, const Fp8Rows& weight, const at::Tensor& bias,
                                 RowActivation activation, float out_scale_inv) {
  const at::Tensor a = x.values.to(at::kFloat) * x.scale_inv;
  const at::Tensor w = weight.values.narrow(0, 0, weight.rows).to(at::kFloat) *
                       weight.scale_inv.narrow(0, 0, weight.rows);
  const at::Tensor y = internal::ActivateRows(at::addmm(bias.to(at::kFloat), a, w.t()), activation);
  Fp8Rows q;
  q.rows = x.rows;
  q.values = internal::SaturatingFp8Cast(y * Fp8ScaleOf(out_scale_inv));
  q.scale_inv = at::full({x.values.size(0), 1}, out_scale_inv, y.options());
  return q;
}

bool StaticFusedFits(const Fp8Rows& x, const Fp8Rows& weight, const at::Tensor& bias,
                     RowActivation activation) {
  const int64_t padded = x.values.size(0);
  return activation == RowActivation::kGeluTanh && internal::Is16BitFloat(bias.scalar_type()) &&
         padded > 0 && padded % 16 == 0 && weight.values.size(0) == weight.rows &&
         Fp8RowwiseLinearFast(weight, x.values.device());
}

Fp8Rows StaticLinearAct(const Fp8Rows& x, const Fp8Rows& weight, const at::Tensor& bias,
                        RowActivation activation, const Fp8FixedScale& out, bool allow_fused) {
  CheckStaticLinearArgs(x, weight, bias, out);
  const at::NoGradGuard no_grad;
  g_last_static_fused = false;
  if (!allow_fused || !StaticFusedFits(x, weight, bias, activation)) {
    return ReferenceStaticLinearAct(x, weight, bias, activation, out.scale_inv);
  }
  const auto float_opts = x.scale_inv.options();
  Fp8Rows q;
  q.rows = x.rows;
  q.values = ScaledMmGeluToFp8(x.values, weight.values.t(), x.scale_inv.narrow(0, 0, 1),
                               weight.scale_inv.narrow(0, 0, 1), bias.contiguous(), out.scale,
                               /*fast_accum=*/true);
  g_last_static_fused = LastGemmEpilogueWasFused();
  q.scale_inv = at::full({x.values.size(0), 1}, out.scale_inv, float_opts);
  return q;
}

}  // namespace

float Fp8ScaleOf(float scale_inv) { return 1.f / scale_inv; }

Fp8FixedScale MakeFp8FixedScale(float scale_inv, const c10::Device& device) {
  CheckFixedScaleInv(scale_inv, "MakeFp8FixedScale");
  return {scale_inv,
          at::full({1}, Fp8ScaleOf(scale_inv), at::TensorOptions(device).dtype(at::kFloat))};
}

Fp8Rows Fp8QuantizeAtScale(const at::Tensor& x, float scale_inv, int64_t pad_rows_to) {
  constexpr const char* kOp = "Fp8QuantizeAtScale";
  TORCH_CHECK(x.defined() && x.dim() == 2 && at::isFloatingType(x.scalar_type()), kOp,
              ": x must be a 2-D floating-point tensor");
  CheckFixedScaleInv(scale_inv, kOp);
  TORCH_CHECK(pad_rows_to >= 1, kOp, ": pad_rows_to must be >= 1, got ", pad_rows_to);
  const at::NoGradGuard no_grad;
  const int64_t pad = internal::PaddedRows(x.size(0), pad_rows_to) - x.size(0);
  const at::Tensor scaled = x.to(at::kFloat) * Fp8ScaleOf(scale_inv);
  Fp8Rows q;
  q.rows = x.size(0);
  q.values = internal::SaturatingFp8Cast(at::constant_pad_nd(scaled, {0, 0, 0, pad}));
  q.scale_inv = at::full({x.size(0) + pad, 1}, scale_inv, scaled.options());
  return q;
}

Fp8Rows Fp8QuantizeTensor(const at::Tensor& x) {
  TORCH_CHECK(x.defined() && x.dim() == 2 && x.numel() > 0, "Fp8QuantizeTensor",
              ": x must be a non-empty 2-D tensor");
  const at::NoGradGuard no_grad;
  const float amax = x.abs().max().item<float>();
  const float scale_inv =
      amax > 0.f && std::isfinite(amax) ? amax / static_cast<float>(Fp8Max(Fp8Format::kE4M3)) : 1.f;
  return Fp8QuantizeAtScale(x, scale_inv, /*pad_rows_to=*/1);
}

Fp8Rows Fp8StaticLinearAct(const Fp8Rows& x, const Fp8Rows& weight, const at::Tensor& bias,
                           RowActivation activation, const Fp8FixedScale& out) {
  return StaticLinearAct(x, weight, bias, activation, out, /*allow_fused=*/true);
}

bool LastFp8StaticLinearActWasFused() { return g_last_static_fused; }

namespace reference {

Fp8Rows Fp8StaticLinearAct(const Fp8Rows& x, const Fp8Rows& weight, const at::Tensor& bias,
                           RowActivation activation, const Fp8FixedScale& out) {
  return StaticLinearAct(x, weight, bias, activation, out, /*allow_fused=*/false);
}

}  // namespace reference
}  // namespace padless::cuda
