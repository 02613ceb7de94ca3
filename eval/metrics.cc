#include "padless/eval/metrics.h"

namespace padless::eval {

ClassificationMetrics ComputeMetrics(absl::Span<const int64_t> gold,
                                     absl::Span<const int64_t> predicted, int64_t num_labels) {
  ClassificationMetrics m;
  m.examples = static_cast<int64_t>(gold.size());
  std::vector<int64_t> tp(num_labels, 0), gold_count(num_labels, 0), pred_count(num_labels, 0);
  int64_t correct = 0;
  for (size_t i = 0; i < gold.size(); ++i) {
    ++gold_count[gold[i]];
    ++pred_count[predicted[i]];
    if (gold[i] == predicted[i]) {
      ++tp[gold[i]];
      ++correct;
    }
  }
  m.accuracy = gold.empty() ? 0.0 : static_cast<double>(correct) / gold.size();
  m.f1.assign(num_labels, 0.0);
  int64_t classes = 0;
  double sum = 0;
  for (int64_t c = 0; c < num_labels; ++c) {
    if (gold_count[c] == 0 && pred_count[c] == 0) continue;
    ++classes;
    // F1 = 2 tp / (2 tp + fp + fn) = 2 tp / (gold + predicted).
    m.f1[c] = 2.0 * tp[c] / static_cast<double>(gold_count[c] + pred_count[c]);
    sum += m.f1[c];
  }
  m.macro_f1 = classes == 0 ? 0.0 : sum / classes;
  return m;
}

}  // namespace padless::eval
