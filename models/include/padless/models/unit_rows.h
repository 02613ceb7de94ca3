// Where a layer's prunable units sit in its weights (encoder_layer.h's LayerWeight order): the rows
// of an attention head in the stacked QKV weight and its columns of the attention output
// projection, and the rows of an FFN neuron in the FFN-in weight. Structured pruning (prune/)
// selects these rows to narrow a layer; the full-width export form (model_files/full_width.h)
// scatters them back to widen it. One definition for both, so that they cannot disagree.
#ifndef PADLESS_MODELS_UNIT_ROWS_H_
#define PADLESS_MODELS_UNIT_ROWS_H_

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "padless/models/encoder_config.h"

namespace padless::models {

// Row (or column) indices (int64, on the CPU) of `heads`, in their order, in `blocks` stacked
// blocks of `layer_heads` heads of `head_dim` rows each: blocks 3 for the QKV weight and bias
// (Q, K, V), 1 for the attention output projection's columns. Block by block, so that the
// selected rows form the same Q, K, V stack of the selected heads.
at::Tensor HeadRows(const std::vector<int64_t>& heads, int64_t layer_heads, int64_t head_dim,
                    int64_t blocks);

// Row indices of `neurons`, in their order, in the FFN-in weight and bias of a layer of
// `layer_ffn` neurons. BERT's layer holds one row per neuron; ModernBERT's GeGLU layer (`gated`)
// holds layer_ffn value rows, then layer_ffn gate rows, so that neuron n is rows n and
// layer_ffn + n: the value rows of `neurons` come first, then their gate rows.
at::Tensor FfnInRows(const std::vector<int64_t>& neurons, int64_t layer_ffn, bool gated);

// Whether `config`'s FFN-in weight holds value and gate rows (ModernBERT's GeGLU).
inline bool GatedFfn(const EncoderConfig& config) { return config.modernbert(); }

}  // namespace padless::models

#endif  // PADLESS_MODELS_UNIT_ROWS_H_
