#include "padless/model_files/model_io.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "padless/base/directory.h"
#include "padless/model_files/hf_weights.h"
#include "padless/model_files/safetensors.h"
#include "padless/base/atomic_file_writer.h"
#include "padless/base/file_kind.h"
#include "padless/base/read_file.h"

namespace padless::model_files {

using base::IsRegularFile;
using base::JoinPath;

absl::Status SaveWeights(torch::nn::Module& model, const std::string& path) {
  std::vector<std::pair<std::string, at::Tensor>> tensors;
  for (const auto& p : model.named_parameters()) tensors.emplace_back(p.key(), p.value());
  try {
    return WriteSafetensors(path, tensors, {{"format", "pt"}, {"writer", "padless"}});
  } catch (const c10::Error& e) {
    return absl::InternalError(
        absl::StrCat(path, ": cannot save weights: ", e.what_without_backtrace()));
  }
}

absl::Status LoadWeights(torch::nn::Module& model, const std::string& path,
                         bool skip_mismatched_head) {
  absl::StatusOr<SafetensorsFile> file = SafetensorsFile::Open(path);
  if (!file.ok()) return file.status();
  at::AutoGradMode no_grad(false);
  for (auto& p : model.named_parameters()) {
    absl::StatusOr<at::Tensor> stored = file->Tensor(p.key());
    if (!stored.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": parameter '", p.key(), "': ", stored.status().message()));
    }
    if (stored->sizes() != p.value().sizes()) {
      if (skip_mismatched_head && p.key().rfind("head_", 0) == 0) continue;
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": parameter '", p.key(), "' has shape ", c10::str(stored->sizes()),
                       ", the model expects ", c10::str(p.value().sizes())));
    }
    p.value().copy_(*stored);
  }
  return absl::OkStatus();
}

absl::Status SaveModelDir(const std::string& dir, models::EncoderClassifier& model,
                          const tokenize::Tokenizer& tokenizer, const corpus::LabelMap& labels) {
  absl::Status s = base::MakeDirectories(dir);
  if (s.ok()) s = base::WriteFileAtomically(JoinPath(dir, kConfigFile), model->config().ToJson());
  if (s.ok()) s = SaveWeights(*model, JoinPath(dir, kWeightsFile));
  // Under the backend's own name (tokenize::kTokenizerFileNames), which Tokenizer::Load(dir) reads.
  if (s.ok()) s = tokenizer.Save(JoinPath(dir, tokenizer.file_name()));
  if (s.ok()) s = labels.Save(JoinPath(dir, kLabelsFile));
  return s;
}

namespace {

// A Hugging Face directory as a LoadedModel: the weights through ImportHuggingFace, the tokenizer
// from its tokenizer.json (or XLM-R's sentencepiece model), the labels from id2label
// (LABEL_0, LABEL_1, ... as transformers names them when the config has none).
absl::StatusOr<LoadedModel> LoadHuggingFaceDir(const std::string& dir, const c10::Device& device) {
  absl::StatusOr<ImportedModel> imported = ImportHuggingFace(dir);
  if (!imported.ok()) return imported.status();
  absl::StatusOr<tokenize::Tokenizer> tokenizer = tokenize::Tokenizer::Load(dir);
  if (!tokenizer.ok()) return tokenizer.status();
  const models::EncoderConfig& config = imported->hf.encoder;
  std::vector<std::string> names = imported->hf.labels;
  if (names.empty()) {
    for (int64_t i = 0; i < config.num_labels(); ++i) names.push_back(absl::StrCat("LABEL_", i));
  }
  absl::StatusOr<corpus::LabelMap> labels = corpus::LabelMap::FromNames(std::move(names));
  if (!labels.ok()) return labels.status();
  if (tokenizer->vocab_size() > config.vocab_size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        JoinPath(dir, tokenizer->file_name()), ": vocabulary of ", tokenizer->vocab_size(),
        " exceeds the model's vocab_size ", config.vocab_size()));
  }
  try {
    imported->model->to(device);
    imported->model->eval();
  } catch (const c10::Error& e) {
    return absl::InternalError(
        absl::StrCat(dir, ": cannot move the model: ", e.what_without_backtrace()));
  }
  return LoadedModel{config,
                     imported->model,
                     std::move(*tokenizer),
                     std::move(*labels),
                     imported->head_loaded,
                     std::move(imported->new_head_reason)};
}

}  // namespace

absl::StatusOr<LoadedModel> LoadModelDir(const std::string& dir, const c10::Device& device) {
  if (IsHuggingFaceModelDir(dir)) return LoadHuggingFaceDir(dir, device);
  if (const base::FileKind kind = base::KindOfPath(dir); kind != base::FileKind::kDirectory) {
    if (kind == base::FileKind::kMissing) {
      return absl::NotFoundError(absl::StrCat(dir, ": not a model directory (does not exist)"));
    }
    return absl::FailedPreconditionError(
        absl::StrCat(dir, ": not a model directory (it is ", base::FileKindName(kind), ")"));
  }
  if (!IsRegularFile(JoinPath(dir, kWeightsFile)) &&
      IsRegularFile(JoinPath(dir, kLegacyWeightsFile))) {
    return absl::InvalidArgumentError(absl::StrCat(
        JoinPath(dir, kLegacyWeightsFile), ": padless no longer reads pickle weight archives ",
        "(a damaged one can make the loader allocate gigabytes); convert this trusted file once ",
        "with `python3 scripts/convert_model_pt.py ", dir, "`, which writes ", kWeightsFile));
  }
  for (const std::string& f : {std::string(kConfigFile), std::string(kWeightsFile),
                               std::string(kLabelsFile)}) {
    if (!IsRegularFile(JoinPath(dir, f))) {
      return absl::NotFoundError(
          absl::StrCat(JoinPath(dir, f), ": missing from the model directory"));
    }
  }
  absl::StatusOr<std::string> json = base::ReadFile(JoinPath(dir, kConfigFile));
  if (!json.ok()) return json.status();
  absl::StatusOr<models::EncoderConfig> config = models::EncoderConfig::FromJson(*json, JoinPath(dir, kConfigFile));
  if (!config.ok()) return config.status();
  absl::StatusOr<tokenize::Tokenizer> tokenizer =
      tokenize::Tokenizer::Load(dir);  // whichever of tokenize::kTokenizerFileNames it holds
  if (!tokenizer.ok()) return tokenizer.status();
  absl::StatusOr<corpus::LabelMap> labels = corpus::LabelMap::Load(JoinPath(dir, kLabelsFile));
  if (!labels.ok()) return labels.status();
  if (labels->size() != config->num_labels()) {
    return absl::InvalidArgumentError(absl::StrCat(JoinPath(dir, kLabelsFile), ": ", labels->size(),
                                                   " labels, but the config has num_labels ",
                                                   config->num_labels()));
  }
  if (tokenizer->vocab_size() > config->vocab_size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(JoinPath(dir, tokenizer->file_name()), ": vocabulary of ", tokenizer->vocab_size(),
                     " exceeds the model's vocab_size ", config->vocab_size()));
  }
  try {
    models::EncoderClassifier model(*config);
    absl::Status s = LoadWeights(*model, JoinPath(dir, kWeightsFile));
    if (!s.ok()) return s;
    model->to(device);
    model->eval();
    // LoadWeights loaded every parameter, the head's included.
    return LoadedModel{*config, model, std::move(*tokenizer), std::move(*labels),
                       /*head_from_checkpoint=*/true, /*new_head_reason=*/""};
  } catch (const c10::Error& e) {
    return absl::InternalError(
        absl::StrCat(dir, ": cannot build the model: ", e.what_without_backtrace()));
  }
}

absl::Status RequireTrainedHead(const LoadedModel& model, const std::string& dir) {
  if (model.head_from_checkpoint) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      dir, ": the checkpoint has no trained classification head (", model.new_head_reason,
      "), so padless does not classify with it; train a head first with `padless train ",
      "--init-from ", dir, " --data FILE --out NEW_DIR` and use NEW_DIR"));
}

absl::StatusOr<LoadedModel> LoadClassifierDir(const std::string& dir, const c10::Device& device) {
  absl::StatusOr<LoadedModel> loaded = LoadModelDir(dir, device);
  if (!loaded.ok()) return loaded.status();
  if (absl::Status s = RequireTrainedHead(*loaded, dir); !s.ok()) return s;
  return loaded;
}

}  // namespace padless::model_files
