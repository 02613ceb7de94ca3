// `padless export-hf --model DIR --out HFDIR`: writes a trained padless model directory as a
// Hugging Face one (config.json with id2label/label2id, model.safetensors, the tokenizer files)
// that transformers' AutoModelForSequenceClassification.from_pretrained(HFDIR) loads with the same
// logits. The work is model_files::ExportHuggingFace (hf_checkpoint.h) and the tokenizer's own export.
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli_util.h"
#include "common_flags.h"
#include "path_checks.h"
#include "padless/model_files/hf_weights.h"
#include "padless/model_files/model_io.h"
#include "padless/base/atomic_file_writer.h"
#include "padless/base/read_file.h"
#include "subcommand.h"

namespace padless::cli {

namespace {

int RunExportHf(const std::vector<std::string>& args) {
  const char* kCmd = "export-hf";
  if (!args.empty()) return Usage(kCmd, absl::StrCat("unexpected argument '", args[0], "'"));
  const std::string model_dir = absl::GetFlag(FLAGS_model);
  const std::string out = absl::GetFlag(FLAGS_out);
  if (model_dir.empty()) return Usage(kCmd, "--model DIR is required");
  if (out.empty()) return Usage(kCmd, "--out HFDIR is required");
  if (absl::Status s =
          CheckPathFlags({{"model", model_dir, PathUse::kInputDirectory, {"config.json"}},
                          {"out", out, PathUse::kOutputDirectory}});
      !s.ok()) {
    return Fail(kCmd, s);
  }
  absl::StatusOr<model_files::LoadedModel> loaded =
      model_files::LoadModelDir(model_dir, c10::Device(c10::kCPU));
  if (!loaded.ok()) return Fail(kCmd, loaded.status());
  absl::Status s = model_files::ExportHuggingFace(loaded->model, loaded->labels.names(), out);
  if (!s.ok()) return Fail(kCmd, s);
  s = loaded->tokenizer.ExportHuggingFace(out);
  if (absl::IsUnimplemented(s)) {
    absl::FPrintF(stderr, "padless %s: warning: %s\n", kCmd, s.message());
  } else if (!s.ok()) {
    return Fail(kCmd, s);
  }
  absl::PrintF("%s: config.json, %s%s\n", out, model_files::kHfWeightsFile,
               s.ok() ? ", tokenizer files" : "");
  return kExitOk;
}

}  // namespace

const Subcommand kExportHfCommand = {
    "export-hf",
    "write a trained model as a Hugging Face model directory",
    "padless export-hf --model DIR --out HFDIR\n"
    "Writes HFDIR/config.json (BertForSequenceClassification, RobertaForSequenceClassification,\n"
    "DistilBertForSequenceClassification or ModernBertForSequenceClassification, with\n"
    "id2label/label2id from the label map), HFDIR/model.safetensors and the tokenizer files, for\n"
    "models fine-tuned from an imported Hugging Face checkpoint (padless's own from-scratch heads\n"
    "have no Hugging Face equivalent).\n"
    "A pruned model (padless prune; ModernBERT too) is written at its original width, its removed\n"
    "heads and FFN neurons as zero weights, which transformers 4.x and 5.x both load with the\n"
    "same outputs; padless drops the zeros again when it loads such a directory.\n",
    {"model", "out"},
    RunExportHf};

}  // namespace padless::cli
