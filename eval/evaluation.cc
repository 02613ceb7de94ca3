// Evaluation of a classifier on a corpus, and the corpus-fits-the-model check (see evaluation.h).
#include "padless/eval/evaluation.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "padless/eval/corpus_scores.h"

namespace padless::eval {

using corpus::TokenizedCorpus;

absl::Status CheckCorpus(const TokenizedCorpus& corpus, const models::EncoderConfig& config,
                         const char* name) {
  if (corpus.empty()) return absl::InvalidArgumentError(absl::StrCat(name, ": no examples"));
  for (size_t i = 0; i < corpus.size(); ++i) {
    if (corpus.label(i) < 0 || corpus.label(i) >= config.num_labels()) {
      return absl::InvalidArgumentError(absl::StrCat(name, ": example ", i, " has label id ",
                                                     corpus.label(i), ", outside [0, ",
                                                     config.num_labels(), ")"));
    }
  }
  // The range, not every token: a mapped corpus records it, so the check reads no token (a rank
  // would otherwise page in the whole corpus, not its shard).
  const corpus::TokenIdRange ids = corpus.token_id_range();
  for (int32_t id : {ids.min, ids.max}) {
    if (ids.min <= ids.max && (id < 0 || id >= config.vocab_size())) {
      return absl::InvalidArgumentError(absl::StrCat(
          name, ": token id ", id, " outside the model's vocabulary of ", config.vocab_size()));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<EvalResult> Evaluate(models::EncoderClassifier& model, const TokenizedCorpus& data,
                                    const batching::PlannerOptions& plan_options,
                                    const c10::Device& device, models::AmpMode amp, int64_t pad_id) {
  absl::Status check = CheckCorpus(data, model->config(), "eval data");
  if (!check.ok()) return check;
  const bool was_training = model->is_training();
  model->eval();
  absl::StatusOr<CorpusScores> scores = ScoreCorpus(model, data, plan_options, device, amp, pad_id);
  if (was_training) model->train();
  if (!scores.ok()) return scores.status();
  return EvalResultFromScores(data, std::move(*scores), model->config().num_labels());
}

EvalResult EvalResultFromScores(const TokenizedCorpus& data, CorpusScores scores, int64_t classes) {
  EvalResult r;
  std::vector<int64_t> gold(data.size());
  r.predictions.resize(data.size());
  for (size_t i = 0; i < data.size(); ++i) {
    gold[i] = data.label(i);
    const std::vector<float>& p = scores.probabilities[i];
    r.predictions[i] = std::max_element(p.begin(), p.end()) - p.begin();
  }
  r.probabilities = std::move(scores.probabilities);
  r.metrics = ComputeMetrics(gold, r.predictions, classes);
  r.loss = scores.sequences > 0 ? scores.loss_sum / scores.sequences : 0.0;
  r.real_tokens = scores.real_tokens;
  r.token_slots = scores.token_slots;
  return r;
}

}  // namespace padless::eval
