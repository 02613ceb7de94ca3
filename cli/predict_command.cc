// padless predict: classify texts (stdin lines or a file) with a trained model directory. The
// work is in padless/serve/ (TextClassifier); this file maps flags onto it and prints.
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "attention_flag.h"
#include "cli_util.h"
#include "common_flags.h"
#include "data_flags.h"
#include "device_flag.h"
#include "flag_spelling.h"
#include "model_dir_flag.h"
#include "padless/corpus/corpus_reader.h"
#include "padless/serve/text_classifier.h"
#include "path_checks.h"
#include "input_texts.h"
#include "subcommand.h"

ABSL_FLAG(std::string, long_text, "head_tail",
          "predict: texts longer than --max-len: head_tail, or windows (vote over windows)");
ABSL_FLAG(int64_t, window_stride, 128, "predict: tokens shared by consecutive windows");

namespace padless::cli {
namespace {

// The inference flags onto serve::InferenceOptions; errors are usage errors.
absl::StatusOr<serve::InferenceOptions> InferenceOptionsFromFlags(const c10::Device& device) {
  serve::InferenceOptions options;
  options.device = device;
  absl::StatusOr<cli::InferencePrecision> precision = cli::InferencePrecisionFlag();
  if (!precision.ok()) return precision.status();
  options.amp = precision->amp;
  options.int8_weights = precision->int8_weights;
  absl::StatusOr<models::AttentionBackend> attention = AttentionFlag();
  if (!attention.ok()) return attention.status();
  options.attention = *attention;
  options.max_len = absl::GetFlag(FLAGS_max_len);
  absl::StatusOr<serve::LongText> long_text = serve::ParseLongText(absl::GetFlag(FLAGS_long_text));
  if (!long_text.ok()) return long_text.status();
  options.long_text = *long_text;
  options.window_stride = absl::GetFlag(FLAGS_window_stride);
  options.max_batch_tokens = absl::GetFlag(FLAGS_max_tokens).value_or(0);  // 0: by device
  return options;
}

int RunPredict(const std::vector<std::string>& args) {
  const char* kCmd = "predict";
  if (!args.empty()) return Usage(kCmd, absl::StrCat("unexpected argument '", args[0], "'"));
  const std::string model_dir = absl::GetFlag(FLAGS_model);
  if (model_dir.empty()) return Usage(kCmd, RequiredFlagMessage("model", "DIR"));
  absl::StatusOr<c10::Device> device = cli::DeviceFlag();
  if (!device.ok()) return Usage(kCmd, std::string(device.status().message()));
  absl::StatusOr<corpus::ReaderOptions> reader = ReaderOptionsFromFlags(/*require_label=*/false);
  if (!reader.ok()) return Usage(kCmd, reader.status().message());
  absl::StatusOr<serve::InferenceOptions> options = InferenceOptionsFromFlags(*device);
  if (!options.ok()) return Usage(kCmd, std::string(options.status().message()));
  if (absl::Status s = CheckSizeFlags(kMaxLen | kMaxTokens); !s.ok()) return ReportError(kCmd, s);
  const std::string data = absl::GetFlag(FLAGS_data);
  if (absl::Status s =
          CheckPathFlags({ModelDirFlag(model_dir), {"data", data, PathUse::kInputTextFile}});
      !s.ok()) {
    return Fail(kCmd, s);
  }
  absl::StatusOr<std::unique_ptr<serve::TextClassifier>> classifier =
      serve::TextClassifier::Load(model_dir, *options);
  if (!classifier.ok()) return Fail(kCmd, classifier.status());
  absl::StatusOr<std::vector<std::string>> texts = ReadInputTexts(data, *reader);
  if (!texts.ok()) return Fail(kCmd, texts.status());
  // Chunks are printed as they finish while the next ones are tokenized and batched.
  constexpr size_t kChunk = 4096;
  const absl::Status predicted =
      (*classifier)
          ->PredictChunks(*texts, kChunk, [](size_t, std::vector<serve::Prediction> chunk) {
            for (const serve::Prediction& p : chunk) {
              absl::PrintF("%s\t%.6f\n", p.label, p.probability);
            }
            return absl::OkStatus();
          });
  if (!predicted.ok()) return Fail(kCmd, predicted);
  return kExitOk;
}

}  // namespace

const Subcommand kPredictCommand = {
    "predict",
    "classify texts (stdin lines or --data FILE) with a trained model",
    "usage: padless predict --model DIR [--data FILE]\n\nWrites one `label<TAB>probability` line "
    "per input text.\nInput: lines of text on stdin without --data; with --data, a TSV, CSV or "
    "JSONL "
    "file (by its\nextension or --format) with or without a label column (labels are ignored), or "
    "any other file as\nplain text, one text per line.",
    {"model", "data", "max_len", "max_tokens", "amp", "device", "attention", "long_text",
     "window_stride", "format", "text_field", "label_field"},
    RunPredict};

}  // namespace padless::cli
