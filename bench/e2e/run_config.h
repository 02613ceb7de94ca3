// The configurations the end-to-end benchmark trains: a batching strategy, a precision and a
// checkpointing policy, how each strategy maps onto the batching planner under one budget of
// token slots per step, and the FLOP count that turns real tokens into MFU.
#ifndef PADLESS_BENCH_E2E_RUN_CONFIG_H_
#define PADLESS_BENCH_E2E_RUN_CONFIG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "padless/batching/batch_spec.h"
#include "padless/batching/planner.h"
#include "padless/models/encoder_config.h"

namespace padless::bench::e2e {

enum class Strategy {
  kPadToMax,            // random batches of b sequences, every row padded to max_len
  kPadLongest,          // random batches of b sequences, padded to the batch's longest
  kHfGroupByLength,     // HF group_by_length: megabatches of 50*b sorted by length
  kTokenBudgetBuckets,  // length buckets, batches of at most max_tokens slots per bucket
  kPackedDense,         // packed rows of max_len, block-diagonal mask, dense SDPA
  kPackedVarlen,        // flat batches of real tokens only, varlen (flash) attention
};

// kFp8: bf16 with the encoder's GEMMs in FP8 (`padless train --amp fp8`).
enum class Precision { kFp32, kBf16, kFp8 };

std::string StrategyName(Strategy s);
absl::StatusOr<Strategy> ParseStrategy(absl::string_view name);
std::vector<Strategy> AllStrategies();
std::string PrecisionName(Precision p);
absl::StatusOr<Precision> ParsePrecision(absl::string_view name);

struct RunConfig {
  Strategy strategy = Strategy::kPadToMax;
  Precision precision = Precision::kBf16;
  // Activation checkpointing, as the canonical text of a models::CheckpointPolicy: "none",
  // "all", "ffn", "attn", "every:K", ...
  std::string checkpoint = "none";
  // Per-op autograd layers instead of the fused layer (models::ModelRuntime::fused_layers =
  // false); the fused one only runs varlen batches, so this changes only the varlen strategy.
  bool generic_layers = false;

  bool checkpointed() const { return checkpoint != "none"; }
  // "packed_varlen/bf16/ckpt_all", "+/generic_layers": unique, used in logs, the CSV and the plots.
  std::string Name() const;
  bool operator==(const RunConfig& o) const {
    return strategy == o.strategy && precision == o.precision && checkpoint == o.checkpoint &&
           generic_layers == o.generic_layers;
  }
};

// The cross product strategies x precisions x checkpoint policies (models::CheckpointPolicy
// texts), then each of `fp32_extra`
// in fp32 without checkpointing (the short GPU run's fp32 reference points), without duplicates.
// Lists are comma-separated; "all" selects every strategy. Then packed_varlen in bf16 with generic
// layers for each policy of `generic_layer_checkpoints` (the fused layer's baseline). Errors name
// the flag and the item.
absl::StatusOr<std::vector<RunConfig>> ExpandConfigs(
    absl::string_view strategies, absl::string_view precisions, absl::string_view checkpoints,
    absl::string_view fp32_extra, absl::string_view generic_layer_checkpoints = "");

// Planner options that give `strategy` a budget of `budget` token slots per step: padded
// strategies take b = budget / max_len sequences, budgeted and packed ones max_tokens = budget.
// The options themselves come from batching::LookupStrategy (the registry's e2e entries).
batching::PlannerOptions PlannerOptionsFor(Strategy strategy, int64_t budget, int64_t max_len,
                                           uint64_t seed);

// Training FLOPs of the real tokens of `specs`, counted as the issue defines MFU: 3 x forward,
// forward = 2 x matmul parameters per token + 4 x (keys the token attends to) x (the layer's
// attention width) per layer per token: all L keys of its sequence in a global layer, at most
// 2w + 1 in a layer with a +-w sliding window (ModernBERT). Padding contributes nothing. Pruned
// layers differ: each counts its own heads and FFN neurons; a GeGLU FFN (ModernBERT) counts its
// in-projection's value and gate halves.
struct ModelShape {
  // Sum over layers of 4 x hidden x a + (2 or 3) x hidden x f (QKV, output, FFN in, with GeGLU's
  // gate, and out), a the layer's attention width (heads x head_dim, hidden when unpruned), f its
  // FFN width.
  int64_t matmul_params = 0;
  int64_t attention_width = 0;  // sum of a over the global layers
  // Sum of a over the windowed layers, which all share one half window (0 when there are none).
  int64_t windowed_attention_width = 0;
  int64_t half_window = 0;
  static ModelShape Of(const models::EncoderConfig& config);
  int64_t MatmulParams() const { return matmul_params; }
};
// Forward FLOPs of one sequence of `len` tokens: 2 x the matmul parameters per token, plus the
// attention scores and their weighted sum (4 x keys x a per token and layer).
double ForwardFlops(int64_t len, const ModelShape& shape);
// 3 x the forward FLOPs (forward and backward) of every sequence of `specs`.
double TrainingFlops(const std::vector<batching::BatchSpec>& specs, const ModelShape& shape);

}  // namespace padless::bench::e2e

#endif  // PADLESS_BENCH_E2E_RUN_CONFIG_H_
