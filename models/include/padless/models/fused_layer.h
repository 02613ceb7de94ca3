// A post-LN encoder layer over varlen (packed, padding-free) tokens with a hand-written backward.
//
// Autograd through EncoderLayerForward keeps what each op's backward node wants: fp32 LayerNorm
// inputs, casts of every weight, a GELU output next to its input, and it recomputes the whole
// layer when checkpointed. One custom function per layer instead computes the whole layer in the
// compute dtype (bf16/fp16 under autocast) with fused kernels, and decides itself what to keep:
//  - each bias + dropout + residual add + LayerNorm is one kernel forward and one backward
//    (padless/cuda/kernels/residual_layer_norm.h), which also sums the bias gradient;
//  - the FFN-in GEMM computes bias + GELU in its cuBLASLt epilogue and keeps the pre-activation
//    for backward (padless/cuda/kernels/gemm_epilogue.h). On a GPU in bf16/fp16 an erf-GELU model
//    computes the tanh form there (they differ far below the compute dtype's rounding; see
//    fused_layer.cc);
//  - weight gradients come out of their GEMMs in fp32, the parameters' dtype, and the residual
//    gradient is accumulated in place into the input gradient.
//  - with FP8 scales (FusedLayerFp8), its four GEMMs run in FP8 (fp8_scaling.h, fp8_gemm.h): the
//    inputs and weights in E4M3, the output gradients in E5M2, attention and LayerNorm as before.
//    Under kSaveAll the forward's quantizing passes also write the transposes the backward GEMMs
//    take (E4M3, one byte an element) and the layer keeps those instead of the FFN GEMMs'
//    compute-dtype inputs (LN1's output and the GELU output): 3H bytes a token less than the
//    compute-dtype layer (H more under `spec.lean`, which keeps neither the GELU output nor its
//    transpose), and no quantizing pass over the inputs or weights in backward. The
//    recompute modes keep what the compute-dtype layer keeps, and their recompute writes the
//    transposes. Backward holds the FP8 copies of one output gradient (two bytes per element)
//    until that GEMM's backward is done.
// Off the GPU (or for shapes the kernels do not take) the same functions run unfused ATen ops.
// What it keeps:
//  - kSaveAll keeps 13 [T, H] tensors' worth per layer in the compute dtype (x, q/k/v, the
//    attention output, the two LayerNorm inputs and the LN1 output, the FFN's 4H input, dropout
//    masks) plus the 4H GELU output unless `spec.lean`, where backward recomputes it, and the
//    layer's weights in the compute dtype, so that backward does not cast them again;
//  - kRecomputeAll (checkpoint policy "all") keeps only the layer input x and re-runs the whole
//    layer in backward on the forward's RNG stream (same dropout masks);
//  - kRecomputeToActivation (policy "selective") keeps x and the LayerNorm-2 input (with its
//    statistics and dropout mask) and re-runs only up to the FFN activation: the QKV, attention,
//    output projection and FFN-in matmuls. The FFN-out matmul and LayerNorm 2 are not re-run
//    (their backward needs only what is kept), so a checkpointed layer costs about two thirds of
//    a forward, not a whole.
// The residual stream is in the compute dtype (each sum is rounded once, then normalised in fp32
// inside LayerNorm).
#ifndef PADLESS_MODELS_FUSED_LAYER_H_
#define PADLESS_MODELS_FUSED_LAYER_H_

#include <ATen/core/Tensor.h>

#include <array>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "padless/cuda/kernels/fp8_rowwise.h"
#include "padless/cuda/kernels/fp8_static.h"
#include "padless/models/attention.h"
#include "padless/models/encoder_layer.h"
#include "padless/models/fp8_scaling.h"
#include "padless/models/int8_linear.h"

namespace padless::models {

enum class FusedSaving { kSaveAll, kRecomputeAll, kRecomputeToActivation };

// Whether FusedEncoderLayerForward can run a layer call: post-LN, a varlen context (flash on a GPU
// in bf16/fp16; the per-sequence reference only without attention dropout, as it cannot replay
// that dropout), x of shape [T, H].
bool FusedLayerSupported(const at::Tensor& x, const LayerSpec& spec, const AttentionContext& ctx);

// The dtype the fused layer computes in for input x: the autocast dtype while autocast is on for
// x's device, else x's own.
at::ScalarType FusedComputeDtype(const at::Tensor& x);

// Several layers' weights as FusedEncoderLayerForward computes with them (matrices and biases in
// `dtype`, the LayerNorm gains and biases as given), for one forward: every cast in one
// multi-tensor copy instead of eight per layer (the forward is bound by its host's launches).
// Each layer's copies share one buffer of their own, freed when the last of them goes: a layer
// that keeps them for backward (kSaveAll) keeps only its own.
std::vector<std::vector<at::Tensor>> FusedComputeWeights(const std::vector<at::TensorList>& layers,
                                                         at::ScalarType dtype);

// The layer's four GEMMs in FP8: QKV, output projection, FFN in and FFN out are GEMMs
// first_gemm .. first_gemm + 3 of `scaling`, which must outlive the backward of the layer. A GEMM
// whose weight's sides are not multiples of 16 stays in the compute dtype. Null: no FP8.
inline constexpr int64_t kFusedLayerGemms = 4;
struct FusedLayerFp8 {
  Fp8Scaling* scaling = nullptr;
  int64_t first_gemm = 0;
};

// EncoderLayerForward's result (to the compute dtype's rounding, or FP8's with `fp8`) for x already
// in the compute dtype. Weights that do not require grad get none. `compute_weights`:
// FusedComputeWeights' copies of `weights`, made for this forward from their current values;
// null: the layer casts them.
at::Tensor FusedEncoderLayerForward(const at::Tensor& x, at::TensorList weights,
                                    const LayerSpec& spec, const AttentionContext& ctx,
                                    FusedSaving saving,
                                    const std::vector<at::Tensor>* compute_weights = nullptr,
                                    const FusedLayerFp8& fp8 = {});

// The FFN's fixed FP8 scales (dequantization factors, cuda/kernels' fp8_static.h), so that the
// FFN-in GEMM writes the FFN-out GEMM's FP8 input itself. Each is an upper bound of a magnitude
// over every possible input, from the weights alone, / 448 (so nothing saturates):
//  - input, the attention LayerNorm's output h = gamma * xhat + beta: |xhat|_2 <= sqrt(H), so
//    |h_k| <= |gamma_k| sqrt(H) + |beta_k|;
//  - activation: by Cauchy-Schwarz, |W_in[j] . h| <= |W_in[j] * gamma|_2 sqrt(H) +
//    |W_in[j]| . |beta|, times 1 + 1/8 for h's FP8 rounding (at most 1/16 of a value), plus
//    |b_j|; GELU and ReLU never exceed their input's magnitude, or 0.2 below zero.
// On all-MiniLM-L6-v2 and 400 IMDB reviews each layer's real activation maximum was 1/1.8 to 1/3.3
// of its bound: E4M3's relative precision is the same, and only values below 2^-15 of the bound
// lose bits. Zero (both): not set, the FFN quantizes per token.
struct Fp8StaticFfn {
  float input_scale_inv = 0.f;
  cuda::Fp8FixedScale activation;  // on the weights' device
  bool Set() const { return input_scale_inv > 0.f && activation.scale_inv > 0.f; }
};

// A layer's GEMM weights quantized for inference.
struct Fp8LayerWeights {
  // The four GEMM weights in GEMM order (QKV, output projection, FFN in, FFN out): E4M3 with one
  // scale per output channel (cuda::Fp8QuantizeRows), but the FFN-in weight's one scale for the
  // whole tensor (cuda::Fp8QuantizeTensor) when `ffn` is set. A GEMM whose weight's sides are not
  // multiples of 16 is left undefined (values undefined) and computes in the compute dtype.
  std::array<cuda::Fp8Rows, kFusedLayerGemms> gemms;
  // Set when both FFN GEMMs are in FP8.
  Fp8StaticFfn ffn;
};

// Each layer's Fp8LayerWeights, from the layers' weights (fp32 masters) as they are now.
std::vector<Fp8LayerWeights> QuantizeInferenceWeights(const std::vector<at::TensorList>& layers);

// A layer's four GEMM weights as int8 for CPU inference (Int8Linear), in GEMM order; the QKV and
// FFN-in GEMMs carry their biases (the other two biases are added by the LayerNorms that follow),
// or every GEMM its own where no fused LayerNorm follows (ModernBERT's layers).
using Int8LayerWeights = std::array<std::optional<Int8Linear>, kFusedLayerGemms>;

// Each layer's Int8LayerWeights (CPU weights); `every_bias`: each GEMM carries its bias (an
// undefined one stays out). Int8Linear::Pack's errors.
absl::StatusOr<std::vector<Int8LayerWeights>> PackInt8InferenceWeights(
    const std::vector<at::TensorList>& layers, bool every_bias = false);

// A layer's input or output in inference: the compute-dtype rows and, when the FP8 GEMM that reads
// them next was known as they were written, their FP8 copy (Fp8QuantizeRows of x, or
// Fp8QuantizeAtScale at that GEMM's fixed scale: Fp8StaticFfn; written by the LayerNorm that
// produced x); else fp8.values is undefined and the GEMM quantizes x.
struct InferenceRows {
  at::Tensor x;
  cuda::Fp8Rows fp8;
};

// The same layer for inference: FusedEncoderLayerForward's forward run directly, without an
// autograd function and keeping nothing for a backward (its activations are freed as it returns),
// so that inference gets the fused kernels too. Grad mode must be off (e.g. c10::InferenceMode);
// x in the compute dtype; `compute_weights` as for FusedEncoderLayerForward (null: cast here).
// `fp8` (QuantizeInferenceWeights' entry for this layer): the GEMMs it holds run in FP8 with
// per-token activation scales (cuda::Fp8RowwiseLinear), but the FFN's input and activation at its
// fixed scales (Fp8StaticFfn); attention, LayerNorms and the residual stream stay in the compute
// dtype.
// Null: every GEMM in the compute dtype, as evaluation does. `fp8_output`: the next layer's QKV
// GEMM runs in FP8, so the output's LayerNorm also writes the output's FP8 copy. `int8` (CPU,
// instead of fp8): the GEMMs run with int8 weights (Int8Linear), the rest in x's dtype (fp32).
// `out_rows` (int64 [n] on x's device, each sequence's first token; undefined: every row): the
// layer's output for those rows alone, [n, H]: their queries attend over the whole sequences
// (AttendFirstTokens), and the rest of the layer runs on n rows. For the last layer under [CLS]
// pooling; the output then feeds no other layer (fp8_output must be false).
InferenceRows FusedEncoderLayerInfer(const InferenceRows& x, at::TensorList weights,
                                     const LayerSpec& spec, const AttentionContext& ctx,
                                     const std::vector<at::Tensor>* compute_weights = nullptr,
                                     const Fp8LayerWeights* fp8 = nullptr, bool fp8_output = false,
                                     const Int8LayerWeights* int8 = nullptr,
                                     const at::Tensor& out_rows = {});

}  // namespace padless::models

#endif  // PADLESS_MODELS_FUSED_LAYER_H_
