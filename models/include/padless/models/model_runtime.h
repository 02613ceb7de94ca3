// ModelRuntime: how an EncoderClassifier runs, as opposed to what it is (EncoderConfig, weights).
// None of these settings changes the model's function: they choose kernels and trade memory for
// recompute. Set once, as one value, by whoever owns the run (the trainer from TrainConfig, a
// benchmark or a profiler per configuration), before the model's steps run.
#ifndef PADLESS_MODELS_MODEL_RUNTIME_H_
#define PADLESS_MODELS_MODEL_RUNTIME_H_

#include <memory>

#include "padless/models/attention.h"
#include "padless/models/checkpoint_policy.h"
#include "padless/models/fp8_scaling.h"

namespace padless::models {

// Lean activations (LayerSpec::lean): kAuto turns them on when a checkpoint policy is set, so
// checkpointing buys the most memory and the fastest configuration stays fast.
enum class ActivationMemory { kAuto, kLean, kFast };

struct ModelRuntime {
  // kAuto: picked per batch from its layout, the device and the autocast state.
  AttentionBackend attention = AttentionBackend::kAuto;
  // Training steps on varlen batches (post-LN) run each layer as one fused function with a
  // hand-written backward (fused_layer.h); false keeps per-op autograd everywhere.
  bool fused_layers = true;
  ActivationMemory activation_memory = ActivationMemory::kAuto;
  // Whether dense attention (padded and packed rows) may use cuDNN's SDPA kernel. cuDNN builds an
  // execution plan for every new shape, and dense batches change shape from batch to batch: on
  // the H200 (BERT-base, token-budget buckets, bf16) 172.5k real tokens/s with it, 329.5k
  // without. false steers those calls to the flash or memory-efficient kernels.
  bool dense_attention_cudnn = false;
  // Under [CLS] pooling, the fused inference forward (varlen, no autograd) computes its last layer
  // for each sequence's first token alone: that layer's other rows feed nothing, and the first
  // tokens' queries still attend over every key. About 1/L of an L-layer encoder's work; the same
  // logits within rounding (the GEMMs see fewer rows). false: every row, to measure the saving.
  // Training steps compute every row: the same for the generic last layer measured no faster on
  // the H200 (643.7-648.4k against 643.1-643.9k real tokens/s, BERT-base bf16; c1de0fd).
  bool last_layer_rows_only = true;
  CheckpointPolicy checkpoint = CheckpointPolicy::None();
  // Non-null: the fused layers run their GEMMs in FP8 with these scales, layer i's four GEMMs
  // being 4i .. 4i + 3 (fused_layer.h). TrainStep sets it for AmpMode::kFp8 and advances it after
  // every optimizer step; training checkpoints keep its state. Layers the generic path runs (the
  // attn/ffn checkpoint scopes, pre-LN models) and evaluation stay in the compute dtype.
  std::shared_ptr<Fp8Scaling> fp8 = nullptr;
};

}  // namespace padless::models

#endif  // PADLESS_MODELS_MODEL_RUNTIME_H_
