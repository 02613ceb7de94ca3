#include "padless/models/unit_rows.h"

#include <ATen/ATen.h>

namespace padless::models {

namespace {

// Indices of `units` (each `width` consecutive rows) in `blocks` stacked blocks of `block_units`
// units: HeadRows and FfnInRows (width 1) are this one layout.
at::Tensor StackedUnitRows(const std::vector<int64_t>& units, int64_t block_units, int64_t width,
                           int64_t blocks) {
  std::vector<int64_t> rows;
  rows.reserve(units.size() * static_cast<size_t>(width * blocks));
  for (int64_t b = 0; b < blocks; ++b) {
    for (int64_t u : units) {
      for (int64_t d = 0; d < width; ++d) rows.push_back((b * block_units + u) * width + d);
    }
  }
  return at::tensor(rows, at::kLong);
}

}  // namespace

at::Tensor HeadRows(const std::vector<int64_t>& heads, int64_t layer_heads, int64_t head_dim,
                    int64_t blocks) {
  return StackedUnitRows(heads, layer_heads, head_dim, blocks);
}

at::Tensor FfnInRows(const std::vector<int64_t>& neurons, int64_t layer_ffn, bool gated) {
  return StackedUnitRows(neurons, layer_ffn, /*width=*/1, gated ? 2 : 1);
}

}  // namespace padless::models
