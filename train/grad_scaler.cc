#include "padless/train/grad_scaler.h"

#include <ATen/ATen.h>

namespace padless::train {

GradScaler::GradScaler(GradScalerOptions options) : options_(options) {}

void GradScaler::Init(const at::Device& device) {
  if (scale_.defined() && scale_.device() == device) return;
  const double current = scale_.defined() ? scale_.item<float>() : options_.init_scale;
  const int32_t tracker = growth_tracker_.defined() ? growth_tracker_.item<int32_t>() : 0;
  scale_ = at::full({}, current, at::TensorOptions().dtype(at::kFloat).device(device));
  growth_tracker_ = at::full({}, tracker, at::TensorOptions().dtype(at::kInt).device(device));
  found_inf_ = at::zeros({}, at::TensorOptions().dtype(at::kFloat).device(device));
}

at::Tensor GradScaler::Scale(const at::Tensor& loss) {
  if (!options_.enabled) return loss;
  Init(loss.device());
  return loss * scale_.to(loss.scalar_type());
}

void GradScaler::Unscale(const std::vector<at::Tensor>& params) {
  if (!options_.enabled || unscaled_) return;
  std::vector<at::Tensor> grads;
  for (const at::Tensor& p : params) {
    if (p.grad().defined()) grads.push_back(p.grad());
  }
  if (grads.empty()) return;
  Init(grads.front().device());
  at::Tensor inv_scale = scale_.reciprocal();
  at::_amp_foreach_non_finite_check_and_unscale_(grads, found_inf_, inv_scale);
  unscaled_ = true;
}

bool GradScaler::FoundInf(const std::vector<at::Tensor>& params) {
  if (!options_.enabled) return false;
  Unscale(params);
  return found_inf_.defined() && found_inf_.item<float>() != 0.0f;
}

bool GradScaler::Step(const std::function<void()>& optimizer_step,
                      const std::vector<at::Tensor>& params) {
  if (FoundInf(params)) return false;
  optimizer_step();
  return true;
}

void GradScaler::Update() {
  if (!options_.enabled || !scale_.defined()) return;
  at::_amp_update_scale_(scale_, growth_tracker_, found_inf_, options_.growth_factor,
                         options_.backoff_factor, options_.growth_interval);
  found_inf_.zero_();
  unscaled_ = false;
}

double GradScaler::scale() const {
  return scale_.defined() ? scale_.item<float>() : options_.init_scale;
}

at::Tensor GradScaler::state() const {
  const double tracker = growth_tracker_.defined() ? growth_tracker_.item<int32_t>() : 0;
  return at::tensor(std::vector<double>{scale(), tracker}, at::kDouble);
}

void GradScaler::load_state(const at::Tensor& state) {
  at::Tensor s = state.to(at::kDouble).cpu();
  const at::Device device = scale_.defined() ? scale_.device() : at::Device(at::kCPU);
  scale_ = at::full({}, s[0].item<double>(), at::TensorOptions().dtype(at::kFloat).device(device));
  growth_tracker_ = at::full({}, static_cast<int32_t>(s[1].item<double>()),
                             at::TensorOptions().dtype(at::kInt).device(device));
  found_inf_ = at::zeros({}, at::TensorOptions().dtype(at::kFloat).device(device));
  unscaled_ = false;
}

}  // namespace padless::train
