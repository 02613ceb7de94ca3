// AdamW over a fixed parameter list as one fused ATen kernel per step (at::_fused_adamw_, CPU and
// CUDA), plus gradient clipping by global norm without a host sync. LibTorch's torch::optim::AdamW
// runs a dozen small kernels per parameter, which costs a BERT-base step several milliseconds.
#ifndef PADLESS_TRAIN_OPTIMIZER_H_
#define PADLESS_TRAIN_OPTIMIZER_H_

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace padless::train {

struct AdamWOptions {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.01;
};

class FusedAdamW {
 public:
  // `params` are the trainable tensors; `decay` says, per parameter, whether weight decay applies
  // (BERT practice: not to biases and LayerNorm gains).
  FusedAdamW(std::vector<at::Tensor> params, std::vector<bool> decay, AdamWOptions options);

  // One update with learning rate `lr` of every parameter that has a gradient (frozen parameters
  // have none and keep their state). With `skip` (float 0-dim on the parameters' device, 0 or 1)
  // equal to 1 nothing changes, parameters, moments and step counts alike: the decision stays on
  // the device, so the caller need not read it first. With `grad_divisor` (float 0-dim on the
  // parameters' device, ClipDivisor's) every gradient is divided by it inside the update kernel,
  // which also writes the divided gradient back: clipping without a pass of its own.
  void Step(double lr, const at::Tensor& skip = at::Tensor(),
            const at::Tensor& grad_divisor = at::Tensor());
  void ZeroGrad();
  // Updates taken (skipped ones aside). Reads a device counter: a host sync.
  int64_t steps() const;

  // State for checkpoints, as named tensors ("exp_avg.<i>", "exp_avg_sq.<i>", "step.<i>").
  std::vector<std::pair<std::string, at::Tensor>> State() const;
  // Restores what State() returned; fails (returns false) when names or shapes do not match.
  bool LoadState(const std::vector<std::pair<std::string, at::Tensor>>& state);

 private:
  std::vector<at::Tensor> params_;
  std::vector<bool> decay_;
  AdamWOptions options_;
  std::vector<at::Tensor> exp_avg_, exp_avg_sq_, step_;
  at::Tensor updates_;  // float 0-dim on the parameters' device: updates taken
};

// The global L2 norm of the gradients of `params` (those that have one) as a float 0-dim tensor on
// their device, 0 when none has: no host sync. Non-finite iff some gradient is.
at::Tensor GlobalGradNorm(const std::vector<at::Tensor>& params);

// Clipping by global norm as PyTorch's clip_grad_norm_ does it (multiply by
// max_norm / (norm + 1e-6) when that is below 1), expressed as the divisor FusedAdamW::Step takes:
// max(1, (norm + 1e-6) / max_norm), a float 0-dim tensor on norm's device. Undefined (no clipping)
// unless max_norm > 0 (0, negative or NaN).
at::Tensor ClipDivisor(const at::Tensor& norm, double max_norm);

}  // namespace padless::train

#endif  // PADLESS_TRAIN_OPTIMIZER_H_
