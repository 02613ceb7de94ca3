// Evaluation sharded over the ranks and reduced (see sharded_evaluation.h).
#include "padless/eval/sharded_evaluation.h"

#include <ATen/ATen.h>

#include <utility>
#include <vector>

#include "padless/eval/corpus_scores.h"

namespace padless::eval {

namespace {

// Examples rank, rank + world, ... of `data`.
corpus::TokenizedCorpus Shard(const corpus::TokenizedCorpus& data, int rank, int world) {
  std::vector<size_t> mine;
  for (size_t i = rank; i < data.size(); i += world) mine.push_back(i);
  return data.Subset(mine);  // a mapped corpus stays mapped: each rank reads only its share
}

absl::StatusOr<CorpusScores> ScoreShard(models::EncoderClassifier& model,
                                        const corpus::TokenizedCorpus& shard,
                                        const batching::PlannerOptions& plan,
                                        const c10::Device& device, models::AmpMode amp, int64_t pad_id) {
  if (shard.empty()) return CorpusScores{};
  const bool was_training = model->is_training();
  model->eval();
  absl::StatusOr<CorpusScores> scores = ScoreCorpus(model, shard, plan, device, amp, pad_id);
  if (was_training) model->train();
  return scores;
}

}  // namespace

absl::StatusOr<EvalResult> EvaluateSharded(models::EncoderClassifier& model,
                                           const corpus::TokenizedCorpus& data,
                                           const batching::PlannerOptions& plan,
                                           const c10::Device& device, models::AmpMode amp, int64_t pad_id,
                                           distributed::ProcessGroup& group) {
  if (absl::Status check = CheckCorpus(data, model->config(), "eval data"); !check.ok()) {
    return check;
  }
  const int rank = group.rank(), world = group.world_size();
  absl::StatusOr<CorpusScores> mine =
      ScoreShard(model, Shard(data, rank, world), plan, device, amp, pad_id);
  if (!mine.ok()) return mine.status();
  // Every example's probabilities at its row, zero elsewhere: the sum over ranks is the gather.
  const int64_t classes = model->config().num_labels();
  at::Tensor probs = at::zeros({static_cast<int64_t>(data.size()), classes}, at::kFloat);
  for (size_t k = 0; k < mine->probabilities.size(); ++k) {
    probs[static_cast<int64_t>(rank + k * world)].copy_(at::tensor(mine->probabilities[k]));
  }
  at::Tensor sums =
      at::tensor({mine->loss_sum, static_cast<double>(mine->sequences),
                  static_cast<double>(mine->real_tokens), static_cast<double>(mine->token_slots)},
                 at::kDouble);
  at::Tensor on_device = probs.to(group.device()), sums_on_device = sums.to(group.device());
  if (absl::Status s = group.AllReduceSum(on_device); !s.ok()) return s;
  if (absl::Status s = group.AllReduceSum(sums_on_device); !s.ok()) return s;
  probs = on_device.cpu().contiguous();
  sums = sums_on_device.cpu();
  CorpusScores all;
  all.probabilities.resize(data.size());
  const float* p = probs.data_ptr<float>();
  for (size_t i = 0; i < data.size(); ++i) {
    all.probabilities[i].assign(p + i * classes, p + (i + 1) * classes);
  }
  all.loss_sum = sums[0].item<double>();
  all.sequences = static_cast<int64_t>(sums[1].item<double>());
  all.real_tokens = static_cast<int64_t>(sums[2].item<double>());
  all.token_slots = static_cast<int64_t>(sums[3].item<double>());
  return EvalResultFromScores(data, std::move(all), classes);
}

absl::StatusOr<EvalResult> EvaluateOnRanks(models::EncoderClassifier& model,
                                           const corpus::TokenizedCorpus& data,
                                           const batching::PlannerOptions& plan,
                                           const c10::Device& device, models::AmpMode amp, int64_t pad_id,
                                           const distributed::DataParallel& dp) {
  if (dp.enabled()) return EvaluateSharded(model, data, plan, device, amp, pad_id, *dp.group);
  return Evaluate(model, data, plan, device, amp, pad_id);
}

}  // namespace padless::eval
