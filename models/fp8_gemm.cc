#include "fp8_gemm.h"

#include <ATen/ATen.h>

#include <utility>

#include "padless/cuda/kernels/gemm_epilogue.h"

namespace padless::models::internal {

namespace {

// cuBLASLt's FP8 GEMMs want every dimension, the token count included, a multiple of 16.
constexpr int64_t kFp8Align = 16;

struct Quantize {
  bool rows = false;
  bool transposed = false;
  bool record_amax = false;  // false: a second quantization of an operand already recorded
  int64_t pad_rows_to = kFp8Align;
};

// The first quantization of an operand: its rows (and with `transposed` its transpose too), its
// amax recorded.
Quantize Recorded(bool transposed, int64_t pad_rows_to) {
  Quantize q;
  q.rows = true;
  q.transposed = transposed;
  q.record_amax = true;
  q.pad_rows_to = pad_rows_to;
  return q;
}

// A second quantization of an operand already recorded: its transpose only.
Quantize TransposedAgain(int64_t pad_rows_to) {
  Quantize q;
  q.transposed = true;
  q.pad_rows_to = pad_rows_to;
  return q;
}

cuda::Fp8Quantized QuantizeOperand(const at::Tensor& v, const Fp8Gemm& gemm, Fp8Operand operand,
                                   const Quantize& q) {
  Fp8Scaling& s = *gemm.scaling;
  if (q.record_amax && s.calibrating()) s.Calibrate(gemm.index, operand, at::abs(v).amax());
  cuda::Fp8QuantizeOptions options;
  options.rows = q.rows;
  options.transposed = q.transposed;
  options.pad_rows_to = q.pad_rows_to;
  return cuda::Fp8Quantize(v, s.scale(gemm.index, operand), Fp8FormatOf(operand), options,
                           q.record_amax ? s.amax(gemm.index, operand) : at::Tensor());
}

// What the scaled GEMMs multiply an operand's FP8 values by: the inverse of its slot's scale.
at::Tensor ScaleInv(const Fp8Gemm& gemm, Fp8Operand operand) {
  return gemm.scaling->scale_inv(gemm.index, operand);
}

// `tokens`: which of the product's dimensions is the token count (cuda::ScaledMm buckets it).
at::Tensor ScaledMm(const at::Tensor& a, const at::Tensor& b, const Fp8Gemm& gemm, Fp8Operand a_op,
                    Fp8Operand b_op, const at::Tensor& bias, at::ScalarType out, bool fast,
                    cuda::TokenAxis tokens) {
  return cuda::ScaledMm(a, b, ScaleInv(gemm, a_op), ScaleInv(gemm, b_op), bias, out, fast, tokens);
}

// The forward's input x [T_pad, K] as E4M3 rows, its amax recorded; with `keep`, its transpose
// from the same pass goes there.
at::Tensor QuantizeForwardInput(const at::Tensor& x, const Fp8Gemm& gemm, Fp8Transposes* keep) {
  cuda::Fp8Quantized q = QuantizeOperand(x, gemm, Fp8Operand::kInput,
                                         Recorded(keep != nullptr, /*pad_rows_to=*/kFp8Align));
  if (keep != nullptr) keep->input = std::move(q.transposed);
  return std::move(q.rows);
}

// The forward's weight [N, K] as E4M3 rows, its amax recorded; with `keep`, its transpose too.
at::Tensor QuantizeForwardWeight(const at::Tensor& weight, const Fp8Gemm& gemm,
                                 Fp8Transposes* keep) {
  cuda::Fp8Quantized q = QuantizeOperand(weight, gemm, Fp8Operand::kWeight,
                                         Recorded(keep != nullptr, /*pad_rows_to=*/1));
  if (keep != nullptr) keep->weight = std::move(q.transposed);
  return std::move(q.rows);
}

}  // namespace

bool Fp8GemmFits(const at::Tensor& weight) {
  return weight.dim() == 2 && weight.size(0) % kFp8Align == 0 && weight.size(1) % kFp8Align == 0;
}

at::Tensor Fp8Linear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                     const Fp8Gemm& gemm, Fp8Transposes* keep) {
  return Fp8LinearFromRows(QuantizeForwardInput(x, gemm, keep), x.size(0), weight, bias, gemm,
                           keep);
}

at::Tensor Fp8LinearFromRows(const at::Tensor& rows, int64_t tokens, const at::Tensor& weight,
                             const at::Tensor& bias, const Fp8Gemm& gemm, Fp8Transposes* keep) {
  const at::Tensor w = QuantizeForwardWeight(weight, gemm, keep);
  return ScaledMm(rows, w.t(), gemm, Fp8Operand::kInput, Fp8Operand::kWeight, bias,
                  weight.scalar_type(), /*fast=*/true, cuda::TokenAxis::kM)
      .narrow(0, 0, tokens);
}

cuda::LinearGeluResult Fp8LinearGelu(const at::Tensor& x, const at::Tensor& weight,
                                     const at::Tensor& bias, const Fp8Gemm& gemm,
                                     Fp8Transposes* keep) {
  const at::Tensor rows = QuantizeForwardInput(x, gemm, keep);
  const at::Tensor w = QuantizeForwardWeight(weight, gemm, keep);
  const cuda::LinearGeluResult r =
      cuda::ScaledMmGelu(rows, w.t(), ScaleInv(gemm, Fp8Operand::kInput),
                         ScaleInv(gemm, Fp8Operand::kWeight), bias, x.scalar_type(),
                         /*fast_accum=*/true);
  return {r.act.narrow(0, 0, x.size(0)), r.pre.narrow(0, 0, x.size(0))};
}

Fp8GeluRows Fp8LinearGeluToFp8(const at::Tensor& x, const at::Tensor& weight,
                               const at::Tensor& bias, const Fp8Gemm& gemm, Fp8Transposes* keep,
                               const Fp8Gemm& next, Fp8Transposes* next_keep) {
  const Fp8Scaling& s = *next.scaling;
  TORCH_CHECK(!s.calibrating(), "Fp8LinearGeluToFp8: the scales still calibrate");
  const at::Tensor& slot = s.amax(next.index, Fp8Operand::kInput);
  const at::Tensor amax = at::empty_like(slot);
  const at::Tensor rows = QuantizeForwardInput(x, gemm, keep);
  const at::Tensor w = QuantizeForwardWeight(weight, gemm, keep);
  const cuda::LinearGeluResult r = cuda::ScaledMmGeluAuxToFp8(
      rows, w.t(), ScaleInv(gemm, Fp8Operand::kInput), ScaleInv(gemm, Fp8Operand::kWeight), bias,
      s.scale(next.index, Fp8Operand::kInput), amax, /*fast_accum=*/true);
  // cuBLASLt overwrites its amax; the slot folds every quantization of the step (fp8_scaling.h).
  at::Tensor folded = slot;
  at::maximum_out(folded, slot, amax);
  if (next_keep != nullptr) next_keep->input = cuda::Fp8Transpose(r.act);
  return {r.act, r.pre.narrow(0, 0, x.size(0))};
}

Fp8OutputGrad QuantizeOutputGrad(const at::Tensor& dy, const Fp8Gemm& gemm, bool weight_grad,
                                 const Fp8Transposes& forward) {
  cuda::Fp8Quantized q =
      QuantizeOperand(dy, gemm, Fp8Operand::kGrad, Recorded(/*transposed=*/weight_grad, kFp8Align));
  return {std::move(q.rows), std::move(q.transposed), dy.size(0), dy.scalar_type(), gemm, forward};
}

std::optional<cuda::Fp8GradOutput> OutputGradTarget(const Fp8Gemm& gemm) {
  const Fp8Scaling& s = *gemm.scaling;
  if (s.calibrating()) return std::nullopt;
  cuda::Fp8GradOutput out;
  out.scale = s.scale(gemm.index, Fp8Operand::kGrad);
  out.amax = s.amax(gemm.index, Fp8Operand::kGrad);
  out.format = Fp8FormatOf(Fp8Operand::kGrad);
  out.pad_rows_to = kFp8Align;
  return out;
}

Fp8OutputGrad OutputGradFromRows(at::Tensor rows, int64_t tokens, at::ScalarType dtype,
                                 const Fp8Gemm& gemm, bool weight_grad,
                                 const Fp8Transposes& forward) {
  at::Tensor transposed = weight_grad ? cuda::Fp8Transpose(rows) : at::Tensor();
  return {std::move(rows), std::move(transposed), tokens, dtype, gemm, forward};
}

at::Tensor Fp8LinearInputGrad(const Fp8OutputGrad& dy, const at::Tensor& weight,
                              const at::Tensor& accumulate) {
  const at::Tensor weight_t =
      dy.forward.weight.defined()
          ? dy.forward.weight
          : QuantizeOperand(weight, dy.gemm, Fp8Operand::kWeight, TransposedAgain(1)).transposed;
  if (accumulate.defined()) {  // in the GEMM, over the real rows alone
    return cuda::ScaledMmAccumulate(dy.rows.narrow(0, 0, dy.tokens), weight_t.t(),
                                    ScaleInv(dy.gemm, Fp8Operand::kGrad),
                                    ScaleInv(dy.gemm, Fp8Operand::kWeight), accumulate,
                                    /*fast_accum=*/false);
  }
  return ScaledMm(dy.rows, weight_t.t(), dy.gemm, Fp8Operand::kGrad, Fp8Operand::kWeight,
                  at::Tensor(), dy.dtype, /*fast=*/false, cuda::TokenAxis::kM)
      .narrow(0, 0, dy.tokens);
}

at::Tensor Fp8LinearWeightGrad(const Fp8OutputGrad& dy, const at::Tensor& x) {
  const at::Tensor x_t =
      dy.forward.input.defined()
          ? dy.forward.input
          : QuantizeOperand(x, dy.gemm, Fp8Operand::kInput, TransposedAgain(kFp8Align)).transposed;
  return ScaledMm(dy.transposed, x_t.t(), dy.gemm, Fp8Operand::kGrad, Fp8Operand::kInput,
                  at::Tensor(), at::kFloat, /*fast=*/false, cuda::TokenAxis::kK);
}

}  // namespace padless::models::internal
