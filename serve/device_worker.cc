#include "device_worker.h"

#include <ATen/ATen.h>
#include <c10/core/Event.h>
#include <c10/core/InferenceMode.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <c10/util/Exception.h>

#include <memory>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace padless::serve::internal {

DeviceWorker::DeviceWorker(models::EncoderClassifierImpl* model, c10::Device device,
                           models::AmpMode amp, WorkQueue<FormedBatch>* input, Emit emit)
    : model_(model), device_(device), amp_(amp), input_(input), emit_(std::move(emit)) {
  thread_ = std::thread([this] { Run(); });
}

DeviceWorker::~DeviceWorker() { Join(); }

void DeviceWorker::Join() {
  if (thread_.joinable()) thread_.join();
}

void DeviceWorker::Run() {
  while (std::optional<FormedBatch> formed = input_->Pop()) emit_(Launch(std::move(*formed)));
}

namespace {

// A pinned host copy of a device tensor, issued asynchronously on the current stream.
at::Tensor CopyToPinnedHost(const at::Tensor& t) {
  at::Tensor host =
      at::empty(t.sizes(), at::TensorOptions().dtype(t.scalar_type()).pinned_memory(true));
  host.copy_(t, /*non_blocking=*/true);
  return host;
}

}  // namespace

ScoredBatch DeviceWorker::Launch(FormedBatch formed) {
  ScoredBatch out;
  out.owners = std::move(formed.owners);
  out.tokens = formed.batch.real_tokens;
  out.launched = Clock::now();
  try {
    // Inference mode, not just no-grad: no version counters or views tracking, no autograd graph.
    c10::InferenceMode inference;
    at::Tensor logits;
    {
      models::AutocastGuard autocast(device_.type(), amp_);
      logits = model_->forward(formed.batch);
    }
    logits = logits.to(at::kFloat);
    at::Tensor probabilities = at::softmax(logits, /*dim=*/1);
    if (!logits.is_cuda()) {
      out.scores = logits.contiguous();
      out.probabilities = probabilities.contiguous();
      return out;
    }
    out.scores = CopyToPinnedHost(logits);
    out.probabilities = CopyToPinnedHost(probabilities);
    // The completion thread waits on this event, not this thread on the device.
    const c10::impl::VirtualGuardImpl guard(device_.type());
    out.ready = std::make_unique<c10::Event>(device_.type());
    out.ready->record(guard.getStream(logits.device()));
  } catch (const c10::Error& e) {
    out.error = absl::InternalError(absl::StrCat("inference failed: ", e.what_without_backtrace()));
  }
  return out;
}

}  // namespace padless::serve::internal
