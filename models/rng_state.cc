#include "padless/models/rng_state.h"

#include <ATen/Context.h>
#include <ATen/core/Generator.h>

#include <mutex>

namespace padless::models::internal {

namespace {

at::Tensor GetState(at::Generator gen) {
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get_state();
}

void SetState(at::Generator gen, const at::Tensor& state) {
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(state);
}

}  // namespace

RngState CaptureRng(const c10::Device& device) {
  RngState s;
  s.cpu = GetState(at::detail::getDefaultCPUGenerator());
  if (device.is_cuda()) s.cuda = GetState(at::globalContext().defaultGenerator(device));
  return s;
}

void RestoreRng(const RngState& s, const c10::Device& device) {
  if (s.cpu.defined()) SetState(at::detail::getDefaultCPUGenerator(), s.cpu);
  if (device.is_cuda() && s.cuda.defined()) {
    SetState(at::globalContext().defaultGenerator(device), s.cuda);
  }
}

}  // namespace padless::models::internal
