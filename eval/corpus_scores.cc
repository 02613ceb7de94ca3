#include "padless/eval/corpus_scores.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "padless/batching/loader.h"

namespace padless::eval {

using batching::Batch;
using batching::BatchSpec;

absl::StatusOr<CorpusScores> ScoreCorpus(models::EncoderClassifier& model,
                                         const corpus::TokenizedCorpus& corpus,
                                         const batching::PlannerOptions& plan_options,
                                         const c10::Device& device, models::AmpMode amp, int64_t pad_id,
                                         int workers) {
  batching::PlannerOptions opts = plan_options;
  opts.drop_last(false);
  const std::vector<int64_t> lengths = corpus.Lengths();
  absl::StatusOr<std::vector<BatchSpec>> plan = batching::Planner(opts).Plan(lengths, 0);
  if (!plan.ok()) return plan.status();
  batching::LoaderOptions lopts;
  lopts.num_workers = workers;
  lopts.device = device;
  lopts.collator.pad_id = pad_id;
  absl::StatusOr<std::unique_ptr<batching::Loader>> loader =
      batching::Loader::Create(&corpus, *plan, lopts);
  if (!loader.ok()) return loader.status();

  const int64_t classes = model->config().num_labels();
  at::AutoGradMode no_grad(false);
  std::vector<double> prob_sum(corpus.size() * classes, 0.0);
  std::vector<int64_t> windows(corpus.size(), 0);
  CorpusScores r;
  try {
    for (;;) {
      absl::StatusOr<std::optional<Batch>> next = (*loader)->Next();
      if (!next.ok()) return next.status();
      if (!next->has_value()) break;
      const Batch& b = **next;
      at::Tensor logits;
      {
        models::AutocastGuard autocast(device.type(), amp);
        logits = model->forward(b).to(at::kFloat);
      }
      at::Tensor loss = at::cross_entropy_loss(logits, b.labels, {}, at::Reduction::Sum);
      at::Tensor probs = at::softmax(logits, 1).to(at::kCPU, at::kDouble).contiguous();
      at::Tensor ids = b.example_ids.to(at::kCPU).contiguous();
      r.loss_sum += loss.item<double>();
      const double* p = probs.data_ptr<double>();
      const int64_t* e = ids.data_ptr<int64_t>();
      for (int64_t i = 0; i < ids.size(0); ++i) {
        ++windows[e[i]];
        for (int64_t c = 0; c < classes; ++c) prob_sum[e[i] * classes + c] += p[i * classes + c];
      }
      r.sequences += ids.size(0);
      r.real_tokens += b.real_tokens;
      r.token_slots += b.real_tokens + b.padded_tokens;
    }
  } catch (const c10::Error& e) {
    return absl::InternalError(absl::StrCat("classification failed: ", e.what_without_backtrace()));
  }
  r.probabilities.resize(corpus.size());
  for (size_t i = 0; i < corpus.size(); ++i) {
    if (windows[i] == 0) {
      return absl::InternalError(absl::StrCat("example ", i, " was in no batch"));
    }
    r.probabilities[i].resize(classes);
    for (int64_t c = 0; c < classes; ++c) {
      r.probabilities[i][c] = static_cast<float>(prob_sum[i * classes + c] / windows[i]);
    }
  }
  return r;
}

}  // namespace padless::eval
