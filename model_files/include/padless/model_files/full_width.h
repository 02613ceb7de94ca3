// The two forms of a pruned model (issue 45). padless keeps a pruned model small: its layers hold
// only the kept heads and FFN neurons (EncoderConfig::pruned_heads, layer_ffn). Hugging Face
// checkpoints are written at the original width instead, with every removed unit's weights zero:
// transformers 5 dropped config.json's `pruned_heads` and builds every layer at full width (so
// does 4.x when the field is absent), and one intermediate_size then holds any per-layer FFN
// widths.
//
// The zeros give the same outputs: a removed head's Q, K and V rows (weights and biases) are zero,
// so its attention scores are uniform over zero values and its output is zero, and its columns of
// the attention output projection are zero as well; a removed FFN neuron's FFN-in row and bias are
// zero, so its activation is act(0) = 0 for GELU, tanh-GELU and ReLU, and its FFN-out column is
// zero. ModernBERT has the same form: a removed GeGLU neuron's value row and gate row are both zero
// (act(0) x 0 = 0; the rows are models/include/padless/models/unit_rows.h's), transformers'
// ModernBERT has no pruned_heads at all, and the biases its config leaves out stay absent. Such a
// unit also stays zero in training (every gradient that reaches it is zero), so dropping it again
// on import is exact for inference and for fine-tuning alike.
#ifndef PADLESS_MODEL_FILES_FULL_WIDTH_H_
#define PADLESS_MODEL_FILES_FULL_WIDTH_H_

#include "absl/status/statusor.h"
#include "padless/models/encoder.h"

namespace padless::model_files {

// `model` at its original width (no pruned_heads, no layer_ffn): each kept head at its original
// index, the kept FFN neurons first and the removed ones after them, every removed unit's weights
// zero, every other parameter copied. On `model`'s device, in its dtype and train/eval mode;
// `model` is left unchanged (and returned as it is when it is not pruned). A ModernBERT layer's
// kept neurons keep their value rows first and their gate rows from the original width on.
absl::StatusOr<models::EncoderClassifier> FullWidthModel(models::EncoderClassifier& model);

// `model` without the heads and FFN neurons whose weights are all zero (Q, K, V rows and biases
// and the output-projection columns of a head; FFN-in row and bias and FFN-out column of a
// neuron; ModernBERT's value and gate rows, and only the biases its config has): the pruned model
// that FullWidthModel widened, with the pruning record and kept units' order it had. Removed heads
// add to pruned_heads by original index; layer_ffn records the widths when any layer loses a
// neuron (or already had it). A layer whose units are all zero keeps its
// first one. Returns `model` itself when nothing is zero.
absl::StatusOr<models::EncoderClassifier> DropZeroUnits(models::EncoderClassifier& model);

}  // namespace padless::model_files

#endif  // PADLESS_MODEL_FILES_FULL_WIDTH_H_
