// Internal: the GEMMs of the fused layer's inference forward (fused_layer.cc's InferForward). Each
// runs in the compute dtype through LayerGemms (the cached cuBLASLt path) or, when the layer has
// FP8 inference weights for it (fused_layer.h's Fp8LayerWeights), in FP8 with per-token
// activation scales (padless/cuda/kernels/fp8_rowwise.h), or on the CPU with int8 weights
// (Int8Linear). Results come back in x's dtype either
// way, so the forward reads the same with or without FP8.
#ifndef PADLESS_MODELS_INFERENCE_GEMMS_H_
#define PADLESS_MODELS_INFERENCE_GEMMS_H_

#include <ATen/core/Tensor.h>

#include <vector>

#include "layer_gemms.h"
#include "padless/models/fused_layer.h"

namespace padless::models::internal {

class InferenceGemms {
 public:
  // `w`: the layer's weights in the compute dtype; `fp8` / `int8`: its quantized GEMM weights or
  // null (at most one of them). All must outlive this object.
  InferenceGemms(const std::vector<at::Tensor>& w, const Fp8LayerWeights* fp8,
                 const Int8LayerWeights* int8 = nullptr)
      : w_(w), compute_(w, FusedLayerFp8()), fp8_(fp8), int8_(int8) {}

  // Whether GEMM g runs in FP8 (and so reads an FP8 copy of its input).
  bool InFp8(LayerGemm g) const { return fp8_ != nullptr && fp8_->gemms[g].values.defined(); }
  // The fixed scale of GEMM g's FP8 input (Fp8StaticFfn), or 0 when it is quantized per token.
  float Fp8InputScaleInv(LayerGemm g) const {
    return g == kFfnInGemm && InFp8(g) && fp8_->ffn.Set() ? fp8_->ffn.input_scale_inv : 0.f;
  }
  // Whether GEMM g runs with int8 weights.
  bool InInt8(LayerGemm g) const { return int8_ != nullptr && (*int8_)[g].has_value(); }

  // x @ W^T (+ the GEMM's bias when `bias`), in x's dtype. In FP8 the GEMM reads x.fp8 when it is
  // defined, else quantizes x.x.
  at::Tensor Linear(LayerGemm g, const InferenceRows& x, bool bias) const;

  // The FFN without its output bias: activation(h @ W_in^T + b_in) @ W_out^T, in h's dtype. With
  // both FFN GEMMs in FP8 and the layer's Fp8StaticFfn set, the FFN-in GEMM writes the FFN-out
  // GEMM's FP8 input at its fixed scale (cuda::Fp8StaticLinearAct: one GEMM, the tanh GELU in its
  // epilogue, on the H200); without it the activation is applied while the FFN-out GEMM's input
  // is quantized per token (one pass over the [T, 4H] tensor). In the compute dtype a tanh GELU
  // runs in the FFN-in GEMM's epilogue.
  at::Tensor FeedForward(const InferenceRows& h, Activation activation) const;

 private:
  const cuda::Fp8Rows& Quantized(LayerGemm g) const { return fp8_->gemms[g]; }

  const std::vector<at::Tensor>& w_;
  LayerGemms compute_;
  const Fp8LayerWeights* fp8_;
  const Int8LayerWeights* int8_;
};

}  // namespace padless::models::internal

#endif  // PADLESS_MODELS_INFERENCE_GEMMS_H_
