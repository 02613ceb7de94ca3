#include "padless/train/step_outcome.h"

#include <ATen/ATen.h>
#include <c10/core/Event.h>
#include <c10/core/impl/VirtualGuardImpl.h>

#include <optional>
#include <utility>

namespace padless::train {

struct StepOutcome::Flags {
  at::Tensor host;                    // bool [2], pinned when copied from a device
  std::optional<c10::Event> arrived;  // recorded behind the copy; reset once waited for
};

StepOutcome StepOutcome::Copy(const at::Tensor& finite) {
  StepOutcome out;
  out.flags_ = std::make_shared<Flags>();
  if (finite.is_cpu()) {
    out.flags_->host = finite;
    return out;
  }
  out.flags_->host =
      at::empty(finite.sizes(), finite.options().device(at::kCPU).pinned_memory(true));
  out.flags_->host.copy_(finite, /*non_blocking=*/true);
  const c10::impl::VirtualGuardImpl guard(finite.device().type());
  out.flags_->arrived.emplace(finite.device().type());
  out.flags_->arrived->record(guard.getStream(finite.device()));
  return out;
}

bool StepOutcome::Read(int64_t index) const {
  if (flags_ == nullptr) return true;
  if (flags_->arrived.has_value()) {
    flags_->arrived->synchronize();
    flags_->arrived.reset();
  }
  return flags_->host[index].item<bool>();
}

bool StepOutcome::loss_finite() const { return Read(0); }
bool StepOutcome::gradients_finite() const { return Read(1); }

}  // namespace padless::train
