// GradientReducer: data-parallel gradient averaging that overlaps backward, as Python's DDP does,
// built from autograd post-accumulate-grad hooks and c10d all-reduces (LibTorch has no C++ DDP).
// The trainable parameters are cut into buckets of about `bucket_bytes`, in reverse parameter
// order (the order backward produces gradients in). During the step's last backward each
// parameter's hook copies its accumulated gradient into its bucket (cast to `comm_dtype`); a
// bucket whose gradients are all there is all-reduced at once, buckets always in index order, so
// that every rank issues the same collectives in the same order. Earlier backwards of a step
// (gradient-accumulation micro-steps) communicate nothing.
//
// Finish() reduces what backward did not (parameters whose hook did not fire count as zero),
// waits, and writes the sums back into .grad. The caller weights each loss by its share of the
// global batch, so the sum is the gradient of the global mean loss; since every rank then holds the
// same gradients, the global norm, clipping and the inf/NaN decision agree on all ranks.
// A parameter that has no gradient on any rank keeps none (the optimizer skips it, as it would
// alone); that takes one small host all-reduce per step.
//
// The trainable set (requires_grad) may change between steps (gradual unfreezing); buckets are
// rebuilt then, identically on every rank. Not thread-safe, apart from the hooks themselves.
#ifndef PADLESS_DISTRIBUTED_GRADIENT_REDUCER_H_
#define PADLESS_DISTRIBUTED_GRADIENT_REDUCER_H_

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/status/status.h"
#include "padless/distributed/process_group.h"

namespace padless::distributed {

struct GradientReducerOptions {
  int64_t bucket_bytes = 25 << 20;  // DDP's default bucket size
  // What travels: kFloat, or kBFloat16 (half the bytes; the sum is rounded to bf16 once).
  at::ScalarType comm_dtype = at::kFloat;
};

class GradientReducer {
 public:
  GradientReducer(std::shared_ptr<ProcessGroup> group, std::vector<at::Tensor> params,
                  GradientReducerOptions options = {});
  ~GradientReducer();  // removes the hooks
  GradientReducer(const GradientReducer&) = delete;
  GradientReducer& operator=(const GradientReducer&) = delete;

  // Before each backward of a step: `last` when it is the step's last (its gradients are reduced
  // as they become ready).
  void BeginBackward(bool last);
  // After the step's last backward: see the header comment. Errors: a failed or timed-out
  // collective (a peer died), naming this rank.
  absl::Status Finish();
  // Forgets the current step after a failed backward. Returns whether a collective had already
  // started; the ranks are then out of step and the run cannot go on.
  bool Reset();

  ProcessGroup& group() { return *group_; }
  // Seconds the last Finish() spent waiting for all-reduces (the part backward did not hide; on
  // CUDA only the host's share, which is ~0 since NCCL waits on the stream).
  double last_wait_seconds() const { return last_wait_seconds_; }
  // Buckets of the last step, and how many of them started during backward.
  int64_t buckets() const;
  int64_t launched_in_backward() const { return launched_in_backward_; }

 private:
  struct Bucket;
  class Hook;
  void RebuildBucketsIfNeeded();
  void OnGradientReady(size_t index, const at::Tensor& grad);
  void LaunchReadyBuckets();
  void FillMissing(Bucket& bucket);
  absl::Status WriteBack(const std::vector<int64_t>& had_grad);

  std::shared_ptr<ProcessGroup> group_;
  std::vector<at::Tensor> params_;
  GradientReducerOptions options_;
  std::vector<Bucket> buckets_;
  std::vector<bool> trainable_;     // the set the buckets were built for
  std::vector<int64_t> bucket_of_;  // per parameter; -1: not trainable
  std::vector<int64_t> offset_of_;  // within its bucket
  std::vector<bool> ready_;         // gradient copied into its bucket in this step
  size_t next_bucket_ = 0;          // the next bucket to launch
  bool communicating_ = false;
  int64_t launched_in_backward_ = 0;
  double last_wait_seconds_ = 0;
  absl::Status hook_error_;
  std::mutex mu_;  // hooks may run on autograd's device threads
};

}  // namespace padless::distributed

#endif  // PADLESS_DISTRIBUTED_GRADIENT_REDUCER_H_
