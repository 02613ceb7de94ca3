#include "padless/prune/unit_importance.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <memory>
#include <optional>

#include "absl/strings/str_cat.h"
#include "padless/batching/loader.h"
#include "padless/models/encoder_layer.h"

namespace padless::prune {

namespace {

// sum_i W[i, j] dL/dW[i, j] over groups of `group` consecutive columns j, absolute, on the host.
std::vector<double> ColumnGroupMagnitudes(const at::Tensor& weight, int64_t group) {
  const at::Tensor& grad = weight.grad();
  const int64_t units = weight.size(1) / group;
  if (!grad.defined()) return std::vector<double>(units, 0.0);
  const at::Tensor per_column = (weight.detach().to(at::kDouble) * grad.to(at::kDouble)).sum(0);
  const at::Tensor per_unit = per_column.view({units, group}).sum(1).abs().cpu().contiguous();
  const double* p = per_unit.data_ptr<double>();
  return std::vector<double>(p, p + units);
}

void Accumulate(const UnitImportance& batch, UnitImportance* total) {
  if (total->heads.empty()) {
    *total = batch;
    return;
  }
  for (size_t l = 0; l < batch.heads.size(); ++l) {
    for (size_t h = 0; h < batch.heads[l].size(); ++h) total->heads[l][h] += batch.heads[l][h];
    for (size_t n = 0; n < batch.ffn[l].size(); ++n) total->ffn[l][n] += batch.ffn[l][n];
  }
}

void Divide(UnitImportance* total, int64_t batches) {
  for (auto* lists : {&total->heads, &total->ffn}) {
    for (std::vector<double>& layer : *lists) {
      for (double& v : layer) v /= static_cast<double>(batches);
    }
  }
  total->batches = batches;
}

// Restores a module's train/eval mode when it goes out of scope.
class ModeRestorer {
 public:
  explicit ModeRestorer(models::EncoderClassifier& model)
      : model_(model), training_(model->is_training()) {}
  ~ModeRestorer() { model_->train(training_); }
  ModeRestorer(const ModeRestorer&) = delete;
  ModeRestorer& operator=(const ModeRestorer&) = delete;

 private:
  models::EncoderClassifier& model_;
  bool training_;
};

}  // namespace

UnitImportance MaskGradientMagnitudes(models::EncoderClassifier& model) {
  UnitImportance u;
  const int64_t head_dim = model->config().head_dim();
  for (const at::TensorList w : model->LayerWeights()) {
    u.heads.push_back(ColumnGroupMagnitudes(w[models::kOutWeight], head_dim));
    u.ffn.push_back(ColumnGroupMagnitudes(w[models::kFfnOutWeight], 1));
  }
  u.batches = 1;
  return u;
}

absl::StatusOr<UnitImportance> ScoreUnitImportance(models::EncoderClassifier& model,
                                                   const corpus::TokenizedCorpus& corpus,
                                                   const batching::PlannerOptions& plan_options,
                                                   const c10::Device& device, models::AmpMode amp,
                                                   int64_t pad_id) {
  batching::PlannerOptions opts = plan_options;
  opts.drop_last(false);
  absl::StatusOr<std::vector<batching::BatchSpec>> plan =
      batching::Planner(opts).Plan(corpus.Lengths(), 0);
  if (!plan.ok()) return plan.status();
  batching::LoaderOptions lopts;
  lopts.device = device;
  lopts.collator.pad_id = pad_id;
  absl::StatusOr<std::unique_ptr<batching::Loader>> loader =
      batching::Loader::Create(&corpus, *plan, lopts);
  if (!loader.ok()) return loader.status();

  ModeRestorer restore_mode(model);
  model->eval();  // Michel et al. score the model as it predicts: no dropout
  at::AutoGradMode grad(true);
  model->zero_grad();
  UnitImportance total;
  int64_t batches = 0;
  try {
    for (;;) {
      absl::StatusOr<std::optional<batching::Batch>> next = (*loader)->Next();
      if (!next.ok()) return next.status();
      if (!next->has_value()) break;
      at::Tensor logits;
      {
        models::AutocastGuard autocast(device.type(), amp);
        logits = model->forward(**next);
      }
      models::ClassificationLoss(logits, (*next)->labels).backward();
      Accumulate(MaskGradientMagnitudes(model), &total);
      model->zero_grad();
      ++batches;
    }
  } catch (const c10::Error& e) {
    model->zero_grad();
    return absl::InternalError(
        absl::StrCat("importance scoring failed: ", e.what_without_backtrace()));
  }
  if (batches == 0) return absl::InvalidArgumentError("importance scoring: the corpus is empty");
  Divide(&total, batches);
  return total;
}

}  // namespace padless::prune
