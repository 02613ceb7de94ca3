// Internal: the fused encoder layer's four GEMMs (fused_layer.h), forward and backward, each either
// in the compute dtype on the cached cuBLASLt path (padless/cuda/kernels/gemm_epilogue.h:
// LibTorch's addmm asks cuBLASLt's heuristic on every call, the most expensive host call of the
// forward) or, when the layer has FP8 scales and the GEMM's weight fits, in FP8 (fp8_gemm.h). The
// fused layer calls the same functions either way.
#ifndef PADLESS_MODELS_LAYER_GEMMS_H_
#define PADLESS_MODELS_LAYER_GEMMS_H_

#include <ATen/core/Tensor.h>

#include <array>
#include <optional>
#include <vector>

#include "fp8_gemm.h"
#include "padless/models/encoder_layer.h"
#include "padless/models/fused_layer.h"

namespace padless::models::internal {

// The FFN's activation of f, as ATen computes it.
at::Tensor Activate(const at::Tensor& f, Activation a);

// The layer's four GEMMs, in order. Each one's weight is followed by its bias in the weights.
enum LayerGemm { kQkvGemm, kOutGemm, kFfnInGemm, kFfnOutGemm };
inline constexpr std::array<int, kFusedLayerGemms> kGemmWeight = {kQkvWeight, kOutWeight,
                                                                  kFfnInWeight, kFfnOutWeight};

// Whether the forward adds GEMM g's bias in the GEMM (QKV, FFN in); the other two biases are added
// by the LayerNorm kernels that follow them.
inline bool GemmAddsBias(LayerGemm g) { return g == kQkvGemm || g == kFfnInGemm; }

// What the forward of a layer's FP8 GEMMs kept for their backward, in GEMM order.
using Fp8LayerTransposes = std::array<Fp8Transposes, kFusedLayerGemms>;

// The gradient of a GEMM's output, as its backward GEMMs take it.
struct OutputGrad {
  LayerGemm gemm;
  at::Tensor dy;                     // compute dtype; undefined for a GEMM in FP8
  std::optional<Fp8OutputGrad> fp8;  // its FP8 copies, for a GEMM that runs in FP8
};

class LayerGemms {
 public:
  // `w`: the layer's weights as it computes with them (fused_layer.cc); must outlive this object.
  // `transposes` (null: none kept): where a forward GEMM in FP8 writes its operands' transposes,
  // and where Grad finds them for the backward GEMMs; must outlive this object.
  LayerGemms(const std::vector<at::Tensor>& w, const FusedLayerFp8& fp8,
             Fp8LayerTransposes* transposes = nullptr)
      : w_(w), fp8_(fp8), transposes_(transposes) {}

  // Whether GEMM g runs in FP8.
  bool InFp8(LayerGemm g) const;

  // x @ W^T, plus the bias when `bias`.
  at::Tensor Forward(LayerGemm g, const at::Tensor& x, bool bias) const;

  // pre = x @ W^T + bias and act = gelu_tanh(pre), the GELU in the GEMM's epilogue either way, for
  // an act whose only reader is GEMM `next`. With both in FP8 and the scales settled, act comes as
  // next's E4M3 input rows (Fp8LinearGeluToFp8, their transpose kept where next keeps its own), for
  // ForwardFromFp8: `act_fp8` set and `act` undefined; else `act` in the compute dtype.
  struct GeluOutput {
    at::Tensor pre, act, act_fp8;
  };
  GeluOutput ForwardGelu(LayerGemm g, LayerGemm next, const at::Tensor& x) const;
  // GEMM g's forward (no bias) from its input as ForwardGelu's act_fp8 ([T_pad, K], T = `tokens`).
  at::Tensor ForwardFromFp8(LayerGemm g, const at::Tensor& rows, int64_t tokens) const;
  // act alone, for inference: no pre-activation written (cuda::LinearBiasGelu) unless in FP8.
  at::Tensor ForwardGeluAct(LayerGemm g, const at::Tensor& x) const;

  // Where the kernel computing GEMM g's output gradient may write it in FP8 itself
  // (OutputGradTarget); nullopt when g is not in FP8 or the scales calibrate.
  std::optional<cuda::Fp8GradOutput> GradTarget(LayerGemm g) const;

  // dy as GEMM g's backward takes it: `dy` [T, N] in the compute dtype, quantized here once when g
  // runs in FP8, or the FP8 rows a kernel wrote at GradTarget(g) ([T_pad, N]; T = `tokens`).
  // `weight_grad`: whether WeightGrad will be asked for.
  OutputGrad Grad(LayerGemm g, const at::Tensor& dy, bool weight_grad, int64_t tokens) const;

  // dy @ W, added in place into `accumulate` (and returned) when that is defined.
  at::Tensor InputGrad(const OutputGrad& d, const at::Tensor& accumulate = at::Tensor()) const;

  // dy^T @ x in fp32, x the GEMM's forward input (may be undefined when the forward kept its FP8
  // transpose: KeepsInputTranspose).
  at::Tensor WeightGrad(const OutputGrad& d, const at::Tensor& x) const;

  // Whether GEMM g's backward has the FP8 transpose of its forward input, so that its
  // compute-dtype input need not be kept.
  bool KeepsInputTranspose(LayerGemm g) const;

 private:
  const at::Tensor& Weight(LayerGemm g) const { return w_[kGemmWeight[g]]; }
  const at::Tensor& Bias(LayerGemm g) const { return w_[kGemmWeight[g] + 1]; }
  Fp8Gemm Fp8Slots(LayerGemm g) const { return {fp8_.scaling, fp8_.first_gemm + g}; }
  // Where GEMM g's forward writes its transposes: null when none are kept or g is not in FP8.
  Fp8Transposes* KeepFor(LayerGemm g) const;

  const std::vector<at::Tensor>& w_;
  FusedLayerFp8 fp8_;
  Fp8LayerTransposes* transposes_;
};

}  // namespace padless::models::internal

#endif  // PADLESS_MODELS_LAYER_GEMMS_H_
