// Classification metrics for evaluation and early stopping: accuracy and macro-F1 from gold and
// predicted label ids.
#ifndef PADLESS_EVAL_METRICS_H_
#define PADLESS_EVAL_METRICS_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"

namespace padless::eval {

struct ClassificationMetrics {
  int64_t examples = 0;
  double accuracy = 0;
  // Mean of the per-class F1 over the classes that occur in the gold labels or the predictions
  // (as scikit-learn's f1_score(average="macro") does).
  double macro_f1 = 0;
  std::vector<double> f1;  // per class id, 0 for classes that never occur
};

// `gold` and `predicted` hold ids in [0, num_labels) and have the same size.
ClassificationMetrics ComputeMetrics(absl::Span<const int64_t> gold,
                                     absl::Span<const int64_t> predicted, int64_t num_labels);

}  // namespace padless::eval

#endif  // PADLESS_EVAL_METRICS_H_
