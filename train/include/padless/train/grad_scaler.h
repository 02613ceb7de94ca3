// GradScaler: dynamic loss scaling for fp16 training, built on ATen's amp ops because LibTorch has
// no C++ GradScaler. Mirrors torch.amp.GradScaler: scale the loss, unscale and check the gradients,
// skip the optimizer step on inf/NaN, grow or back off the scale.
#ifndef PADLESS_TRAIN_GRAD_SCALER_H_
#define PADLESS_TRAIN_GRAD_SCALER_H_

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <vector>

namespace padless::train {

struct GradScalerOptions {
  double init_scale = 65536.0;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
  bool enabled = true;
};

class GradScaler {
 public:
  explicit GradScaler(GradScalerOptions options = {});

  // loss * scale (the loss itself when disabled).
  at::Tensor Scale(const at::Tensor& loss);
  // Divides the gradients of `params` by the scale in place and records whether any is inf/NaN.
  // Call at most once per step, before clipping. No host sync.
  void Unscale(const std::vector<at::Tensor>& params);
  // Whether the step must be skipped (reads found_inf: one host sync). Unscales first if needed.
  bool FoundInf(const std::vector<at::Tensor>& params);
  // Unscales, then runs `optimizer_step` unless a gradient is inf/NaN; returns whether it ran.
  // Call Update() afterwards in either case.
  bool Step(const std::function<void()>& optimizer_step, const std::vector<at::Tensor>& params);
  // Updates the scale from this step's found_inf (backs off on inf, grows after growth_interval
  // clean steps) and resets the per-step state.
  void Update();

  double scale() const;
  bool enabled() const { return options_.enabled; }
  // For checkpoints: the scale and the growth tracker.
  at::Tensor state() const;
  void load_state(const at::Tensor& state);

 private:
  void Init(const at::Device& device);

  GradScalerOptions options_;
  at::Tensor scale_;           // float32 0-dim
  at::Tensor growth_tracker_;  // int32 0-dim
  at::Tensor found_inf_;       // float32 0-dim, this step
  bool unscaled_ = false;
};

}  // namespace padless::train

#endif  // PADLESS_TRAIN_GRAD_SCALER_H_
