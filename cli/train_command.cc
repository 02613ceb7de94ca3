// padless train | eval | predict: fine-tune a transformer classifier on a labeled file, evaluate a
// trained model directory, and classify texts with it. The work is in padless/models/ (Trainer,
// Evaluate, TextClassifier); this file parses flags, wires the pieces and prints.
#include <ATen/Context.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common_flags.h"
#include "nlohmann/json.hpp"
#include "padless/batching/padding_report.h"
#include "padless/cuda/memory_budget.h"
#include "padless/models/attention.h"
#include "padless/models/autocast.h"
#include "padless/models/checkpoint.h"
#include "padless/models/encoder_config.h"
#include "padless/models/inference.h"
#include "padless/models/lr_schedule.h"
#include "padless/models/model_io.h"
#include "padless/models/trainer.h"
#include "padless/tokenize/batch_encoder.h"
#include "padless/tokenize/corpus_reader.h"
#include "padless/tokenize/label_map.h"
#include "padless/tokenize/tokenizer.h"
#include "cli_util.h"
#include "subcommand.h"

// Defined by other subcommands (absl flags are process-global); train reads them too.
ABSL_DECLARE_FLAG(int, vocab_size);      // tokenize_command.cc
ABSL_DECLARE_FLAG(int64_t, max_tokens);  // bench_padding_command.cc
ABSL_DECLARE_FLAG(int64_t, batch_size);  // bench_padding_command.cc

ABSL_FLAG(std::string, dev, "", "train: labeled dev file for evaluation and early stopping");
ABSL_FLAG(double, dev_fraction, 0.0,
          "train: hold out this share of --data as the dev set when --dev is not given");
ABSL_FLAG(std::string, preset, "",
          "train: encoder preset: tiny, small or base (default: tiny, or the --init-from model's; "
          "a preset that differs from the --init-from model is an error)");
ABSL_FLAG(std::string, batching, "packed",
          "train: batching strategy: packed, varlen, buckets, padded, or any bench-padding name");
ABSL_FLAG(std::string, amp, "off", "Mixed precision: off, bf16 or fp16 (fp16 needs CUDA)");
ABSL_FLAG(std::string, checkpoint, "none",
          "train: activation checkpointing: none, all, every:K, keep_last:K, selective, ffn or "
          "attn (the last three optionally /every:K or /keep_last:K)");
ABSL_FLAG(int64_t, epochs, 3, "train: epochs");
ABSL_FLAG(int64_t, max_steps, 0, "train: stop after this many optimizer steps (0: epochs decide)");
ABSL_FLAG(double, lr, 5e-4, "train: peak learning rate (AdamW)");
ABSL_FLAG(double, weight_decay, 0.01, "train: AdamW weight decay");
ABSL_FLAG(double, warmup, 0.06, "train: share of the steps spent warming up the learning rate");
ABSL_FLAG(std::string, lr_schedule, "linear",
          "train: decay after warmup: linear, cosine, constant");
ABSL_FLAG(int64_t, grad_accum, 1, "train: batches per optimizer step");
ABSL_FLAG(double, clip_norm, 1.0, "train: gradient clipping by global norm (0: off)");
ABSL_FLAG(double, dropout, 0.1, "train: dropout of a new model");
ABSL_FLAG(int64_t, patience, 0,
          "train: evaluations without dev improvement before stopping (0: off)");
ABSL_FLAG(int64_t, eval_every, 0, "train: optimizer steps between dev evaluations (0: per epoch)");
ABSL_FLAG(std::string, init_from, "", "train: start from this trained model directory's weights");
ABSL_FLAG(bool, freeze_embeddings, false, "train: do not train the embeddings");
ABSL_FLAG(int64_t, freeze_layers, 0, "train: freeze the first K encoder layers");
ABSL_FLAG(int64_t, unfreeze_every, 0, "train: thaw one frozen layer every N epochs (0: never)");
ABSL_FLAG(bool, resume, false, "train: continue from the latest checkpoint in DIR/checkpoints");
ABSL_FLAG(int64_t, checkpoint_every, 0,
          "train: optimizer steps between checkpoints (0: per epoch)");
ABSL_FLAG(int64_t, keep_checkpoints, 2, "train: checkpoints to keep");
ABSL_FLAG(std::string, device, "auto", "Device: auto (CUDA when available), cpu, cuda or cuda:N");
ABSL_FLAG(std::string, metrics_json, "", "Write the final metrics as JSON to this path");
ABSL_FLAG(std::string, long_text, "head_tail",
          "predict: texts longer than --max-len: head_tail, or windows (vote over windows)");
ABSL_FLAG(int64_t, window_stride, 128, "predict: tokens shared by consecutive windows");
ABSL_FLAG(std::string, attention, "auto",
          "train: attention backend: auto (from the batch layout), dense, flash or reference");
ABSL_FLAG(std::string, layers, "fused",
          "train: encoder layer implementation for varlen batches: fused (one autograd function "
          "per layer with a hand-written backward; less memory, faster) or generic (per-op "
          "autograd)");
ABSL_FLAG(int64_t, max_nonfinite_steps, 50,
          "train: stop with an error after this many optimizer steps in a row with an inf/NaN "
          "loss or gradient (each one is skipped and counted; 0: never stop)");
ABSL_FLAG(std::string, memory_budget, "",
          "train: peak memory a training step may reach, e.g. 40GiB (empty: off); probe steps "
          "measure the model and choose the token budget or batch size that fits");

namespace padless::cli {
namespace {

namespace tok = padless::tokenize;
namespace models = padless::models;

absl::StatusOr<c10::Device> DeviceFromFlag() {
  const std::string d = absl::GetFlag(FLAGS_device);
  const bool cuda = at::globalContext().hasCUDA() && at::detail::getCUDAHooks().deviceCount() > 0;
  if (d == "auto") return cuda ? c10::Device(c10::kCUDA, 0) : c10::Device(c10::kCPU);
  try {
    c10::Device device(d);
    if (device.is_cuda() && !cuda) {
      return absl::InvalidArgumentError(absl::StrCat("--device ", d, ": no CUDA device available"));
    }
    return device;
  } catch (const c10::Error&) {
    return absl::InvalidArgumentError(absl::StrCat("--device: bad device '", d, "'"));
  }
}

tok::ReaderOptions ReaderFromFlags(bool require_label) {
  tok::ReaderOptions o;
  absl::StatusOr<tok::CorpusFormat> f = tok::ParseCorpusFormat(absl::GetFlag(FLAGS_format));
  o.format = f.ok() ? *f : tok::CorpusFormat::kAuto;
  o.text_field = absl::GetFlag(FLAGS_text_field);
  o.text_pair_field = absl::GetFlag(FLAGS_text_pair_field);
  o.label_field = absl::GetFlag(FLAGS_label_field);
  o.skip_bad_rows = absl::GetFlag(FLAGS_skip_bad_rows);
  o.require_label = require_label;
  return o;
}

absl::StatusOr<tok::EncodeOptions> EncodeFromFlags(int64_t max_len) {
  tok::EncodeOptions o;
  o.max_length = max_len;
  absl::StatusOr<tok::Truncation> t = tok::ParseTruncation(absl::GetFlag(FLAGS_truncation));
  if (!t.ok()) return t.status();
  o.truncation = *t;
  absl::StatusOr<tok::PairTruncation> p =
      tok::ParsePairTruncation(absl::GetFlag(FLAGS_pair_truncation));
  if (!p.ok()) return p.status();
  o.pair_truncation = *p;
  o.head_fraction = absl::GetFlag(FLAGS_head_fraction);
  return o;
}

// Encodes `raw` with label ids from `labels`; a label outside the map is an error naming the
// file, the line and the known labels.
absl::StatusOr<tok::TokenizedCorpus> Encode(const tok::Tokenizer& tokenizer,
                                            const tok::RawCorpus& raw, const tok::LabelMap& labels,
                                            int64_t max_len) {
  for (const tok::Example& e : raw.examples) {
    if (!labels.Id(e.label).ok()) {
      std::string known;
      for (const std::string& n : labels.names())
        absl::StrAppend(&known, known.empty() ? "" : ", ", n);
      return absl::InvalidArgumentError(absl::StrCat(raw.source, ":", e.line, ": label '", e.label,
                                                     "' is not one of the model's labels (", known,
                                                     ")"));
    }
  }
  absl::StatusOr<tok::EncodeOptions> encode = EncodeFromFlags(max_len);
  if (!encode.ok()) return encode.status();
  tok::BatchEncodeOptions options;
  options.encode = *encode;
  options.num_threads = absl::GetFlag(FLAGS_threads);
  return tok::EncodeCorpus(tokenizer, raw, labels, options);
}

absl::StatusOr<batching::PlannerOptions> PlanFromFlags(int64_t max_len, uint64_t seed) {
  std::string name = absl::GetFlag(FLAGS_batching);
  const int64_t max_tokens = absl::GetFlag(FLAGS_max_tokens);
  const int64_t batch_size = absl::GetFlag(FLAGS_batch_size);
  if (max_tokens < max_len) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max-tokens (", max_tokens, ") must be >= --max-len (", max_len, ")"));
  }
  if (name == "packed") name = "packed_bfd";
  if (name == "varlen") name = "varlen_bfd";
  if (name == "buckets") name = "buckets_optimal16_budget";
  if (name == "padded") name = "random_pad_longest";
  std::string known;
  for (const batching::NamedStrategy& s :
       batching::StandardStrategies(max_len, batch_size, max_tokens, seed)) {
    if (s.name == name) return s.options;
    absl::StrAppend(&known, ", ", s.name);
  }
  return absl::InvalidArgumentError(absl::StrCat("--batching: unknown strategy '", name,
                                                 "' (packed, varlen, buckets, padded", known, ")"));
}

absl::Status WriteJson(const std::string& path, const nlohmann::json& j) {
  if (path.empty()) return absl::OkStatus();
  return models::WriteFileAtomic(path, j.dump(2) + "\n");
}

// Splits off a deterministic, shuffled share of `train` as the dev set.
tok::RawCorpus HoldOut(tok::RawCorpus& train, double fraction, uint64_t seed) {
  std::vector<size_t> order(train.examples.size());
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(seed);
  std::shuffle(order.begin(), order.end(), rng);
  const size_t n_dev = static_cast<size_t>(fraction * order.size());
  std::vector<bool> is_dev(order.size(), false);
  for (size_t i = 0; i < n_dev; ++i) is_dev[order[i]] = true;
  tok::RawCorpus dev;
  dev.source = train.source + " (held out)";
  std::vector<tok::Example> kept;
  for (size_t i = 0; i < train.examples.size(); ++i) {
    (is_dev[i] ? dev.examples : kept).push_back(std::move(train.examples[i]));
  }
  train.examples = std::move(kept);
  return dev;
}

int RunTrain(const std::vector<std::string>& args) {
  const char* kCmd = "train";
  if (!args.empty()) return Usage(kCmd, absl::StrCat("unexpected argument '", args[0], "'"));
  const std::string data = absl::GetFlag(FLAGS_data);
  const std::string out = absl::GetFlag(FLAGS_out);
  const int64_t max_len = absl::GetFlag(FLAGS_max_len);
  const uint64_t seed = absl::GetFlag(FLAGS_seed);
  const bool quiet = absl::GetFlag(FLAGS_quiet);
  if (data.empty()) return Usage(kCmd, "--data is required");
  if (out.empty()) return Usage(kCmd, "--out is required");
  if (max_len < 3) return Usage(kCmd, absl::StrCat("--max-len must be >= 3, got ", max_len));
  const double dev_fraction = absl::GetFlag(FLAGS_dev_fraction);
  if (!(dev_fraction >= 0.0 && dev_fraction < 1.0))
    return Usage(kCmd, "--dev-fraction must be in [0, 1)");
  const std::string preset_name =
      absl::GetFlag(FLAGS_preset).empty() ? "tiny" : absl::GetFlag(FLAGS_preset);
  absl::StatusOr<models::EncoderConfig> preset = models::EncoderConfig::Preset(preset_name);
  if (!preset.ok()) return Usage(kCmd, std::string(preset.status().message()));
  absl::StatusOr<models::AmpMode> amp = models::ParseAmpMode(absl::GetFlag(FLAGS_amp));
  if (!amp.ok()) return Usage(kCmd, std::string(amp.status().message()));
  absl::StatusOr<models::CheckpointPolicy> policy =
      models::CheckpointPolicy::Parse(absl::GetFlag(FLAGS_checkpoint));
  if (!policy.ok()) return Usage(kCmd, std::string(policy.status().message()));
  absl::StatusOr<models::LrDecay> decay = models::ParseLrDecay(absl::GetFlag(FLAGS_lr_schedule));
  if (!decay.ok()) return Usage(kCmd, std::string(decay.status().message()));
  absl::StatusOr<batching::PlannerOptions> plan = PlanFromFlags(max_len, seed);
  if (!plan.ok()) return Usage(kCmd, std::string(plan.status().message()));
  absl::StatusOr<c10::Device> device = DeviceFromFlag();
  if (!device.ok()) return Usage(kCmd, std::string(device.status().message()));
  absl::StatusOr<models::AttentionBackend> attention =
      models::ParseAttentionBackend(absl::GetFlag(FLAGS_attention));
  if (!attention.ok()) return Usage(kCmd, std::string(attention.status().message()));
  const std::string layers = absl::GetFlag(FLAGS_layers);
  if (layers != "fused" && layers != "generic") {
    return Usage(kCmd, absl::StrCat("--layers: unknown '", layers, "' (expected fused or generic)"));
  }
  if (absl::GetFlag(FLAGS_epochs) < 1) return Usage(kCmd, "--epochs must be >= 1");
  if (absl::GetFlag(FLAGS_grad_accum) < 1) return Usage(kCmd, "--grad-accum must be >= 1");
  if (absl::GetFlag(FLAGS_max_nonfinite_steps) < 0)
    return Usage(kCmd, "--max-nonfinite-steps must be >= 0");
  int64_t memory_budget = 0;
  if (const std::string text = absl::GetFlag(FLAGS_memory_budget); !text.empty()) {
    absl::StatusOr<int64_t> bytes = cuda::ParseByteSize(text);
    if (!bytes.ok())
      return Usage(kCmd, absl::StrCat("--memory-budget: ", bytes.status().message()));
    if (*bytes <= 0)
      return Usage(kCmd, absl::StrCat("--memory-budget must be > 0, got '", text, "'"));
    memory_budget = *bytes;
  }

  // Data.
  absl::StatusOr<tok::RawCorpus> train_raw = tok::ReadCorpus(data, ReaderFromFlags(true));
  if (!train_raw.ok()) return Fail(kCmd, train_raw.status());
  if (train_raw->examples.empty())
    return Fail(kCmd, absl::InvalidArgumentError(absl::StrCat(data, ": no examples")));
  std::optional<tok::RawCorpus> dev_raw;
  if (!absl::GetFlag(FLAGS_dev).empty()) {
    absl::StatusOr<tok::RawCorpus> d =
        tok::ReadCorpus(absl::GetFlag(FLAGS_dev), ReaderFromFlags(true));
    if (!d.ok()) return Fail(kCmd, d.status());
    dev_raw = std::move(*d);
  } else if (dev_fraction > 0) {
    dev_raw = HoldOut(*train_raw, dev_fraction, seed);
  }

  // Labels and tokenizer: from --init-from, from an earlier run in --out, or new.
  const std::string init_from = absl::GetFlag(FLAGS_init_from);
  const std::string tokenizer_path =
      models::ReadFile(out + "/" + models::kTokenizerFile).ok()
          ? out + "/" + models::kTokenizerFile
          : (init_from.empty() ? "" : init_from + "/" + models::kTokenizerFile);
  std::vector<std::string> label_names;
  for (const tok::Example& e : train_raw->examples) label_names.push_back(e.label);
  const tok::LabelMap labels = tok::LabelMap::FromLabels(label_names);
  if (labels.size() < 2) {
    return Fail(kCmd, absl::InvalidArgumentError(
                          absl::StrCat(data, ": needs at least two distinct labels")));
  }
  absl::StatusOr<tok::Tokenizer> tokenizer = absl::UnknownError("unset");
  if (!tokenizer_path.empty()) {
    tokenizer = tok::Tokenizer::Load(tokenizer_path);
    if (!tokenizer.ok()) return Fail(kCmd, tokenizer.status());
    if (!quiet)
      absl::FPrintF(stderr, "tokenizer: %s (%d pieces)\n", tokenizer_path, tokenizer->vocab_size());
  } else {
    std::vector<std::string> sentences;
    for (const tok::Example& e : train_raw->examples) {
      sentences.push_back(e.text);
      if (e.has_pair) sentences.push_back(e.text_pair);
    }
    tok::TrainOptions topts;
    topts.vocab_size = absl::GetFlag(FLAGS_vocab_size);
    topts.num_threads = absl::GetFlag(FLAGS_threads);
    tokenizer = tok::Tokenizer::TrainFromSentences(sentences, topts);
    if (!tokenizer.ok()) return Fail(kCmd, tokenizer.status());
    if (!quiet)
      absl::FPrintF(stderr, "tokenizer: trained %d pieces on %s\n", tokenizer->vocab_size(), data);
  }
  absl::StatusOr<tok::TokenizedCorpus> train = Encode(*tokenizer, *train_raw, labels, max_len);
  if (!train.ok()) return Fail(kCmd, train.status());
  std::optional<tok::TokenizedCorpus> dev;
  if (dev_raw && !dev_raw->examples.empty()) {
    absl::StatusOr<tok::TokenizedCorpus> d = Encode(*tokenizer, *dev_raw, labels, max_len);
    if (!d.ok()) return Fail(kCmd, d.status());
    dev = std::move(*d);
  }

  // Model.
  models::EncoderConfig config = preset->vocab_size(tokenizer->vocab_size())
                                     .num_labels(labels.size())
                                     .max_positions(std::max<int64_t>(512, max_len))
                                     .dropout(absl::GetFlag(FLAGS_dropout))
                                     .attention_dropout(absl::GetFlag(FLAGS_dropout));
  if (absl::Status s = config.Validate(); !s.ok()) return Usage(kCmd, std::string(s.message()));
  at::manual_seed(seed);
  models::EncoderClassifier model(config);
  if (!init_from.empty()) {
    const std::string init_config_path = init_from + "/" + models::kConfigFile;
    absl::StatusOr<std::string> json = models::ReadFile(init_config_path);
    if (!json.ok()) return Fail(kCmd, json.status());
    absl::StatusOr<models::EncoderConfig> init_config =
        models::EncoderConfig::FromJson(*json, init_config_path);
    if (!init_config.ok()) return Fail(kCmd, init_config.status());
    auto shape = [](const models::EncoderConfig& c) {
      return absl::StrFormat("%d layers, hidden %d, %d heads, ffn %d", c.layers(), c.hidden(),
                             c.heads(), c.ffn());
    };
    if (!absl::GetFlag(FLAGS_preset).empty() && shape(*preset) != shape(*init_config)) {
      return Fail(kCmd, absl::InvalidArgumentError(absl::StrCat(
                            "--preset ", preset_name, " (", shape(*preset), ") does not match the ",
                            "--init-from model ", init_config_path, " (", shape(*init_config),
                            "); leave --preset out to continue from it")));
    }
    if (init_config->vocab_size() != tokenizer->vocab_size()) {
      return Fail(kCmd, absl::InvalidArgumentError(absl::StrCat(
                            "--init-from model ", init_config_path, " has a vocabulary of ",
                            init_config->vocab_size(), " pieces but the tokenizer ", tokenizer_path,
                            " has ", tokenizer->vocab_size(),
                            "; use an --out directory without a tokenizer of its own")));
    }
    // The architecture comes from the initial model; only the head follows the new labels.
    config = init_config->num_labels(labels.size())
                 .dropout(absl::GetFlag(FLAGS_dropout))
                 .attention_dropout(absl::GetFlag(FLAGS_dropout));
    model = models::EncoderClassifier(config);
    absl::Status s = models::LoadWeights(*model, init_from + "/" + models::kWeightsFile,
                                         /*skip_mismatched_head=*/true);
    if (!s.ok()) return Fail(kCmd, s);
  }

  models::TrainConfig tc = models::TrainConfig()
                               .epochs(absl::GetFlag(FLAGS_epochs))
                               .max_steps(absl::GetFlag(FLAGS_max_steps))
                               .lr(absl::GetFlag(FLAGS_lr))
                               .weight_decay(absl::GetFlag(FLAGS_weight_decay))
                               .warmup_fraction(absl::GetFlag(FLAGS_warmup))
                               .decay(*decay)
                               .grad_accum(absl::GetFlag(FLAGS_grad_accum))
                               .clip_norm(absl::GetFlag(FLAGS_clip_norm))
                               .amp(*amp)
                               .runtime(models::ModelRuntime{.attention = *attention,
                                                             .fused_layers = layers == "fused",
                                                             .checkpoint = *policy})
                               .freeze_embeddings(absl::GetFlag(FLAGS_freeze_embeddings))
                               .freeze_layers(absl::GetFlag(FLAGS_freeze_layers))
                               .unfreeze_every(absl::GetFlag(FLAGS_unfreeze_every))
                               .eval_every(absl::GetFlag(FLAGS_eval_every))
                               .patience(absl::GetFlag(FLAGS_patience))
                               .checkpoint_dir(out + "/checkpoints")
                               .checkpoint_every(absl::GetFlag(FLAGS_checkpoint_every))
                               .keep_checkpoints(absl::GetFlag(FLAGS_keep_checkpoints))
                               .resume(absl::GetFlag(FLAGS_resume))
                               .log_csv(out + "/train_log.csv")
                               .progress(!quiet)
                               .seed(seed)
                               .memory_budget_bytes(memory_budget)
                               .max_nonfinite_steps(absl::GetFlag(FLAGS_max_nonfinite_steps));
  // Creates `out` (for the log and checkpoints) and leaves a loadable model there from the start.
  if (absl::Status s = models::SaveModelDir(out, model, *tokenizer, labels); !s.ok()) {
    return Fail(kCmd, s);
  }
  if (!quiet) {
    absl::FPrintF(stderr,
                  "training %s encoder (%d layers, hidden %d) on %s: %d examples%s, %s, amp %s\n",
                  init_from.empty() ? preset_name : init_from, config.layers(), config.hidden(),
                  device->str(), train->size(), dev ? absl::StrCat(", dev ", dev->size()) : "",
                  absl::GetFlag(FLAGS_batching), models::AmpModeName(*amp));
  }
  models::Trainer trainer(model, tc, *plan, *device);
  absl::StatusOr<models::TrainResult> result = trainer.Train(*train, dev ? &*dev : nullptr);
  if (!result.ok()) return Fail(kCmd, result.status());
  if (absl::Status s = models::SaveModelDir(out, model, *tokenizer, labels); !s.ok()) {
    return Fail(kCmd, s);
  }

  nlohmann::json metrics = {{"steps", result->steps},
                            {"padding_efficiency", result->padding_efficiency},
                            {"real_tokens_per_s", result->real_tokens_per_s},
                            {"peak_allocated_bytes", result->peak_allocated_bytes},
                            {"peak_reserved_bytes", result->peak_reserved_bytes},
                            {"train_seconds", result->train_seconds},
                            {"device", device->str()},
                            {"oom_events", result->oom_events.size()},
                            {"skipped_steps", result->skipped_steps},
                            {"stopped_early", result->stopped_early}};
  if (result->memory_plan) {
    const models::MemoryPlan& mp = *result->memory_plan;
    absl::PrintF("%s\n", mp.Summary());
    metrics["memory_plan"] = {
        {"budget_bytes", mp.budget_bytes}, {"target_bytes", mp.target_bytes},
        {"max_tokens", mp.max_tokens},     {"batch_size", mp.batch_size},
        {"row_len", mp.row_len},           {"measured_peak_bytes", mp.measured_peak_bytes}};
  }
  if (dev) {
    absl::StatusOr<models::EvalResult> eval = models::Evaluate(model, *dev, *plan, *device, *amp);
    if (!eval.ok()) return Fail(kCmd, eval.status());
    metrics["accuracy"] = eval->metrics.accuracy;
    metrics["macro_f1"] = eval->metrics.macro_f1;
    metrics["dev_examples"] = eval->metrics.examples;
    absl::PrintF("dev accuracy %.4f  macro-F1 %.4f  (%d examples)\n", eval->metrics.accuracy,
                 eval->metrics.macro_f1, eval->metrics.examples);
  } else {
    metrics["accuracy"] = nullptr;
    metrics["macro_f1"] = nullptr;
  }
  absl::PrintF(
      "padding efficiency %.1f%%  real tokens/s %.0f  peak memory %s (reserved %s)  %.1f s on %s\n",
      100 * result->padding_efficiency, result->real_tokens_per_s,
      absl::StrFormat("%.1f MiB", result->peak_allocated_bytes / 1048576.0),
      absl::StrFormat("%.1f MiB", result->peak_reserved_bytes / 1048576.0), result->train_seconds,
      device->str());
  for (const std::string& e : result->oom_events) absl::PrintF("recovered: %s\n", e);
  if (result->skipped_steps > 0) {
    absl::PrintF("skipped %d optimizer steps with an inf/NaN loss or gradient\n",
                 result->skipped_steps);
  }
  absl::PrintF("model written to %s\n", out);
  if (absl::Status s = WriteJson(absl::GetFlag(FLAGS_metrics_json), metrics); !s.ok())
    return Fail(kCmd, s);
  return kExitOk;
}

int RunEval(const std::vector<std::string>& args) {
  const char* kCmd = "eval";
  if (!args.empty()) return Usage(kCmd, absl::StrCat("unexpected argument '", args[0], "'"));
  const std::string model_dir = absl::GetFlag(FLAGS_model);
  const std::string data = absl::GetFlag(FLAGS_data);
  if (model_dir.empty()) return Usage(kCmd, "--model DIR is required");
  if (data.empty()) return Usage(kCmd, "--data is required");
  absl::StatusOr<c10::Device> device = DeviceFromFlag();
  if (!device.ok()) return Usage(kCmd, std::string(device.status().message()));
  absl::StatusOr<models::AmpMode> amp = models::ParseAmpMode(absl::GetFlag(FLAGS_amp));
  if (!amp.ok()) return Usage(kCmd, std::string(amp.status().message()));
  absl::StatusOr<models::LoadedModel> loaded = models::LoadModelDir(model_dir, *device);
  if (!loaded.ok()) return Fail(kCmd, loaded.status());
  const int64_t max_len = std::min(absl::GetFlag(FLAGS_max_len), loaded->config.max_positions());
  absl::StatusOr<batching::PlannerOptions> plan = PlanFromFlags(max_len, absl::GetFlag(FLAGS_seed));
  if (!plan.ok()) return Usage(kCmd, std::string(plan.status().message()));
  absl::StatusOr<tok::RawCorpus> raw = tok::ReadCorpus(data, ReaderFromFlags(true));
  if (!raw.ok()) return Fail(kCmd, raw.status());
  if (raw->examples.empty())
    return Fail(kCmd, absl::InvalidArgumentError(absl::StrCat(data, ": no examples")));
  absl::StatusOr<tok::TokenizedCorpus> corpus =
      Encode(loaded->tokenizer, *raw, loaded->labels, max_len);
  if (!corpus.ok()) return Fail(kCmd, corpus.status());
  absl::StatusOr<models::EvalResult> eval =
      models::Evaluate(loaded->model, *corpus, *plan, *device, *amp);
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
  if (model_dir.empty()) return Usage(kCmd, "--model DIR is required");
  absl::StatusOr<c10::Device> device = DeviceFromFlag();
  if (!device.ok()) return Usage(kCmd, std::string(device.status().message()));
  models::InferenceOptions options;
  options.device = *device;
  absl::StatusOr<models::AmpMode> amp = models::ParseAmpMode(absl::GetFlag(FLAGS_amp));
  if (!amp.ok()) return Usage(kCmd, std::string(amp.status().message()));
  options.amp = *amp;
  options.max_len = absl::GetFlag(FLAGS_max_len);
  absl::StatusOr<models::LongText> long_text =
      models::ParseLongText(absl::GetFlag(FLAGS_long_text));
  if (!long_text.ok()) return Usage(kCmd, std::string(long_text.status().message()));
  options.long_text = *long_text;
  options.window_stride = absl::GetFlag(FLAGS_window_stride);
  options.max_tokens = absl::GetFlag(FLAGS_max_tokens);
  absl::StatusOr<std::unique_ptr<models::TextClassifier>> classifier =
      models::TextClassifier::Load(model_dir, options);
  if (!classifier.ok()) return Fail(kCmd, classifier.status());

  std::vector<std::string> texts;
  const std::string data = absl::GetFlag(FLAGS_data);
  const bool plain_lines =
      data.empty() || data.size() < 4 || data.substr(data.size() - 4) == ".txt";
  if (!plain_lines) {
    absl::StatusOr<tok::RawCorpus> raw = tok::ReadCorpus(data, ReaderFromFlags(false));
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
  // Bounded chunks keep memory flat on long inputs; the classifier batches within each.
  constexpr size_t kChunk = 4096;
  for (size_t begin = 0; begin < texts.size(); begin += kChunk) {
    const size_t n = std::min(kChunk, texts.size() - begin);
    absl::StatusOr<std::vector<models::Prediction>> preds =
        (*classifier)->Predict(absl::MakeConstSpan(texts).subspan(begin, n));
    if (!preds.ok()) return Fail(kCmd, preds.status());
    for (const models::Prediction& p : *preds) absl::PrintF("%s\t%.6f\n", p.label, p.probability);
  }
  return kExitOk;
}

}  // namespace

const Subcommand kTrainCommand = {
    "train",
    "train a transformer classifier on a labeled file",
    "usage: padless train --data FILE [--dev FILE | --dev-fraction F] --out DIR [--preset "
    "tiny|small|base]\n  [--batching packed|varlen|buckets|padded|...] [--max-len N] [--max-tokens "
    "N]"
    " [--amp off|bf16|fp16]\n  [--checkpoint none|all|every:K] [--epochs N] [--seed S] "
    "[--vocab-size N] [--metrics-json PATH]\n  [--memory-budget 40GiB]\n\nTrains a SentencePiece "
    "tokenizer when DIR has none, "
    "then the encoder; writes DIR/{config.json,model.pt,tokenizer.model,labels.json},\n"
    "DIR/train_log.csv and DIR/checkpoints/.",
    {"data",
     "dev",
     "dev_fraction",
     "out",
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
     "head_fraction"},
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
    "per input text.",
    {"model", "data", "max_len", "max_tokens", "amp", "device", "long_text", "window_stride",
     "format", "text_field", "label_field"},
    RunPredict};

}  // namespace padless::cli
