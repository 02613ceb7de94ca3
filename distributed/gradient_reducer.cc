// Bucketed gradient all-reduce from post-accumulate-grad hooks (see gradient_reducer.h).
#include "padless/distributed/gradient_reducer.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"

namespace padless::distributed {

struct GradientReducer::Bucket {
  std::vector<size_t> params;  // parameter indices, in bucket order
  at::Tensor buffer;           // flat, comm_dtype, on the parameters' device
  int64_t ready = 0;           // parameters whose gradient is in `buffer`
  bool launched = false;
  PendingReduce pending;
};

// Calls back into the reducer once a parameter's gradient has been accumulated into .grad.
class GradientReducer::Hook : public torch::autograd::PostAccumulateGradHook {
 public:
  Hook(GradientReducer* reducer, size_t index) : reducer_(reducer), index_(index) {}
  void operator()(const torch::autograd::Variable& param) override {
    reducer_->OnGradientReady(index_, param.grad());
  }

 private:
  GradientReducer* reducer_;
  size_t index_;
};

GradientReducer::GradientReducer(std::shared_ptr<ProcessGroup> group,
                                 std::vector<at::Tensor> params, GradientReducerOptions options)
    : group_(std::move(group)), params_(std::move(params)), options_(options) {
  for (size_t i = 0; i < params_.size(); ++i) {
    torch::autograd::impl::set_post_acc_grad_hooks(params_[i], std::make_unique<Hook>(this, i));
  }
}

GradientReducer::~GradientReducer() {
  for (const at::Tensor& p : params_) torch::autograd::impl::set_post_acc_grad_hooks(p, nullptr);
}

// Buckets over the trainable parameters in reverse order; the same on every rank, since the
// parameters and their requires_grad flags are.
void GradientReducer::RebuildBucketsIfNeeded() {
  std::vector<bool> trainable;
  for (const at::Tensor& p : params_) trainable.push_back(p.requires_grad());
  if (trainable == trainable_ && !buckets_.empty()) return;
  trainable_ = trainable;
  buckets_.clear();
  bucket_of_.assign(params_.size(), -1);
  offset_of_.assign(params_.size(), 0);
  const int64_t elem = at::elementSize(options_.comm_dtype);
  int64_t numel = 0;
  for (size_t k = params_.size(); k-- > 0;) {
    if (!trainable_[k]) continue;
    if (buckets_.empty() || numel * elem >= options_.bucket_bytes) {
      if (!buckets_.empty()) {
        buckets_.back().buffer =
            at::empty({numel}, params_[k].options().dtype(options_.comm_dtype));
      }
      buckets_.emplace_back();
      numel = 0;
    }
    bucket_of_[k] = static_cast<int64_t>(buckets_.size()) - 1;
    offset_of_[k] = numel;
    buckets_.back().params.push_back(k);
    numel += params_[k].numel();
  }
  if (!buckets_.empty()) {
    buckets_.back().buffer =
        at::empty({numel}, params_[buckets_.back().params[0]].options().dtype(options_.comm_dtype));
  }
}

void GradientReducer::BeginBackward(bool last) {
  std::lock_guard<std::mutex> lock(mu_);
  if (last && !communicating_) {
    RebuildBucketsIfNeeded();
    ready_.assign(params_.size(), false);
    for (Bucket& b : buckets_) {
      b.ready = 0;
      b.launched = false;
      b.pending = PendingReduce();
    }
    next_bucket_ = 0;
    launched_in_backward_ = 0;
    hook_error_ = absl::OkStatus();
  }
  communicating_ = last;
}

void GradientReducer::OnGradientReady(size_t index, const at::Tensor& grad) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!communicating_ || bucket_of_[index] < 0 || ready_[index] || !grad.defined()) return;
  Bucket& b = buckets_[bucket_of_[index]];
  c10::AutoGradMode no_grad(false);
  b.buffer.narrow(0, offset_of_[index], grad.numel()).copy_(grad.reshape({-1}));
  ready_[index] = true;
  if (++b.ready == static_cast<int64_t>(b.params.size())) {
    const size_t before = next_bucket_;
    LaunchReadyBuckets();
    launched_in_backward_ += static_cast<int64_t>(next_bucket_ - before);
  }
}

// Launches buckets in index order while the next one is complete.
void GradientReducer::LaunchReadyBuckets() {
  while (next_bucket_ < buckets_.size() &&
         buckets_[next_bucket_].ready ==
             static_cast<int64_t>(buckets_[next_bucket_].params.size())) {
    Bucket& b = buckets_[next_bucket_++];
    try {
      b.pending = group_->AllReduceSumAsync(b.buffer);
      b.launched = true;
    } catch (const std::exception& e) {
      if (hook_error_.ok()) {
        hook_error_ = absl::UnavailableError(absl::StrCat("rank ", group_->rank(),
                                                          ": starting a gradient all-reduce ",
                                                          kPeerFailed, ": ", e.what()));
      }
      b.launched = true;  // counts as issued: the ranks are out of step either way
    }
  }
}

// A parameter whose hook did not fire in the last backward: its gradient from earlier micro-steps
// if it has one, else zero.
void GradientReducer::FillMissing(Bucket& b) {
  c10::AutoGradMode no_grad(false);
  for (size_t k : b.params) {
    if (ready_[k]) continue;
    at::Tensor slice = b.buffer.narrow(0, offset_of_[k], params_[k].numel());
    const at::Tensor& grad = params_[k].grad();
    if (grad.defined()) {
      slice.copy_(grad.reshape({-1}));
    } else {
      slice.zero_();
    }
    ready_[k] = true;
  }
  b.ready = static_cast<int64_t>(b.params.size());
}

absl::Status GradientReducer::Finish() {
  std::vector<int64_t> had_grad(params_.size(), 0);
  if (!communicating_) BeginBackward(true);  // no backward ran with `last`: reduce all now
  {
    std::lock_guard<std::mutex> lock(mu_);
    communicating_ = false;
    for (size_t i = 0; i < params_.size(); ++i) had_grad[i] = params_[i].grad().defined() ? 1 : 0;
    for (size_t b = next_bucket_; b < buckets_.size(); ++b) FillMissing(buckets_[b]);
    LaunchReadyBuckets();
  }
  const auto start = std::chrono::steady_clock::now();
  absl::Status status = hook_error_;
  for (Bucket& b : buckets_) {
    absl::Status s = b.pending.Wait();
    if (status.ok()) status = s;
  }
  last_wait_seconds_ =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!status.ok()) return status;
  absl::StatusOr<std::vector<int64_t>> any = group_->AllReduceSumHost(std::move(had_grad));
  if (!any.ok()) return any.status();
  return WriteBack(*any);
}

// Writes the sums back into .grad for every parameter that has a gradient on some rank.
absl::Status GradientReducer::WriteBack(const std::vector<int64_t>& had_grad) {
  c10::AutoGradMode no_grad(false);
  for (size_t k = 0; k < params_.size(); ++k) {
    if (bucket_of_[k] < 0 || had_grad[k] == 0) continue;
    at::Tensor& p = params_[k];
    const at::Tensor slice =
        buckets_[bucket_of_[k]].buffer.narrow(0, offset_of_[k], p.numel()).view(p.sizes());
    if (!p.grad().defined()) p.mutable_grad() = at::zeros_like(p);
    p.mutable_grad().copy_(slice);
  }
  return absl::OkStatus();
}

int64_t GradientReducer::buckets() const { return static_cast<int64_t>(buckets_.size()); }

bool GradientReducer::Reset() {
  std::lock_guard<std::mutex> lock(mu_);
  bool started = false;
  for (const Bucket& b : buckets_) started = started || b.launched;
  communicating_ = false;
  for (Bucket& b : buckets_) {
    b.ready = 0;
    b.launched = false;
    b.pending = PendingReduce();
  }
  next_bucket_ = 0;
  if (!ready_.empty()) ready_.assign(params_.size(), false);
  return started;
}

}  // namespace padless::distributed
