// The flags of `padless train` (beside the shared ones of common_flags.h, data_flags.h,
// device_flag.h, attention_flag.h and distributed_train.h) and their one mapping onto
// train::TrainJobOptions.
#include "train_job_flags.h"

#include <optional>
#include <string>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "attention_flag.h"
#include "common_flags.h"
#include "data_flags.h"
#include "device_flag.h"
#include "padless/corpus/corpus_reader.h"
#include "padless/cuda/memory/memory_budget.h"
#include "padless/models/attention.h"
#include "padless/models/autocast.h"
#include "padless/models/checkpoint_policy.h"
#include "padless/models/model_runtime.h"
#include "padless/tokenize/tokenizer.h"
#include "padless/train/lr_schedule.h"
#include "padless/train/train_config.h"
#include "padless/train/train_job.h"

ABSL_FLAG(std::string, token_cache, "",
          "train: the tokenized --data, memory-mapped: built once, reused while the data, "
          "tokenizer and encoding options match, mapped by every rank (default: "
          "--out/train_tokens.cache)");
ABSL_FLAG(double, dev_fraction, 0.0,
          "train: hold out this share of --data as the dev set when --dev is not given");
ABSL_FLAG(std::string, preset, "",
          "train: encoder preset: tiny, small, base or modernbert-base (default: tiny, or the "
          "--init-from model's; a preset that differs from the --init-from model is an error)");
ABSL_FLAG(std::string, checkpoint, "none",
          "train: activation checkpointing: none, all, every:K, keep_last:K, selective, ffn or "
          "attn (the last three optionally /every:K or /keep_last:K)");
ABSL_FLAG(std::optional<int64_t>, epochs, std::nullopt,
          "train: epochs (empty: at least 3, more when 3 give fewer than 250 optimizer steps, at "
          "most 20)");
ABSL_FLAG(int64_t, max_steps, 0, "train: stop after this many optimizer steps (0: epochs decide)");
ABSL_FLAG(double, weight_decay, 0.01, "train: AdamW weight decay");
ABSL_FLAG(std::optional<double>, warmup, std::nullopt,
          "train: share of the steps spent warming up the learning rate (empty: by model "
          "origin: tiny 0.06, small, base and modernbert-base 0.1, --init-from 0.06)");
ABSL_FLAG(std::string, lr_schedule, "linear",
          "train: decay after warmup: linear, cosine, constant");
ABSL_FLAG(int64_t, grad_accum, 1, "train: batches per optimizer step");
ABSL_FLAG(double, clip_norm, 1.0, "train: gradient clipping by global norm (0: off)");
ABSL_FLAG(std::optional<double>, dropout, std::nullopt,
          "train: dropout and attention dropout; default: an imported model's own, else 0.1");
ABSL_FLAG(int64_t, patience, 0,
          "train: evaluations without dev improvement before stopping (0: off)");
ABSL_FLAG(int64_t, eval_every, 0, "train: optimizer steps between dev evaluations (0: per epoch)");
ABSL_FLAG(std::string, init_from, "",
          "train: start from this trained padless model directory's weights, or from a Hugging "
          "Face BERT/RoBERTa/XLM-R/DistilBERT/ModernBERT directory (config.json + "
          "model.safetensors; lr defaults to 3e-5 then)");
ABSL_FLAG(bool, freeze_embeddings, false, "train: do not train the embeddings");
ABSL_FLAG(int64_t, freeze_layers, 0, "train: freeze the first K encoder layers");
ABSL_FLAG(int64_t, unfreeze_every, 0, "train: thaw one frozen layer every N epochs (0: never)");
ABSL_FLAG(bool, resume, false, "train: continue from the latest checkpoint in DIR/checkpoints");
ABSL_FLAG(int64_t, checkpoint_every, 0,
          "train: optimizer steps between checkpoints (0: per epoch)");
ABSL_FLAG(int64_t, keep_checkpoints, 2, "train: checkpoints to keep");
ABSL_FLAG(std::string, layers, "fused",
          "train: encoder layer implementation for varlen batches: fused (one autograd function "
          "per layer with a hand-written backward; less memory, faster) or generic (per-op "
          "autograd)");
ABSL_FLAG(int64_t, max_nonfinite_steps, 50,
          "train: stop with an error after this many optimizer steps in a row with an inf/NaN "
          "loss or gradient (each one is skipped and counted; 0: never stop)");
ABSL_FLAG(std::string, memory_budget, "",
          "train: device memory the whole run may reserve, e.g. 40GiB (empty: off): the CUDA "
          "caching allocator's reserved bytes (cached blocks and fragmentation included; the CUDA "
          "context is not) are capped at it through training, evaluation and checkpoint writes, "
          "the best weights are kept on the host, and probe steps choose the token budget or "
          "batch size that fits");

namespace padless::cli {
namespace {

namespace tok = padless::tokenize;
namespace models = padless::models;

absl::StatusOr<int64_t> MemoryBudgetFromFlag() {
  const std::string text = absl::GetFlag(FLAGS_memory_budget);
  if (text.empty()) return 0;
  absl::StatusOr<int64_t> bytes = cuda::ParseByteSize(text);
  if (!bytes.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--memory-budget: ", bytes.status().message()));
  }
  if (*bytes <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--memory-budget must be > 0, got '", text, "'"));
  }
  return *bytes;
}

// The model's runtime settings: --attention, --layers and --checkpoint; errors are usage errors.
absl::StatusOr<models::ModelRuntime> RuntimeFromFlags() {
  models::ModelRuntime runtime;
  absl::StatusOr<models::AttentionBackend> attention = AttentionFlag();
  if (!attention.ok()) return attention.status();
  runtime.attention = *attention;
  const std::string layers = absl::GetFlag(FLAGS_layers);
  if (layers != "fused" && layers != "generic") {
    return absl::InvalidArgumentError(
        absl::StrCat("--layers: unknown '", layers, "' (expected fused or generic)"));
  }
  runtime.fused_layers = layers == "fused";
  absl::StatusOr<models::CheckpointPolicy> policy =
      models::CheckpointPolicy::Parse(absl::GetFlag(FLAGS_checkpoint));
  if (!policy.ok()) return policy.status();
  runtime.checkpoint = *policy;
  return runtime;
}

// The optimization, precision and checkpointing flags; errors are usage errors.
absl::StatusOr<train::TrainConfig> TrainConfigFromFlags() {
  absl::StatusOr<models::AmpMode> amp = cli::AmpFlag();
  if (!amp.ok()) return amp.status();
  absl::StatusOr<models::ModelRuntime> runtime = RuntimeFromFlags();
  if (!runtime.ok()) return runtime.status();
  absl::StatusOr<train::LrDecay> decay = train::ParseLrDecay(absl::GetFlag(FLAGS_lr_schedule));
  if (!decay.ok()) return decay.status();
  absl::StatusOr<int64_t> memory_budget = MemoryBudgetFromFlag();
  if (!memory_budget.ok()) return memory_budget.status();
  return train::TrainConfig()
      .max_steps(absl::GetFlag(FLAGS_max_steps))
      .weight_decay(absl::GetFlag(FLAGS_weight_decay))
      .decay(*decay)
      .grad_accum(absl::GetFlag(FLAGS_grad_accum))
      .clip_norm(absl::GetFlag(FLAGS_clip_norm))
      .amp(*amp)
      .runtime(*runtime)
      .freeze_embeddings(absl::GetFlag(FLAGS_freeze_embeddings))
      .freeze_layers(absl::GetFlag(FLAGS_freeze_layers))
      .unfreeze_every(absl::GetFlag(FLAGS_unfreeze_every))
      .eval_every(absl::GetFlag(FLAGS_eval_every))
      .patience(absl::GetFlag(FLAGS_patience))
      .checkpoint_every(absl::GetFlag(FLAGS_checkpoint_every))
      .keep_checkpoints(absl::GetFlag(FLAGS_keep_checkpoints))
      .resume(absl::GetFlag(FLAGS_resume))
      .seed(absl::GetFlag(FLAGS_seed))
      .memory_budget_bytes(*memory_budget)
      .max_nonfinite_steps(absl::GetFlag(FLAGS_max_nonfinite_steps));
}

}  // namespace

absl::StatusOr<train::TrainJobOptions> TrainJobFromFlags() {
  train::TrainJobOptions job;
  job.data = absl::GetFlag(FLAGS_data);
  job.dev = absl::GetFlag(FLAGS_dev);
  job.dev_fraction = absl::GetFlag(FLAGS_dev_fraction);
  job.out = absl::GetFlag(FLAGS_out);
  job.token_cache = absl::GetFlag(FLAGS_token_cache);
  job.max_len = absl::GetFlag(FLAGS_max_len);
  absl::StatusOr<corpus::ReaderOptions> reader = ReaderOptionsFromFlags(/*require_label=*/true);
  if (!reader.ok()) return reader.status();
  job.reader = *reader;
  absl::StatusOr<tok::EncodeOptions> encode = EncodeOptionsFromFlags();
  if (!encode.ok()) return encode.status();
  job.encode = *encode;
  // --max-tokens is checked by ValidateTrainJobOptions (the job may choose it from the data).
  if (absl::Status s = CheckSizeFlags(kBatchSize | kThreads); !s.ok()) return s;
  job.threads = absl::GetFlag(FLAGS_threads);
  job.vocab_size = absl::GetFlag(FLAGS_vocab_size);
  job.preset = absl::GetFlag(FLAGS_preset);
  job.init_from = absl::GetFlag(FLAGS_init_from);
  job.dropout = absl::GetFlag(FLAGS_dropout);
  job.batching = absl::GetFlag(FLAGS_batching);
  job.batch_size = absl::GetFlag(FLAGS_batch_size);
  const std::optional<int64_t> max_tokens = absl::GetFlag(FLAGS_max_tokens);
  if (max_tokens && *max_tokens < 1) {
    return absl::InvalidArgumentError(absl::StrCat("--max-tokens must be >= 1, got ", *max_tokens));
  }
  job.max_tokens = max_tokens.value_or(0);  // 0: from the corpus
  job.lr = absl::GetFlag(FLAGS_lr);
  job.epochs = absl::GetFlag(FLAGS_epochs);
  job.warmup_fraction = absl::GetFlag(FLAGS_warmup);
  job.quiet = absl::GetFlag(FLAGS_quiet);
  absl::StatusOr<c10::Device> device = cli::DeviceFlag();
  if (!device.ok()) return device.status();
  job.device = *device;
  absl::StatusOr<train::TrainConfig> train = TrainConfigFromFlags();
  if (!train.ok()) return train.status();
  job.train = *train;
  if (absl::Status s = train::ValidateTrainJobOptions(job); !s.ok()) return s;
  return job;
}

}  // namespace padless::cli
