// Shared by the fused-layer tests: random layer weights, a reference attention context, one
// layer's forward and gradients, and the comparisons between two runs.
#ifndef PADLESS_TESTS_MODELS_LAYER_TEST_UTIL_H_
#define PADLESS_TESTS_MODELS_LAYER_TEST_UTIL_H_

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "padless/models/attention.h"
#include "padless/models/encoder_layer.h"
#include "padless/models/fused_layer.h"

namespace padless::models::testing {

inline constexpr int64_t kHidden = 32;
inline constexpr int64_t kHeads = 4;

// A layer (kHidden, kHeads, FFN 64) with weights away from their initial values (non-trivial
// LayerNorm gains and biases), each requiring grad.
std::vector<at::Tensor> RandomLayerWeights(at::ScalarType dtype);

// The per-sequence reference attention over sequences of these lengths.
AttentionContext ReferenceContext(const std::vector<int64_t>& lengths);

struct LayerRun {
  at::Tensor out;
  std::vector<at::Tensor> grads;  // x, then the weights (undefined where none)
};

// out and d(sum(out * probe)) / d(x, weights); `fused` picks the implementation.
// `compute`: the fused layer's precomputed compute-dtype weights (null: it casts them itself);
// `fp8`: its FP8 GEMMs.
LayerRun RunLayer(bool fused, FusedSaving saving, const at::Tensor& x0,
                  const std::vector<at::Tensor>& w, const LayerSpec& spec,
                  const AttentionContext& ctx, const at::Tensor& probe,
                  const std::vector<at::Tensor>* compute = nullptr,
                  const FusedLayerFp8& fp8 = {});

// Outputs within `tol`, each gradient within `tol` times max(1, its largest magnitude).
void ExpectClose(const LayerRun& want, const LayerRun& got, double tol);

// Relative L2 distance, the measure for tensors computed along different roundings.
double Relative(const at::Tensor& want, const at::Tensor& got);

}  // namespace padless::models::testing

#endif  // PADLESS_TESTS_MODELS_LAYER_TEST_UTIL_H_
