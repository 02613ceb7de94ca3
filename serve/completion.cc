#include "completion.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace padless::serve::internal {
namespace {

EngineResult Mean(const RequestHandle::State::Sums& sums) {
  EngineResult c;
  const double windows = static_cast<double>(std::max<int64_t>(sums.windows, 1));
  for (size_t k = 0; k < sums.probabilities.size(); ++k) {
    c.probabilities.push_back(static_cast<float>(sums.probabilities[k] / windows));
    c.scores.push_back(static_cast<float>(sums.scores[k] / windows));
  }
  c.label_id =
      std::max_element(c.probabilities.begin(), c.probabilities.end()) - c.probabilities.begin();
  c.tokens = sums.tokens;
  return c;
}

}  // namespace

Completion::Completion(int64_t num_labels, bool embeddings, WorkQueue<ScoredBatch>* input,
                       Finished finished)
    : num_labels_(num_labels),
      embeddings_(embeddings),
      input_(input),
      finished_(std::move(finished)) {
  thread_ = std::thread([this] { Run(); });
}

Completion::~Completion() { Join(); }

void Completion::Join() {
  if (thread_.joinable()) thread_.join();
}

void Completion::Run() {
  while (std::optional<ScoredBatch> batch = input_->Pop()) {
    Complete(*batch);
    BatchStats stats;
    stats.sequences = static_cast<int64_t>(batch->owners.size());
    stats.tokens = batch->tokens;
    stats.device_time = Clock::now() - batch->launched;
    stats.graphed = batch->graphed;
    finished_(stats);
  }
}

void Completion::Complete(ScoredBatch& batch) {
  absl::Status error = batch.error;
  if (error.ok() && batch.ready != nullptr) {
    try {
      batch.ready->synchronize();
    } catch (const c10::Error& e) {
      error = absl::InternalError(absl::StrCat("inference failed: ", e.what_without_backtrace()));
    }
  }
  if (!error.ok()) {
    for (const SequenceOwner& o : batch.owners) o.state->Finish(o.index, error);
    return;
  }
  if (embeddings_) return CompleteEmbeddings(batch);
  const float* probabilities = batch.probabilities.data_ptr<float>();
  const float* scores = batch.scores.data_ptr<float>();
  for (size_t j = 0; j < batch.owners.size(); ++j) {
    AddSequence(batch.owners[j], probabilities + j * num_labels_, scores + j * num_labels_);
  }
}

void Completion::AddSequence(const SequenceOwner& owner, const float* probabilities,
                             const float* scores) {
  RequestHandle::State::Sums& sums = owner.state->sums[owner.index];
  if (sums.probabilities.empty()) {
    sums.probabilities.assign(num_labels_, 0.0);
    sums.scores.assign(num_labels_, 0.0);
  }
  for (int64_t k = 0; k < num_labels_; ++k) {
    sums.probabilities[k] += probabilities[k];
    sums.scores[k] += scores[k];
  }
  sums.tokens += owner.tokens;
  if (++sums.done == sums.windows) owner.state->Finish(owner.index, Mean(sums));
}

void Completion::CompleteEmbeddings(const ScoredBatch& batch) {
  const int64_t dimension = batch.embeddings.size(1);
  const float* embeddings = batch.embeddings.data_ptr<float>();
  const bool has_tokens = batch.token_states.defined();
  const int64_t hidden = has_tokens ? batch.token_states.size(1) : 0;
  const float* token_states = has_tokens ? batch.token_states.data_ptr<float>() : nullptr;
  int64_t first_token = 0;  // the sequence's first row in token_states (the batch's order)
  for (size_t j = 0; j < batch.owners.size(); ++j) {
    const SequenceOwner& o = batch.owners[j];
    EngineResult result;
    const float* row = embeddings + static_cast<int64_t>(j) * dimension;
    result.embedding.assign(row, row + dimension);
    if (has_tokens && o.state->requests[o.index].token_embeddings) {
      const float* first = token_states + first_token * hidden;
      result.token_embeddings.assign(first, first + o.tokens * hidden);
    }
    result.tokens = o.tokens;
    first_token += o.tokens;
    o.state->Finish(o.index, std::move(result));
  }
}

}  // namespace padless::serve::internal
