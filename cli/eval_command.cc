// padless eval: evaluate a trained model directory on a labeled file. The work is in
// padless/eval/ (Evaluate) and padless/model_files/ (LoadClassifierDir); this file maps flags onto
// them and prints.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli_util.h"
#include "common_flags.h"
#include "data_flags.h"
#include "device_flag.h"
#include "flag_spelling.h"
#include "metrics_json_flag.h"
#include "model_dir_flag.h"
#include "nlohmann/json.hpp"
#include "padless/batching/planner.h"
#include "padless/batching/strategy_registry.h"
#include "padless/corpus/corpus_reader.h"
#include "padless/corpus/tokenized_corpus.h"
#include "padless/eval/evaluation.h"
#include "padless/model_files/model_io.h"
#include "padless/models/autocast.h"
#include "padless/tokenize/tokenizer.h"
#include "padless/train/train_job.h"
#include "path_checks.h"
#include "subcommand.h"

namespace padless::cli {
namespace {

namespace tok = padless::tokenize;

absl::StatusOr<batching::PlannerOptions> PlanFromFlags(int64_t max_len) {
  return train::BatchingPlan(
      absl::GetFlag(FLAGS_batching),
      batching::StrategySizes{max_len, absl::GetFlag(FLAGS_batch_size), MaxTokensFromFlag(),
                              absl::GetFlag(FLAGS_seed)});
}

// The --metrics-json of eval.
nlohmann::json EvalMetricsJson(const eval::EvalResult& result, const c10::Device& device) {
  nlohmann::json metrics = {
      {"accuracy", result.metrics.accuracy},
      {"macro_f1", result.metrics.macro_f1},
      {"loss", result.loss},
      {"examples", result.metrics.examples},
      {"padding_efficiency",
       result.token_slots > 0 ? static_cast<double>(result.real_tokens) / result.token_slots : 0.0},
      {"device", device.str()}};
  return metrics;
}

int RunEval(const std::vector<std::string>& args) {
  const char* kCmd = "eval";
  if (!args.empty()) return Usage(kCmd, absl::StrCat("unexpected argument '", args[0], "'"));
  const std::string model_dir = absl::GetFlag(FLAGS_model);
  const std::string data = absl::GetFlag(FLAGS_data);
  if (model_dir.empty()) return Usage(kCmd, RequiredFlagMessage("model", "DIR"));
  if (data.empty()) return Usage(kCmd, RequiredFlagMessage("data", "FILE"));
  absl::StatusOr<c10::Device> device = cli::DeviceFlag();
  if (!device.ok()) return Usage(kCmd, std::string(device.status().message()));
  absl::StatusOr<models::AmpMode> amp = cli::AmpFlag();
  if (!amp.ok()) return Usage(kCmd, std::string(amp.status().message()));
  absl::StatusOr<corpus::ReaderOptions> reader = ReaderOptionsFromFlags(/*require_label=*/true);
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
  absl::StatusOr<model_files::LoadedModel> loaded =
      model_files::LoadClassifierDir(model_dir, *device);  // refuses an untrained head
  if (!loaded.ok()) return Fail(kCmd, loaded.status());
  encode->max_length = std::min(encode->max_length, loaded->config.max_sequence_length());
  absl::StatusOr<batching::PlannerOptions> plan = PlanFromFlags(encode->max_length);
  if (!plan.ok()) return Usage(kCmd, std::string(plan.status().message()));
  absl::StatusOr<corpus::RawCorpus> raw = corpus::ReadCorpus(data, *reader);
  if (!raw.ok()) return Fail(kCmd, raw.status());
  if (raw->examples.empty())
    return Fail(kCmd, absl::InvalidArgumentError(absl::StrCat(data, ": no examples")));
  absl::StatusOr<corpus::TokenizedCorpus> encoded = train::EncodeWithLabels(
      loaded->tokenizer, *raw, loaded->labels, *encode, absl::GetFlag(FLAGS_threads));
  if (!encoded.ok()) return Fail(kCmd, encoded.status());
  absl::StatusOr<eval::EvalResult> result = eval::Evaluate(
      loaded->model, *encoded, *plan, *device, *amp, loaded->tokenizer.special_ids().pad);
  if (!result.ok()) return Fail(kCmd, result.status());
  absl::PrintF("accuracy %.4f  macro-F1 %.4f  loss %.4f  (%d examples)\n", result->metrics.accuracy,
               result->metrics.macro_f1, result->loss, result->metrics.examples);
  if (absl::Status s = WriteMetricsJson(EvalMetricsJson(*result, *device)); !s.ok())
    return Fail(kCmd, s);
  return kExitOk;
}

}  // namespace

const Subcommand kEvalCommand = {
    "eval",
    "evaluate a trained model directory on a labeled file",
    "usage: padless eval --model DIR --data FILE [--metrics-json PATH]",
    {"model", "data", "metrics_json", "max_len", "max_tokens", "batch_size", "batching", "amp",
     "device", "threads", "seed", "format", "text_field", "text_pair_field", "label_field",
     "skip_bad_rows", "truncation", "pair_truncation", "head_fraction"},
    RunEval};

}  // namespace padless::cli
