// StepOutcome: whether an optimizer step's loss and gradients were finite, read on the host
// without stalling the device. TrainStep decides on the device whether the step updates anything
// (the fused AdamW kernel takes the decision as a tensor), then copies the two flags to pinned host
// memory behind the step's work. The caller reads them when it needs them, usually once the next
// step is queued, by which time they have long arrived: the training loop pays no host sync per
// step. Reading flags that have not arrived yet waits for them.
//
// Copies share the flags. Not thread-safe.
#ifndef PADLESS_TRAIN_STEP_OUTCOME_H_
#define PADLESS_TRAIN_STEP_OUTCOME_H_

#include <ATen/core/Tensor.h>

#include <memory>

namespace padless::train {

class StepOutcome {
 public:
  // A finite step, known on the host.
  StepOutcome() = default;
  // Starts copying `finite` (bool [2]: the loss is finite, the gradient norm is finite) to the
  // host; on the CPU it is already there.
  static StepOutcome Copy(const at::Tensor& finite);

  // Each waits for the flags if they are still on their way.
  bool loss_finite() const;
  bool gradients_finite() const;
  // The step changed no parameter and no optimizer state.
  bool skipped() const { return !(loss_finite() && gradients_finite()); }

 private:
  struct Flags;
  bool Read(int64_t index) const;

  std::shared_ptr<Flags> flags_;  // null: finite
};

}  // namespace padless::train

#endif  // PADLESS_TRAIN_STEP_OUTCOME_H_
