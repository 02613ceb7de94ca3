#include "device_worker.h"

#include <ATen/ATen.h>
#include <c10/core/Event.h>
#include <c10/core/InferenceMode.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <c10/util/Exception.h>

#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace padless::serve::internal {

DeviceWorker::DeviceWorker(models::EncoderClassifierImpl* model, const EmbeddingHead* embedding,
                           c10::Device device, models::AmpMode amp,
                           std::unique_ptr<GraphedForward> graphs, WorkQueue<FormedBatch>* input,
                           Emit emit)
    : model_(model),
      embedding_(embedding),
      device_(device),
      amp_(amp),
      graphs_(std::move(graphs)),
      input_(input),
      emit_(std::move(emit)) {
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

BatchScores DeviceWorker::Score(const batching::Batch& batch, ScoredBatch* out) {
  if (graphs_ != nullptr) {
    std::vector<int64_t> lengths;
    lengths.reserve(out->owners.size());
    for (const SequenceOwner& o : out->owners) lengths.push_back(o.tokens);
    if (std::optional<GraphedForward::Result> r = graphs_->Run(batch, lengths)) {
      out->graphed = true;
      return *std::move(r);
    }
  }
  return ScoreBatch(*model_, batch, device_.type(), amp_);
}

void DeviceWorker::Embed(const batching::Batch& batch, ScoredBatch* out) {
  bool token_states = false;
  for (const SequenceOwner& o : out->owners) {
    token_states = token_states || o.state->requests[o.index].token_embeddings;
  }
  BatchEmbeddings e = EmbedBatch(*model_, batch, *embedding_, device_.type(), amp_, token_states);
  out->embeddings = std::move(e.embeddings);
  out->token_states = std::move(e.token_states);
}

ScoredBatch DeviceWorker::Launch(FormedBatch formed) {
  ScoredBatch out;
  out.owners = std::move(formed.owners);
  out.tokens = formed.batch.real_tokens;
  out.launched = Clock::now();
  try {
    // Inference mode, not just no-grad: no version counters or views tracking, no autograd graph.
    c10::InferenceMode inference;
    if (embedding_ != nullptr) {
      Embed(formed.batch, &out);
    } else {
      BatchScores scores = Score(formed.batch, &out);
      out.scores = std::move(scores.logits);
      out.probabilities = std::move(scores.probabilities);
    }
    at::Tensor* outputs[] = {&out.scores, &out.probabilities, &out.embeddings, &out.token_states};
    const c10::Device computed_on = (embedding_ != nullptr ? out.embeddings : out.scores).device();
    if (!computed_on.is_cuda()) {
      for (at::Tensor* t : outputs) {
        if (t->defined()) *t = t->contiguous();
      }
      return out;
    }
    // Copied out before the next batch's launch: a graph's outputs are overwritten by its replay.
    for (at::Tensor* t : outputs) {
      if (t->defined()) *t = CopyToPinnedHost(*t);
    }
    // The completion thread waits on this event, not this thread on the device.
    const c10::impl::VirtualGuardImpl guard(device_.type());
    out.ready = std::make_unique<c10::Event>(device_.type());
    out.ready->record(guard.getStream(computed_on));
  } catch (const c10::Error& e) {
    out.error = absl::InternalError(absl::StrCat("inference failed: ", e.what_without_backtrace()));
  }
  return out;
}

}  // namespace padless::serve::internal
