// TrainStep: one optimizer step of training, the one every caller runs (the trainer, the memory
// probe, the end-to-end benchmark), so that what is measured and timed is what users train with.
// In order, exactly as torch's AMP recipe does it:
//   for each (sub-)batch: forward under autocast, loss, GradScaler::Scale(loss * weight).backward()
//   (weight: the batch's share of the step's sequences, so accumulation averages);
//   GradScaler::Unscale (fp16), GlobalGradNorm, "loss and gradient norm finite" on the device;
//   FusedAdamW::Step, which clips (divides the gradients by ClipDivisor's) as it updates and
//   leaves everything alone when they are not finite (the step is skipped),
//   GradScaler::Update, ZeroGrad; with AmpMode::kFp8, Fp8Scaling::Advance (the FP8 scales, which
//   the constructor installs in the model's runtime, fp8_scaling.h). The step never waits for the device: the finite flags follow
//   to the host asynchronously (StepResult::outcome, step_outcome.h).
// A CUDA out-of-memory error in forward/backward clears the gradients, splits the failing batch in
// two (again if needed) and replays the whole step, so the accumulated gradient is that of the
// unsplit step; the split batches are checked to hold the same sequences and tokens. Splitting
// re-collates pieces from the corpus, so it needs `TrainStepOptions::corpus` and each batch's
// spec; without them an out-of-memory error propagates (after the gradients are cleared).
//
// Data parallel (TrainStepOptions::reducer set): every rank runs the step on its own batches. The
// ranks first agree on the step's global sequence count (one host all-reduce), and each batch's
// weight is its share of the global batch; the last backward all-reduces the gradients in buckets
// as they become ready (distributed::GradientReducer), earlier ones (accumulation micro-steps) do not
// communicate, and the loss is summed over the ranks. Every rank thus holds the gradients and loss
// of single-process training on the union of the ranks' batches, so clipping by the global norm and
// the inf/NaN skip (GradScaler included) agree everywhere. An out-of-memory split is local to its
// rank while no all-reduce has started; after that the step fails (FailedPrecondition), since the
// ranks could no longer stay in step. A batch of 0 sequences (the planner's empty batch, given to a
// short rank so that every rank takes the same steps) runs nothing: weight 0, no forward; the rank
// still joins the gradient and loss all-reduces, adding zeros.
//
// Errors: a batch that cannot be split further (ResourceExhausted), split batches that do not add
// up (Internal), collation failures. Other torch failures propagate as c10::Error exceptions,
// which callers turn into their own messages. Not thread-safe; the model, optimizer and scaler
// must outlive the step.
#ifndef PADLESS_TRAIN_TRAIN_STEP_H_
#define PADLESS_TRAIN_TRAIN_STEP_H_

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "padless/batching/batch.h"
#include "padless/batching/batch_spec.h"
#include "padless/batching/collator.h"
#include "padless/corpus/tokenized_corpus.h"
#include "padless/cuda/memory/memory_meter.h"
#include "padless/distributed/gradient_reducer.h"
#include "padless/models/autocast.h"
#include "padless/models/encoder.h"
#include "padless/train/grad_scaler.h"
#include "padless/train/optimizer.h"
#include "padless/train/step_outcome.h"

namespace padless::train {

// The optimizer's view of a model: every parameter (frozen ones simply have no gradient), and
// whether weight decay applies to it (not to biases and LayerNorm gains: BERT practice).
struct AdamWParameters {
  std::vector<at::Tensor> params;
  std::vector<bool> decay;
};
AdamWParameters ParametersForAdamW(models::EncoderClassifier& model);

struct TrainStepOptions {
  models::AmpMode amp = models::AmpMode::kOff;
  double clip_norm = 1.0;  // 0: no clipping (the norm is still computed for the finite check)
  // Where the batches came from, to collate the pieces of a split batch; null: no splitting.
  const corpus::TokenizedCorpus* corpus = nullptr;
  batching::CollatorOptions collator;
  // Empties the allocator's cache before a replay (null: nothing to empty).
  cuda::MemoryMeter* meter = nullptr;
  // Data-parallel gradient all-reduce (null: a single process). Must hold the same parameters.
  distributed::GradientReducer* reducer = nullptr;
  // Test hooks, as TrainConfig documents them (train_config.h).
  std::function<void(const batching::Batch&)> before_forward;
  std::function<void(int64_t step, at::Tensor& loss)> on_loss;
  std::function<void(int64_t step, const std::vector<at::Tensor>& params)> after_backward;
  // Called with each out-of-memory line as it happens (e.g. to print it).
  std::function<void(const std::string& line)> on_oom;
};

// One (sub-)batch of a step. `spec` is what `batch` was collated from (null: it cannot be split).
struct StepBatch {
  const batching::BatchSpec* spec = nullptr;
  batching::Batch batch;
};

struct StepResult {
  at::Tensor loss;  // the step's mean loss, 0-dim, on the device (not synced)
  // Whether the loss and gradients were finite; if not, the step changed no parameter and no
  // optimizer state. Read it when needed: it arrives on the host without a sync.
  StepOutcome outcome;
  double lr = 0;
  int64_t real_tokens = 0;  // of the step's batches
  int64_t token_slots = 0;
  int64_t sequences = 0;
  std::vector<std::string> oom_events;  // one line per out-of-memory split in this step
};

class TrainStep {
 public:
  // `params` are the optimizer's parameters, in its order.
  TrainStep(models::EncoderClassifier model, std::vector<at::Tensor> params, FusedAdamW& optimizer,
            GradScaler& scaler, c10::Device device, TrainStepOptions options);

  // Runs optimizer step `step` (0-based; for messages and hooks) over `batches` at learning rate
  // `lr`. The model must be in training mode.
  absl::StatusOr<StepResult> Run(int64_t step, double lr, const std::vector<StepBatch>& batches);

 private:
  struct Trained;  // what the (sub-)batches that ran held
  absl::Status ForwardBackwardAll(int64_t step, const std::vector<StepBatch>& batches,
                                  StepResult& result);
  absl::Status Attempt(int64_t step, const std::vector<StepBatch>& batches, int64_t sequences,
                       at::Tensor& step_loss, Trained& trained,
                       const batching::BatchSpec*& failing);
  void ForwardBackward(int64_t step, const batching::Batch& b, double weight, bool last,
                       at::Tensor& step_loss, Trained& trained);
  absl::Status ReduceAcrossRanks(at::Tensor& step_loss);
  void OptimizerStep(StepResult& result);

  models::EncoderClassifier model_;
  std::vector<at::Tensor> params_;
  FusedAdamW& optimizer_;
  GradScaler& scaler_;
  c10::Device device_;
  TrainStepOptions options_;
  batching::Collator collator_;
  // Pieces each batch of the current step is split into (absent: unsplit).
  std::map<const batching::BatchSpec*, int64_t> split_pieces_;
  // The sequences the step's weights divide by: this rank's, or all ranks' (data parallel).
  int64_t weight_sequences_ = 0;
};

}  // namespace padless::train

#endif  // PADLESS_TRAIN_TRAIN_STEP_H_
