#include "padless/train/optimizer.h"

#include <ATen/ATen.h>

#include <optional>

#include "absl/strings/str_cat.h"

namespace padless::train {

FusedAdamW::FusedAdamW(std::vector<at::Tensor> params, std::vector<bool> decay,
                       AdamWOptions options)
    : params_(std::move(params)), decay_(std::move(decay)), options_(options) {
  decay_.resize(params_.size(), true);
  for (const at::Tensor& p : params_) {
    exp_avg_.push_back(at::zeros_like(p, at::MemoryFormat::Preserve).detach());
    exp_avg_sq_.push_back(at::zeros_like(p, at::MemoryFormat::Preserve).detach());
    step_.push_back(at::zeros({}, p.options().dtype(at::kFloat)).detach());
  }
  const at::Device device = params_.empty() ? at::Device(at::kCPU) : params_.front().device();
  updates_ = at::zeros({}, at::TensorOptions().dtype(at::kFloat).device(device));
}

void FusedAdamW::Step(double lr, const at::Tensor& skip, const at::Tensor& grad_divisor) {
  // Step counts advance by 1 - skip, and the fused kernel leaves everything alone when its
  // found_inf (here: skip) is 1, as torch.optim.AdamW(fused=True) does under a GradScaler.
  const at::Tensor keep = skip.defined() ? 1 - skip : at::Tensor();
  const std::optional<at::Tensor> found_inf =
      skip.defined() ? std::optional<at::Tensor>(skip) : std::nullopt;
  // The kernel's grad_scale is what AMP's unscaling divides by; here it is the clip divisor.
  const std::optional<at::Tensor> divisor =
      grad_divisor.defined() ? std::optional<at::Tensor>(grad_divisor) : std::nullopt;
  // The fused kernel takes one weight decay per call: one call for each group.
  for (bool decay : {true, false}) {
    std::vector<at::Tensor> p, g, m, v, s;
    for (size_t i = 0; i < params_.size(); ++i) {
      if (decay_[i] != decay || !params_[i].grad().defined()) continue;
      p.push_back(params_[i].detach());
      g.push_back(params_[i].grad());
      m.push_back(exp_avg_[i]);
      v.push_back(exp_avg_sq_[i]);
      s.push_back(step_[i]);
    }
    if (p.empty()) continue;
    // The fused kernel reads the step count for bias correction but does not advance it.
    if (keep.defined()) {
      at::_foreach_add_(s, std::vector<at::Tensor>(s.size(), keep));
    } else {
      at::_foreach_add_(s, 1);
    }
    at::_fused_adamw_(p, g, m, v, /*max_exp_avg_sqs=*/{}, s, lr, options_.beta1, options_.beta2,
                      decay ? options_.weight_decay : 0.0, options_.eps, /*amsgrad=*/false,
                      /*maximize=*/false, /*grad_scale=*/divisor, found_inf);
  }
  if (keep.defined()) {
    updates_.add_(keep);
  } else {
    updates_.add_(1);
  }
}

int64_t FusedAdamW::steps() const { return static_cast<int64_t>(updates_.item<double>()); }

void FusedAdamW::ZeroGrad() {
  for (at::Tensor& p : params_) p.mutable_grad() = at::Tensor();
}

std::vector<std::pair<std::string, at::Tensor>> FusedAdamW::State() const {
  std::vector<std::pair<std::string, at::Tensor>> out;
  for (size_t i = 0; i < params_.size(); ++i) {
    out.emplace_back(absl::StrCat("exp_avg.", i), exp_avg_[i]);
    out.emplace_back(absl::StrCat("exp_avg_sq.", i), exp_avg_sq_[i]);
    out.emplace_back(absl::StrCat("step.", i), step_[i]);
  }
  out.emplace_back("steps", updates_.to(at::kLong).cpu());
  return out;
}

bool FusedAdamW::LoadState(const std::vector<std::pair<std::string, at::Tensor>>& state) {
  const std::vector<std::pair<std::string, at::Tensor>> mine = State();
  if (state.size() != mine.size()) return false;
  for (size_t i = 0; i < mine.size(); ++i) {
    if (state[i].first != mine[i].first || state[i].second.sizes() != mine[i].second.sizes()) {
      return false;
    }
  }
  for (size_t i = 0; i < params_.size(); ++i) {
    exp_avg_[i].copy_(state[3 * i].second);
    exp_avg_sq_[i].copy_(state[3 * i + 1].second);
    step_[i].copy_(state[3 * i + 2].second);
  }
  updates_.fill_(static_cast<double>(state.back().second.item<int64_t>()));
  return true;
}

at::Tensor GlobalGradNorm(const std::vector<at::Tensor>& params) {
  std::vector<at::Tensor> grads;
  for (const at::Tensor& p : params) {
    if (p.grad().defined()) grads.push_back(p.grad());
  }
  if (grads.empty()) return at::zeros({});
  return at::linalg_vector_norm(at::stack(at::_foreach_norm(grads, 2, at::kFloat)), 2);
}

at::Tensor ClipDivisor(const at::Tensor& norm, double max_norm) {
  if (!(max_norm > 0)) return at::Tensor();  // NaN too: no clipping, never NaN gradients
  return ((norm.to(at::kFloat) + 1e-6) / max_norm).clamp_min(1.0);
}

}  // namespace padless::train
