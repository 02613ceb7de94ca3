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

// A graph replay of the batch whose sequences belong to `owners`; nullopt when there are no
// graphs or none holds the batch.
std::optional<GraphedForward::Result> Replay(GraphedForward* graphs, const batching::Batch& batch,
                                             const std::vector<SequenceOwner>& owners) {
  if (graphs == nullptr) return std::nullopt;
  std::vector<int64_t> lengths;
  lengths.reserve(owners.size());
  for (const SequenceOwner& o : owners) lengths.push_back(o.tokens);
  return graphs->Run(batch, lengths);
}

}  // namespace

GraphedForward::Forward DeviceWorker::CapturableForward(models::EncoderClassifierImpl* model,
                                                        const EmbeddingHead* embedding,
                                                        c10::DeviceType device,
                                                        models::AmpMode amp) {
  if (embedding == nullptr) {
    return [model, device, amp](const batching::Batch& batch) {
      BatchScores s = ScoreBatch(*model, batch, device, amp);
      return std::vector<at::Tensor>{std::move(s.logits), std::move(s.probabilities)};
    };
  }
  return [model, head = *embedding, device, amp](const batching::Batch& batch) {
    return std::vector<at::Tensor>{
        EmbedBatch(*model, batch, head, device, amp, /*token_states=*/false).embeddings};
  };
}

BatchScores DeviceWorker::Score(const batching::Batch& batch, ScoredBatch* out) {
  if (std::optional<GraphedForward::Result> r = Replay(graphs_.get(), batch, out->owners)) {
    out->graphed = true;
    return BatchScores{(*r)[0], (*r)[1]};  // CapturableForward's order
  }
  return ScoreBatch(*model_, batch, device_.type(), amp_);
}

void DeviceWorker::Embed(const batching::Batch& batch, ScoredBatch* out) {
  bool token_states = false;
  for (const SequenceOwner& o : out->owners) {
    token_states = token_states || o.state->requests[o.index].token_embeddings;
  }
  if (!token_states) {
    if (std::optional<GraphedForward::Result> r = Replay(graphs_.get(), batch, out->owners)) {
      out->graphed = true;
      out->embeddings = (*r)[0];
      return;
    }
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
