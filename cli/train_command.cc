// padless train: fine-tune a transformer classifier on a labeled file. The work is in
// padless/train/ (RunTrainJob); train_job_flags.h maps the flags onto it, and this file runs it
// and prints. eval and predict are eval_command.cc and predict_command.cc.
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli_util.h"
#include "distributed_train.h"
#include "metrics_json_flag.h"
#include "nlohmann/json.hpp"
#include "padless/train/memory_planning.h"
#include "padless/train/train_job.h"
#include "padless/train/trainer.h"
#include "path_checks.h"
#include "subcommand.h"
#include "train_job_flags.h"

namespace padless::cli {
namespace {

nlohmann::json TrainMetricsJson(const train::TrainJobResult& r) {
  const train::TrainResult& t = r.train;
  nlohmann::json metrics = {{"steps", t.steps},
                            {"padding_efficiency", t.padding_efficiency},
                            {"real_tokens_per_s", t.real_tokens_per_s},
                            {"peak_allocated_bytes", t.peak_allocated_bytes},
                            {"peak_reserved_bytes", t.peak_reserved_bytes},
                            {"train_seconds", t.train_seconds},
                            {"step_seconds", t.step_seconds},
                            {"step_tokens_per_s", t.step_tokens_per_s},
                            {"device", r.device.str()},
                            {"oom_events", t.oom_events.size()},
                            {"skipped_steps", t.skipped_steps},
                            {"stopped_early", t.stopped_early}};
  if (t.memory_plan) {
    const train::MemoryPlan& mp = *t.memory_plan;
    metrics["memory_plan"] = {
        {"budget_bytes", mp.budget_bytes}, {"target_bytes", mp.target_bytes},
        {"max_tokens", mp.max_tokens},     {"batch_size", mp.batch_size},
        {"row_len", mp.row_len},           {"measured_peak_bytes", mp.measured_peak_bytes}};
  }
  metrics["accuracy"] = r.dev ? nlohmann::json(r.dev->metrics.accuracy) : nlohmann::json();
  metrics["macro_f1"] = r.dev ? nlohmann::json(r.dev->metrics.macro_f1) : nlohmann::json();
  if (r.dev) metrics["dev_examples"] = r.dev->metrics.examples;
  metrics["distributed"] = {{"world_size", t.world_size},
                            {"nodes", t.nodes},
                            {"backend", t.backend},
                            {"rank_max_tokens", t.rank_max_tokens},
                            {"rank_batch_size", t.rank_batch_size}};
  return metrics;
}

void PrintTrainResult(const train::TrainJobResult& r) {
  const train::TrainResult& t = r.train;
  if (t.memory_plan) absl::PrintF("%s\n", t.memory_plan->Summary());
  if (r.dev) {
    absl::PrintF("dev accuracy %.4f  macro-F1 %.4f  (%d examples)\n", r.dev->metrics.accuracy,
                 r.dev->metrics.macro_f1, r.dev->metrics.examples);
  }
  absl::PrintF(
      "padding efficiency %.1f%%  real tokens/s %.0f (steps alone %.0f)  peak memory %s "
      "(reserved %s)  %.1f s on %s\n",
      100 * t.padding_efficiency, t.real_tokens_per_s, t.step_tokens_per_s,
      absl::StrFormat("%.1f MiB", t.peak_allocated_bytes / 1048576.0),
      absl::StrFormat("%.1f MiB", t.peak_reserved_bytes / 1048576.0), t.train_seconds,
      r.device.str());
  for (const std::string& e : t.oom_events) absl::PrintF("recovered: %s\n", e);
  if (t.skipped_steps > 0) {
    absl::PrintF("skipped %d optimizer steps with an inf/NaN loss or gradient\n", t.skipped_steps);
  }
  absl::PrintF("model written to %s\n", r.model_dir);
}

// Every path train reads or writes, checked before any work (nothing is written before).
std::vector<PathFlag> TrainPaths(const train::TrainJobOptions& job) {
  return {{"data", job.data, PathUse::kInputTextFile},
          {"dev", job.dev, PathUse::kInputTextFile},
          {"init_from", job.init_from, PathUse::kInputDirectory, {"config.json"}},
          {"out", job.out, PathUse::kOutputDirectory},
          {"token_cache", job.token_cache, PathUse::kOutputFile},
          {"metrics_json", absl::GetFlag(FLAGS_metrics_json), PathUse::kOutputFile}};
}

// The work is train::RunTrainJob; this maps the flags onto it and prints the result.
int RunTrain(const std::vector<std::string>& args) {
  const char* kCmd = "train";
  if (!args.empty()) return Usage(kCmd, absl::StrCat("unexpected argument '", args[0], "'"));
  absl::StatusOr<train::TrainJobOptions> job = TrainJobFromFlags();
  if (!job.ok()) return Usage(kCmd, job.status().message());
  if (absl::Status s = CheckDistributedFlags(); !s.ok()) return Usage(kCmd, s.message());
  if (absl::Status s = CheckPathFlags(TrainPaths(*job)); !s.ok()) return Fail(kCmd, s);
  if (std::optional<int> launched = RunLocalWorkersIfAsked()) return *launched;
  if (absl::Status s = JoinDataParallelJob(*job); !s.ok()) {
    return absl::IsInvalidArgument(s) ? Usage(kCmd, s.message()) : Fail(kCmd, s);
  }
  absl::StatusOr<train::TrainJobResult> result = train::RunTrainJob(*job);
  if (!result.ok()) return Fail(kCmd, result.status());
  if (job->train.data_parallel().rank() != 0) return kExitOk;  // rank 0 reports
  PrintTrainResult(*result);
  if (absl::Status s = WriteMetricsJson(TrainMetricsJson(*result)); !s.ok()) return Fail(kCmd, s);
  return kExitOk;
}

}  // namespace

const Subcommand kTrainCommand = {
    "train",
    "train a transformer classifier on a labeled file",
    "usage: padless train --data FILE [--dev FILE | --dev-fraction F] --out DIR [--preset "
    "tiny|small|base|modernbert-base]\n  [--batching packed|varlen|buckets|padded|...] [--max-len N] [--max-tokens "
    "N]"
    " [--amp off|bf16|fp16|fp8]\n  [--checkpoint none|all|every:K] [--epochs N] [--seed S] "
    "[--vocab-size N] [--metrics-json PATH]\n  [--memory-budget 40GiB]\n\nTrains a SentencePiece "
    "tokenizer when DIR has none, "
    "then the encoder; writes DIR/{config.json,model.safetensors,tokenizer.model,labels.json},\n"
    "DIR/train_log.csv and DIR/checkpoints/. The training file is tokenized once into\n"
    "--token-cache (default DIR/train_tokens.cache), which every rank memory-maps.\n\n"
    "Defaults, chosen so that `padless train --data TRAIN --dev DEV --out DIR` works on short and\n"
    "long texts alike (each is printed at the start):\n"
    "  vocabulary: at most --vocab-size pieces; a corpus that supports fewer gets fewer.\n"
    "  batches: --max-tokens = --batch-size (32) x the mean training length in tokens, at least\n"
    "    the longest sequence, at most 16384, so short texts still get many optimizer steps per\n"
    "    epoch; the schedule line says how many.\n"
    "  epochs: 3, or more (at most 20) when 3 give fewer than 250 optimizer steps.\n"
    "  learning rate and warmup: by model origin (tiny 5e-4, small 1e-4, base 5e-5,\n"
    "    modernbert-base 5e-5 from scratch; 3e-5 fine-tuning --init-from); a training loss still\n"
    "    at chance level after 200 steps (and twice the warmup) is warned about.\n"
    "With a dev set (--dev or --dev-fraction) the saved model is the best dev evaluation's\n"
    "weights, not the last step's.",
    {"data",
     "dev",
     "dev_fraction",
     "out",
     "token_cache",
     "preset",
     "batching",
     "max_len",
     "max_tokens",
     "batch_size",
     "amp",
     "checkpoint",
     "epochs",
     "max_steps",
     "seed",
     "vocab_size",
     "metrics_json",
     "lr",
     "weight_decay",
     "warmup",
     "lr_schedule",
     "grad_accum",
     "clip_norm",
     "dropout",
     "patience",
     "eval_every",
     "init_from",
     "freeze_embeddings",
     "freeze_layers",
     "unfreeze_every",
     "resume",
     "checkpoint_every",
     "keep_checkpoints",
     "attention",
     "layers",
     "memory_budget",
     "max_nonfinite_steps",
     "device",
     "threads",
     "quiet",
     "format",
     "text_field",
     "text_pair_field",
     "label_field",
     "skip_bad_rows",
     "truncation",
     "pair_truncation",
     "head_fraction",
     kDistributedFlags[0],
     kDistributedFlags[1],
     kDistributedFlags[2],
     kDistributedFlags[3],
     kDistributedFlags[4],
     kDistributedFlags[5],
     kDistributedFlags[6]},
    RunTrain};

}  // namespace padless::cli
