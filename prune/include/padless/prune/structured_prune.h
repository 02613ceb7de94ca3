// Applying a PrunePlan: a new, smaller model whose attention and FFN matrices hold only the kept
// heads and neurons (the QKV rows and output-projection columns of each kept head, the FFN-in rows
// and FFN-out columns of each kept neuron: for ModernBERT's GeGLU both its value and its gate row,
// models/include/padless/models/unit_rows.h), every other parameter copied. Its config records what
// is gone (EncoderConfig::pruned_heads by original head index, layer_ffn), so that the model
// directory loads everywhere a model loads (training, evaluation, predict, serve, export-hf).
//
// Removing a unit gives the same outputs as masking it (its output projection columns zeroed):
// heads never mix before the output projection, FFN neurons never before theirs.
#ifndef PADLESS_PRUNE_STRUCTURED_PRUNE_H_
#define PADLESS_PRUNE_STRUCTURED_PRUNE_H_

#include "absl/status/statusor.h"
#include "padless/models/encoder.h"
#include "padless/models/encoder_config.h"
#include "padless/prune/prune_plan.h"

namespace padless::prune {

// The config of `config` after `plan`: pruned_heads grows by the removed heads' original indices,
// layer_ffn holds the kept counts (left empty when no FFN was ever pruned).
absl::StatusOr<models::EncoderConfig> PrunedConfig(const models::EncoderConfig& config,
                                                   const PrunePlan& plan);

// The pruned copy of `model`, on its device and in its dtype, with its runtime settings and
// train/eval mode; `model` is left unchanged. InvalidArgument for a plan that does not fit the
// model (layer count, an index out of range or repeated, a layer left without heads or neurons).
absl::StatusOr<models::EncoderClassifier> PruneModel(models::EncoderClassifier& model,
                                                     const PrunePlan& plan);

// Parameters of the model: what a pruning report compares.
int64_t ParameterCount(models::EncoderClassifier& model);

}  // namespace padless::prune

#endif  // PADLESS_PRUNE_STRUCTURED_PRUNE_H_
