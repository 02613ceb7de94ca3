// padless train | eval | predict: fine-tune a transformer classifier on a labeled file, evaluate a
// trained model directory, and classify texts with it. The work is in padless/models/ (RunTrainJob,
// Evaluate, TextClassifier); this file maps flags onto them and prints.
#include <ATen/Context.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli_util.h"
#include "device_flag.h"
#include "common_flags.h"
#include "data_flags.h"
#include "distributed_train.h"
#include "flag_spelling.h"
#include "nlohmann/json.hpp"
#include "padless/batching/strategy_registry.h"
#include "padless/cuda/memory/memory_budget.h"
#include "padless/models/attention.h"
#include "padless/models/autocast.h"
#include "padless/models/checkpoint_policy.h"
#include "padless/serve/text_classifier.h"
#include "padless/train/lr_schedule.h"
#include "padless/model_files/model_io.h"
#include "padless/models/model_runtime.h"
#include "padless/train/train_job.h"
#include "padless/train/trainer.h"
#include "padless/base/atomic_file_writer.h"
#include "padless/tokenize/corpus_reader.h"
#include "padless/tokenize/tokenizer.h"
#include "path_checks.h"
#include "subcommand.h"

ABSL_FLAG(std::string, token_cache, "",
          "train: the tokenized --data, memory-mapped: built once, reused while the data, "
          "tokenizer and encoding options match, mapped by every rank (default: "
          "--out/train_tokens.cache)");
ABSL_FLAG(double, dev_fraction, 0.0,
          "train: hold out this share of --data as the dev set when --dev is not given");
ABSL_FLAG(std::string, preset, "",
          "train: encoder preset: tiny, small or base (default: tiny, or the --init-from model's; "
          "a preset that differs from the --init-from model is an error)");
ABSL_FLAG(std::string, batching, "packed",
          "train: batching strategy: packed, varlen, buckets, padded, or any bench-padding name");
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
          "origin: tiny 0.06, small and base 0.1, --init-from 0.06)");
ABSL_FLAG(std::string, lr_schedule, "linear",
          "train: decay after warmup: linear, cosine, constant");
ABSL_FLAG(int64_t, grad_accum, 1, "train: batches per optimizer step");
ABSL_FLAG(double, clip_norm, 1.0, "train: gradient clipping by global norm (0: off)");
ABSL_FLAG(double, dropout, 0.1, "train: dropout of a new model");
ABSL_FLAG(int64_t, patience, 0,
          "train: evaluations without dev improvement before stopping (0: off)");
ABSL_FLAG(int64_t, eval_every, 0, "train: optimizer steps between dev evaluations (0: per epoch)");
ABSL_FLAG(std::string, init_from, "",
          "train: start from this trained padless model directory's weights, or from a Hugging "
          "Face BERT/RoBERTa/XLM-R/DistilBERT directory (config.json + model.safetensors; "
          "lr defaults to 3e-5 then)");
ABSL_FLAG(bool, freeze_embeddings, false, "train: do not train the embeddings");
ABSL_FLAG(int64_t, freeze_layers, 0, "train: freeze the first K encoder layers");
ABSL_FLAG(int64_t, unfreeze_every, 0, "train: thaw one frozen layer every N epochs (0: never)");
ABSL_FLAG(bool, resume, false, "train: continue from the latest checkpoint in DIR/checkpoints");
ABSL_FLAG(int64_t, checkpoint_every, 0,
          "train: optimizer steps between checkpoints (0: per epoch)");
ABSL_FLAG(int64_t, keep_checkpoints, 2, "train: checkpoints to keep");
ABSL_FLAG(std::string, metrics_json, "", "Write the final metrics as JSON to this path");
ABSL_FLAG(std::string, long_text, "head_tail",
          "predict: texts longer than --max-len: head_tail, or windows (vote over windows)");
ABSL_FLAG(int64_t, window_stride, 128, "predict: tokens shared by consecutive windows");
ABSL_FLAG(std::string, attention, "auto",
          "train: attention backend: auto (from the batch layout), dense, flash, efficient, "
          "grouped (CPU varlen by length groups) or reference");
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

absl::StatusOr<batching::PlannerOptions> PlanFromFlags(int64_t max_len) {
  return models::BatchingPlan(
      absl::GetFlag(FLAGS_batching),
      batching::StrategySizes{max_len, absl::GetFlag(FLAGS_batch_size), MaxTokensFromFlag(),
                              absl::GetFlag(FLAGS_seed)});
}

// "--model DIR is required", with the flag as the user would write it.
std::string RequiredMessage(absl::string_view flag, absl::string_view what) {
  return absl::StrCat(FlagAsWritten(flag), " ", what, " is required");
}

// --model of eval and predict: a trained model directory (LoadModelDir names any other missing
// member; config.json identifies the directory as a model).
PathFlag ModelDirFlag(const std::string& dir) {
  return {"model", dir, PathUse::kInputDirectory, {"config.json"}};
}

absl::Status WriteJson(const std::string& path, const nlohmann::json& j) {
  if (path.empty()) return absl::OkStatus();
  return base::WriteFileAtomically(path, j.dump(2) + "\n");
}

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
  absl::StatusOr<models::AttentionBackend> attention =
      models::ParseAttentionBackend(absl::GetFlag(FLAGS_attention));
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
absl::StatusOr<models::TrainConfig> TrainConfigFromFlags() {
  absl::StatusOr<models::AmpMode> amp = cli::AmpFlag();
  if (!amp.ok()) return amp.status();
  absl::StatusOr<models::ModelRuntime> runtime = RuntimeFromFlags();
  if (!runtime.ok()) return runtime.status();
  absl::StatusOr<models::LrDecay> decay = models::ParseLrDecay(absl::GetFlag(FLAGS_lr_schedule));
  if (!decay.ok()) return decay.status();
  absl::StatusOr<int64_t> memory_budget = MemoryBudgetFromFlag();
  if (!memory_budget.ok()) return memory_budget.status();
  return models::TrainConfig()
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

// Every train flag onto TrainJobOptions; errors are usage errors.
absl::StatusOr<models::TrainJobOptions> TrainJobFromFlags() {
  models::TrainJobOptions job;
  job.data = absl::GetFlag(FLAGS_data);
  job.dev = absl::GetFlag(FLAGS_dev);
  job.dev_fraction = absl::GetFlag(FLAGS_dev_fraction);
  job.out = absl::GetFlag(FLAGS_out);
  job.token_cache = absl::GetFlag(FLAGS_token_cache);
  job.max_len = absl::GetFlag(FLAGS_max_len);
  absl::StatusOr<tok::ReaderOptions> reader = ReaderOptionsFromFlags(/*require_label=*/true);
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
  absl::StatusOr<models::TrainConfig> train = TrainConfigFromFlags();
  if (!train.ok()) return train.status();
  job.train = *train;
  if (absl::Status s = models::ValidateTrainJobOptions(job); !s.ok()) return s;
  return job;
}

nlohmann::json TrainMetricsJson(const models::TrainJobResult& r) {
  const models::TrainResult& t = r.train;
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
    const models::MemoryPlan& mp = *t.memory_plan;
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

void PrintTrainResult(const models::TrainJobResult& r) {
  const models::TrainResult& t = r.train;
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
std::vector<PathFlag> TrainPaths(const models::TrainJobOptions& job) {
  return {{"data", job.data, PathUse::kInputTextFile},
          {"dev", job.dev, PathUse::kInputTextFile},
          {"init_from", job.init_from, PathUse::kInputDirectory, {"config.json"}},
          {"out", job.out, PathUse::kOutputDirectory},
          {"token_cache", job.token_cache, PathUse::kOutputFile},
          {"metrics_json", absl::GetFlag(FLAGS_metrics_json), PathUse::kOutputFile}};
}

// The work is models::RunTrainJob; this maps the flags onto it and prints the result.
int RunTrain(const std::vector<std::string>& args) {
  const char* kCmd = "train";
  if (!args.empty()) return Usage(kCmd, absl::StrCat("unexpected argument '", args[0], "'"));
  absl::StatusOr<models::TrainJobOptions> job = TrainJobFromFlags();
  if (!job.ok()) return Usage(kCmd, job.status().message());
  if (absl::Status s = CheckDistributedFlags(); !s.ok()) return Usage(kCmd, s.message());
  if (absl::Status s = CheckPathFlags(TrainPaths(*job)); !s.ok()) return Fail(kCmd, s);
  if (std::optional<int> launched = RunLocalWorkersIfAsked()) return *launched;
  if (absl::Status s = JoinDataParallelJob(*job); !s.ok()) {
    return absl::IsInvalidArgument(s) ? Usage(kCmd, s.message()) : Fail(kCmd, s);
  }
  absl::StatusOr<models::TrainJobResult> result = models::RunTrainJob(*job);
  if (!result.ok()) return Fail(kCmd, result.status());
  if (job->train.data_parallel().rank() != 0) return kExitOk;  // rank 0 reports
  PrintTrainResult(*result);
  if (absl::Status s = WriteJson(absl::GetFlag(FLAGS_metrics_json), TrainMetricsJson(*result));
      !s.ok()) {
    return Fail(kCmd, s);
  }
  return kExitOk;
}

int RunEval(const std::vector<std::string>& args) {
  const char* kCmd = "eval";
  if (!args.empty()) return Usage(kCmd, absl::StrCat("unexpected argument '", args[0], "'"));
  const std::string model_dir = absl::GetFlag(FLAGS_model);
  const std::string data = absl::GetFlag(FLAGS_data);
  if (model_dir.empty()) return Usage(kCmd, RequiredMessage("model", "DIR"));
  if (data.empty()) return Usage(kCmd, RequiredMessage("data", "FILE"));
  absl::StatusOr<c10::Device> device = cli::DeviceFlag();
  if (!device.ok()) return Usage(kCmd, std::string(device.status().message()));
  absl::StatusOr<models::AmpMode> amp = cli::AmpFlag();
  if (!amp.ok()) return Usage(kCmd, std::string(amp.status().message()));
  absl::StatusOr<tok::ReaderOptions> reader = ReaderOptionsFromFlags(/*require_label=*/true);
  if (!reader.ok()) return Usage(kCmd, reader.status().message());
  absl::StatusOr<tok::EncodeOptions> encode = EncodeOptionsFromFlags();
  if (!encode.ok()) return Usage(kCmd, encode.status().message());
  if (absl::Status s = CheckSizeFlags(kMaxLen | kBatchSize | kMaxTokens | kThreads); !s.ok()) {
    return ReportError(kCmd, s);
  }
  if (absl::Status s = CheckPathFlags(
          {ModelDirFlag(model_dir),
           {"data", data, PathUse::kInputTextFile},
           {"metrics_json", absl::GetFlag(FLAGS_metrics_json), PathUse::kOutputFile}});
      !s.ok()) {
    return Fail(kCmd, s);
  }
  absl::StatusOr<models::LoadedModel> loaded = models::LoadModelDir(model_dir, *device);
  if (!loaded.ok()) return Fail(kCmd, loaded.status());
  encode->max_length = std::min(encode->max_length, loaded->config.max_sequence_length());
  absl::StatusOr<batching::PlannerOptions> plan = PlanFromFlags(encode->max_length);
  if (!plan.ok()) return Usage(kCmd, std::string(plan.status().message()));
  absl::StatusOr<tok::RawCorpus> raw = tok::ReadCorpus(data, *reader);
  if (!raw.ok()) return Fail(kCmd, raw.status());
  if (raw->examples.empty())
    return Fail(kCmd, absl::InvalidArgumentError(absl::StrCat(data, ": no examples")));
  absl::StatusOr<tok::TokenizedCorpus> corpus = models::EncodeWithLabels(
      loaded->tokenizer, *raw, loaded->labels, *encode, absl::GetFlag(FLAGS_threads));
  if (!corpus.ok()) return Fail(kCmd, corpus.status());
  absl::StatusOr<models::EvalResult> eval = models::Evaluate(
      loaded->model, *corpus, *plan, *device, *amp, loaded->tokenizer.special_ids().pad);
  if (!eval.ok()) return Fail(kCmd, eval.status());
  absl::PrintF("accuracy %.4f  macro-F1 %.4f  loss %.4f  (%d examples)\n", eval->metrics.accuracy,
               eval->metrics.macro_f1, eval->loss, eval->metrics.examples);
  nlohmann::json metrics = {
      {"accuracy", eval->metrics.accuracy},
      {"macro_f1", eval->metrics.macro_f1},
      {"loss", eval->loss},
      {"examples", eval->metrics.examples},
      {"padding_efficiency",
       eval->token_slots > 0 ? static_cast<double>(eval->real_tokens) / eval->token_slots : 0.0},
      {"device", device->str()}};
  if (absl::Status s = WriteJson(absl::GetFlag(FLAGS_metrics_json), metrics); !s.ok())
    return Fail(kCmd, s);
  return kExitOk;
}

int RunPredict(const std::vector<std::string>& args) {
  const char* kCmd = "predict";
  if (!args.empty()) return Usage(kCmd, absl::StrCat("unexpected argument '", args[0], "'"));
  const std::string model_dir = absl::GetFlag(FLAGS_model);
  if (model_dir.empty()) return Usage(kCmd, RequiredMessage("model", "DIR"));
  absl::StatusOr<c10::Device> device = cli::DeviceFlag();
  if (!device.ok()) return Usage(kCmd, std::string(device.status().message()));
  absl::StatusOr<tok::ReaderOptions> reader = ReaderOptionsFromFlags(/*require_label=*/false);
  if (!reader.ok()) return Usage(kCmd, reader.status().message());
  serve::InferenceOptions options;
  options.device = *device;
  absl::StatusOr<cli::InferencePrecision> precision = cli::InferencePrecisionFlag();
  if (!precision.ok()) return Usage(kCmd, std::string(precision.status().message()));
  options.amp = precision->amp;
  options.int8_weights = precision->int8_weights;
  options.max_len = absl::GetFlag(FLAGS_max_len);
  absl::StatusOr<serve::LongText> long_text =
      serve::ParseLongText(absl::GetFlag(FLAGS_long_text));
  if (!long_text.ok()) return Usage(kCmd, std::string(long_text.status().message()));
  options.long_text = *long_text;
  options.window_stride = absl::GetFlag(FLAGS_window_stride);
  options.max_batch_tokens = absl::GetFlag(FLAGS_max_tokens).value_or(0);  // 0: by device
  if (absl::Status s = CheckSizeFlags(kMaxLen | kMaxTokens); !s.ok()) return ReportError(kCmd, s);
  if (absl::Status s = CheckPathFlags(
          {ModelDirFlag(model_dir), {"data", absl::GetFlag(FLAGS_data), PathUse::kInputTextFile}});
      !s.ok()) {
    return Fail(kCmd, s);
  }
  absl::StatusOr<std::unique_ptr<serve::TextClassifier>> classifier =
      serve::TextClassifier::Load(model_dir, options);
  if (!classifier.ok()) return Fail(kCmd, classifier.status());

  std::vector<std::string> texts;
  const std::string data = absl::GetFlag(FLAGS_data);
  // Plain text, one text per line: stdin, or a file that --format auto cannot place as TSV, CSV
  // or JSONL by its extension (.txt, no extension, ...). Those formats are read with labels
  // optional (ReaderOptions::require_label false), so a file without a label column works.
  const bool plain_lines = data.empty() || (reader->format == tok::CorpusFormat::kAuto &&
                                            !tok::FormatFromPath(data).ok());
  if (!plain_lines) {
    absl::StatusOr<tok::RawCorpus> raw = tok::ReadCorpus(data, *reader);
    if (!raw.ok()) return Fail(kCmd, raw.status());
    for (tok::Example& e : raw->examples) texts.push_back(std::move(e.text));
  } else {
    std::ifstream file;
    if (!data.empty()) {
      file.open(data);
      if (!file) return Fail(kCmd, absl::NotFoundError(absl::StrCat(data, ": cannot open")));
    }
    std::istream& in = data.empty() ? std::cin : file;
    std::string line;
    while (std::getline(in, line)) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      texts.push_back(std::move(line));
    }
  }
  // Chunks are printed as they finish while the next ones are tokenized and batched.
  constexpr size_t kChunk = 4096;
  const absl::Status predicted = (*classifier)->PredictChunks(
      texts, kChunk, [](size_t, std::vector<serve::Prediction> chunk) {
        for (const serve::Prediction& p : chunk) {
          absl::PrintF("%s\t%.6f\n", p.label, p.probability);
        }
        return absl::OkStatus();
      });
  if (!predicted.ok()) return Fail(kCmd, predicted);
  return kExitOk;
}

}  // namespace

const Subcommand kTrainCommand = {
    "train",
    "train a transformer classifier on a labeled file",
    "usage: padless train --data FILE [--dev FILE | --dev-fraction F] --out DIR [--preset "
    "tiny|small|base]\n  [--batching packed|varlen|buckets|padded|...] [--max-len N] [--max-tokens "
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
    "  learning rate and warmup: by model origin (tiny 5e-4, small 1e-4, base 5e-5 from scratch;\n"
    "    3e-5 fine-tuning --init-from); a training loss still at chance level after 200 steps\n"
    "    (and twice the warmup) is warned about.\n"
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

const Subcommand kEvalCommand = {
    "eval",
    "evaluate a trained model directory on a labeled file",
    "usage: padless eval --model DIR --data FILE [--metrics-json PATH]",
    {"model", "data", "metrics_json", "max_len", "max_tokens", "batch_size", "batching", "amp",
     "device", "threads", "seed", "format", "text_field", "text_pair_field", "label_field",
     "skip_bad_rows", "truncation", "pair_truncation", "head_fraction"},
    RunEval};

const Subcommand kPredictCommand = {
    "predict",
    "classify texts (stdin lines or --data FILE) with a trained model",
    "usage: padless predict --model DIR [--data FILE]\n\nWrites one `label<TAB>probability` line "
    "per input text.\nInput: lines of text on stdin without --data; with --data, a TSV, CSV or "
    "JSONL "
    "file (by its\nextension or --format) with or without a label column (labels are ignored), or "
    "any other file as\nplain text, one text per line.",
    {"model", "data", "max_len", "max_tokens", "amp", "device", "long_text", "window_stride",
     "format", "text_field", "label_field"},
    RunPredict};

}  // namespace padless::cli
