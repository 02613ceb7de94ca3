#include "completion.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace padless::serve::internal {
namespace {

Classification Mean(const RequestHandle::State::Sums& sums) {
  Classification c;
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

Completion::Completion(int64_t num_labels, WorkQueue<ScoredBatch>* input, Finished finished)
    : num_labels_(num_labels), input_(input), finished_(std::move(finished)) {
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

}  // namespace padless::serve::internal
