// Test helper: the same random sequences laid out as a padded batch, as packed rows and as a flat
// varlen batch, built directly as tensors (independent of the batching library), so that the
// encoder's layouts can be compared on identical inputs.
#ifndef PADLESS_TESTS_MODELS_BATCH_FACTORY_H_
#define PADLESS_TESTS_MODELS_BATCH_FACTORY_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "padless/batching/batch.h"
#include "padless/models/encoder.h"
#include "padless/models/model_runtime.h"

namespace padless::models::testing {

struct Sequences {
  std::vector<std::vector<int64_t>> tokens;
  std::vector<int64_t> labels;
};

// n sequences of lengths in [min_len, max_len], token ids in [1, vocab), labels in [0, classes).
Sequences RandomSequences(uint64_t seed, int64_t n, int64_t min_len, int64_t max_len, int64_t vocab,
                          int64_t classes);

// One sequence per row, right-padded with 0 to the longest.
batching::Batch MakePadded(const Sequences& s);
// Sequences in order, next-fit into rows of `row_length` slots; the rest of each row is padding.
batching::Batch MakePacked(const Sequences& s, int64_t row_length);
// All tokens in one flat [T] tensor.
batching::Batch MakeVarlen(const Sequences& s);

// Every defined tensor of `b` moved to `device` (tests do not depend on the loader).
batching::Batch ToDevice(const batching::Batch& b, const at::Device& device);

// One training step's results, to compare one layout or backend with another: the logits, the
// classification loss and every parameter's gradient (undefined where it has none).
struct StepResult {
  at::Tensor logits;
  at::Tensor loss;
  std::vector<std::pair<std::string, at::Tensor>> grads;
};

// Zeroes the gradients, runs the forward on `b` and the classification loss's backward.
StepResult RunStep(EncoderClassifier& model, const batching::Batch& b);

// The largest absolute difference, computed in double.
double MaxDiff(const at::Tensor& a, const at::Tensor& b);

// Expects equal shapes and logits, loss and every gradient within `tol` (gtest assertions).
void ExpectSameStep(const StepResult& a, const StepResult& b, double tol);

// Applies `change` to a copy of `model`'s runtime and sets it: tests switch one setting at a time,
// e.g. ChangeRuntime(model, [](ModelRuntime& r) { r.fused_layers = false; }).
template <typename Change>
void ChangeRuntime(EncoderClassifier& model, Change change) {
  ModelRuntime runtime = model->runtime();
  change(runtime);
  model->set_runtime(runtime);
}

}  // namespace padless::models::testing

#endif  // PADLESS_TESTS_MODELS_BATCH_FACTORY_H_
