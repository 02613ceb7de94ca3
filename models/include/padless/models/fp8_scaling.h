// Fp8Scaling: per-tensor delayed scaling for FP8 GEMMs, Transformer Engine's recipe.
//
// Each GEMM has three operands: its input and weight (E4M3, max 448) and, in backward, the
// gradient of its output (E5M2, max 57344). Each operand is quantized as saturate(v * scale) and
// the GEMM multiplies by 1 / scale again. The scale for a step comes from the amaxes (max |v|)
// recorded in the previous `history` steps: scale = max_fp8 / max(history) / 2^margin, so that
// quantizing never waits for a reduction over the tensor it quantizes (one pass, not two).
//
// Lifetime of a step: quantizing records each operand's amax into amax(); Advance(), once per
// optimizer step, pushes those into the history and computes the next step's scales. A recompute
// in backward (checkpointing) or a second micro-batch records into the same slots: max is
// idempotent, and the scales do not change within a step, so a recompute quantizes exactly as
// its forward did.
//
// The first step has no history. Until the first Advance(), calibrating() is true and the
// quantizing code sets each slot's scale from the tensor in hand (one extra amax pass, for one
// step only), instead of guessing 1 (for gradients around 1e-6 that would flush most to zero).
//
// Non-finite amaxes (a step the trainer skips for inf/NaN) enter the history as 0, and a slot
// whose history holds only zeros keeps its scale: one bad step does not poison the next 16.
//
// Everything lives on the device and no call waits for it. Data-parallel ranks keep their own
// scales (their weights agree; their activations differ, and each rank's GEMMs stay exact up to
// its own quantization). Not thread-safe; one per training run.
#ifndef PADLESS_MODELS_FP8_SCALING_H_
#define PADLESS_MODELS_FP8_SCALING_H_

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "padless/cuda/kernels/fp8_quantize.h"

namespace padless::models {

enum class Fp8Operand { kInput = 0, kWeight = 1, kGrad = 2 };
inline constexpr int64_t kFp8OperandsPerGemm = 3;

// The format each operand is quantized to: E5M2's range for gradients, E4M3's precision for the
// rest.
cuda::Fp8Format Fp8FormatOf(Fp8Operand operand);

// OK for the CPU and for GPUs with FP8 tensor cores (compute capability 8.9 and newer);
// FailedPrecondition, naming the GPU, otherwise.
absl::Status CheckFp8Device(const c10::Device& device);

struct Fp8ScalingOptions {
  int64_t history = 16;  // steps of amax history (>= 1)
  int margin = 0;        // scales are divided by 2^margin (headroom against growth)
};

class Fp8Scaling {
 public:
  // `gemms` GEMMs (>= 1), their state on `device`. Throws c10::Error on bad options.
  Fp8Scaling(int64_t gemms, c10::Device device, Fp8ScalingOptions options = {});

  int64_t gemms() const { return gemms_; }
  // One-element fp32 views for GEMM `gemm`'s operand: the scale to quantize with, its inverse for
  // the GEMM, and this step's amax slot.
  // Made once: the GEMMs ask for them several times per layer and step.
  const at::Tensor& scale(int64_t gemm, Fp8Operand operand) const;
  const at::Tensor& scale_inv(int64_t gemm, Fp8Operand operand) const;
  const at::Tensor& amax(int64_t gemm, Fp8Operand operand) const;
  bool calibrating() const { return calibrating_; }

  // Sets a slot's scale (and its inverse) from `amax_now`, a one-element tensor holding the max |v|
  // of the tensor about to be quantized; used while calibrating(). On the device.
  void Calibrate(int64_t gemm, Fp8Operand operand, const at::Tensor& amax_now);

  // Ends a step: this step's amaxes join the history, the next scales are computed, the amaxes
  // are reset. Call once per optimizer step, skipped steps included.
  void Advance();

  // How many GEMMs quantized their input in the steps the history holds: those that ran in FP8.
  // Reads the device (one sync): for a check after the first step, not for every step.
  int64_t GemmsInHistory() const;

  // For checkpoints: [2 + history, slots] fp32 (scales, history position and calibrating flag,
  // history rows). load_state throws c10::Error on a state of another shape.
  at::Tensor state() const;
  void load_state(const at::Tensor& state);

 private:
  int64_t Slot(int64_t gemm, Fp8Operand operand) const;
  // scale_inv_ = 1 / scale_: the one place the GEMMs' copy of the scales is derived.
  void UpdateInverses();

  int64_t gemms_;
  Fp8ScalingOptions options_;
  at::Tensor scale_;      // [slots], column 0 of [slots, 4]: 16-byte aligned slots
  at::Tensor scale_inv_;  // [slots], likewise
  at::Tensor amax_;       // [slots], likewise; this step
  at::Tensor history_;    // [history, slots]
  at::Tensor fp8_max_;    // [slots], each slot's format's largest finite value / 2^margin
  // Each slot's one-element views of scale_, scale_inv_ and amax_.
  std::vector<at::Tensor> scale_views_, scale_inv_views_, amax_views_;
  int64_t position_ = 0;  // the history row the next Advance() writes
  bool calibrating_ = true;
};

}  // namespace padless::models

#endif  // PADLESS_MODELS_FP8_SCALING_H_
