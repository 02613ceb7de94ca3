#include "inference_gemms.h"

#include <ATen/ATen.h>

#include "padless/cuda/kernels/fp8_rowwise.h"
#include "padless/cuda/kernels/fp8_static.h"

namespace padless::models::internal {
namespace {

cuda::RowActivation RowActivationOf(Activation a) {
  switch (a) {
    case Activation::kRelu:
      return cuda::RowActivation::kRelu;
    case Activation::kGeluTanh:
      return cuda::RowActivation::kGeluTanh;
    case Activation::kGelu:
      break;
  }
  return cuda::RowActivation::kGelu;
}

// Activate (layer_gemms.h) writing into `f`.
void ActivateInPlace(at::Tensor& f, Activation a) {
  switch (a) {
    case Activation::kRelu:
      at::relu_(f);
      return;
    case Activation::kGeluTanh:
      at::gelu_(f, "tanh");
      return;
    case Activation::kGelu:
      break;
  }
  at::gelu_(f);
}

}  // namespace

at::Tensor InferenceGemms::Linear(LayerGemm g, const InferenceRows& x, bool bias) const {
  if (InInt8(g)) {
    // Int8 weights carry the biases of the GEMMs that add them (PackInt8InferenceWeights).
    TORCH_CHECK(bias == GemmAddsBias(g), "InferenceGemms: int8 GEMM ", static_cast<int>(g),
                " was packed ", GemmAddsBias(g) ? "with" : "without", " its bias");
    return (*int8_)[g]->Apply(x.x).to(x.x.scalar_type());
  }
  if (!InFp8(g)) return compute_.Forward(g, x.x, bias);
  const at::Tensor b = bias ? w_[kGemmWeight[g] + 1] : at::Tensor();
  return cuda::Fp8RowwiseLinear(x.fp8.values.defined() ? x.fp8 : cuda::Fp8QuantizeRows(x.x),
                                Quantized(g), b, x.x.scalar_type());
}

at::Tensor InferenceGemms::FeedForward(const InferenceRows& h, Activation activation) const {
  const at::ScalarType dtype = h.x.scalar_type();
  if (InFp8(kFfnInGemm) && InFp8(kFfnOutGemm) && fp8_->ffn.Set()) {
    const float input_scale_inv = fp8_->ffn.input_scale_inv;
    const cuda::Fp8Rows in =
        h.fp8.values.defined() ? h.fp8 : cuda::Fp8QuantizeAtScale(h.x, input_scale_inv);
    const cuda::Fp8Rows act =
        cuda::Fp8StaticLinearAct(in, Quantized(kFfnInGemm), w_[kGemmWeight[kFfnInGemm] + 1],
                                 RowActivationOf(activation), fp8_->ffn.activation);
    return cuda::Fp8RowwiseLinear(act, Quantized(kFfnOutGemm), at::Tensor(), dtype);
  }
  if (InFp8(kFfnInGemm) && InFp8(kFfnOutGemm)) {
    const at::Tensor pre = Linear(kFfnInGemm, h, /*bias=*/true);
    return cuda::Fp8RowwiseLinear(cuda::Fp8QuantizeRows(pre, RowActivationOf(activation)),
                                  Quantized(kFfnOutGemm), at::Tensor(), dtype);
  }
  InferenceRows g;
  if (InInt8(kFfnInGemm)) {
    // The int8 GEMM's fp32 output is this call's own: activated in place, which spares a [T, 4H]
    // allocation and its write.
    g.x = Linear(kFfnInGemm, h, /*bias=*/true);
    ActivateInPlace(g.x, activation);
  } else {
    g.x = activation == Activation::kGeluTanh && !InFp8(kFfnInGemm)
              ? compute_.ForwardGeluAct(kFfnInGemm, h.x)
              : Activate(Linear(kFfnInGemm, h, /*bias=*/true), activation);
  }
  return Linear(kFfnOutGemm, g, /*bias=*/false);
}

}  // namespace padless::models::internal
