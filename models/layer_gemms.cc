#include "layer_gemms.h"

#include <ATen/ATen.h>

#include "padless/cuda/kernels/gemm_epilogue.h"

namespace padless::models::internal {

at::Tensor Activate(const at::Tensor& f, Activation a) {
  switch (a) {
    case Activation::kRelu:
      return at::relu(f);
    case Activation::kGeluTanh:
      return at::gelu(f, "tanh");
    case Activation::kGelu:
      break;
  }
  return at::gelu(f);
}

bool LayerGemms::InFp8(LayerGemm g) const {
  return fp8_.scaling != nullptr && Fp8GemmFits(Weight(g));
}

Fp8Transposes* LayerGemms::KeepFor(LayerGemm g) const {
  return transposes_ != nullptr && InFp8(g) ? &(*transposes_)[g] : nullptr;
}

bool LayerGemms::KeepsInputTranspose(LayerGemm g) const {
  return transposes_ != nullptr && (*transposes_)[g].input.defined();
}

at::Tensor LayerGemms::Forward(LayerGemm g, const at::Tensor& x, bool bias) const {
  const at::Tensor& weight = Weight(g);
  const at::Tensor b = bias ? Bias(g) : at::Tensor();
  if (InFp8(g)) return Fp8Linear(x, weight, b, Fp8Slots(g), KeepFor(g));
  return bias ? cuda::LinearBias(x, weight, b) : cuda::Linear(x, weight);
}

LayerGemms::GeluOutput LayerGemms::ForwardGelu(LayerGemm g, LayerGemm next,
                                               const at::Tensor& x) const {
  if (InFp8(g) && InFp8(next) && !fp8_.scaling->calibrating()) {
    Fp8GeluRows r = Fp8LinearGeluToFp8(x, Weight(g), Bias(g), Fp8Slots(g), KeepFor(g),
                                       Fp8Slots(next), KeepFor(next));
    return {std::move(r.pre), at::Tensor(), std::move(r.rows)};
  }
  cuda::LinearGeluResult r = InFp8(g)
                                 ? Fp8LinearGelu(x, Weight(g), Bias(g), Fp8Slots(g), KeepFor(g))
                                 : cuda::LinearGelu(x, Weight(g), Bias(g));
  return {std::move(r.pre), std::move(r.act), at::Tensor()};
}

at::Tensor LayerGemms::ForwardFromFp8(LayerGemm g, const at::Tensor& rows, int64_t tokens) const {
  return Fp8LinearFromRows(rows, tokens, Weight(g), at::Tensor(), Fp8Slots(g), KeepFor(g));
}

at::Tensor LayerGemms::ForwardGeluAct(LayerGemm g, const at::Tensor& x) const {
  if (InFp8(g)) return Fp8LinearGelu(x, Weight(g), Bias(g), Fp8Slots(g)).act;
  return cuda::LinearBiasGelu(x, Weight(g), Bias(g));
}

std::optional<cuda::Fp8GradOutput> LayerGemms::GradTarget(LayerGemm g) const {
  return InFp8(g) ? OutputGradTarget(Fp8Slots(g)) : std::nullopt;
}

OutputGrad LayerGemms::Grad(LayerGemm g, const at::Tensor& dy, bool weight_grad,
                            int64_t tokens) const {
  OutputGrad d;
  d.gemm = g;
  if (!InFp8(g)) {
    d.dy = dy;
    return d;
  }
  const Fp8Transposes forward = transposes_ != nullptr ? (*transposes_)[g] : Fp8Transposes();
  if (dy.scalar_type() == Fp8ScalarType(Fp8FormatOf(Fp8Operand::kGrad))) {
    d.fp8 =
        OutputGradFromRows(dy, tokens, Bias(g).scalar_type(), Fp8Slots(g), weight_grad, forward);
  } else {
    d.fp8 = QuantizeOutputGrad(dy, Fp8Slots(g), weight_grad, forward);
  }
  return d;
}

at::Tensor LayerGemms::InputGrad(const OutputGrad& d, const at::Tensor& accumulate) const {
  if (d.fp8) return Fp8LinearInputGrad(*d.fp8, Weight(d.gemm), accumulate);
  return cuda::LinearInputGrad(d.dy, Weight(d.gemm), accumulate);
}

at::Tensor LayerGemms::WeightGrad(const OutputGrad& d, const at::Tensor& x) const {
  if (d.fp8) return Fp8LinearWeightGrad(*d.fp8, x);
  return cuda::LinearWeightGrad(d.dy, x);
}

}  // namespace padless::models::internal
