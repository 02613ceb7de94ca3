#include "padless/models/model_io.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include <memory>

#include "absl/strings/str_cat.h"
#include "file_util.h"
#include "padless/report/atomic_file_writer.h"
#include "padless/report/file_kind.h"
#include "padless/report/read_file.h"

namespace padless::models {

using internal::IsRegularFile;
using internal::JoinPath;

absl::Status SaveWeights(torch::nn::Module& model, const std::string& path) {
  absl::StatusOr<std::unique_ptr<report::AtomicFileWriter>> out =
      report::AtomicFileWriter::Open(path);
  if (!out.ok()) return out.status();
  try {
    torch::serialize::OutputArchive archive;
    for (const auto& p : model.named_parameters()) archive.write(p.key(), p.value().detach().cpu());
    archive.save_to((*out)->Sink());
  } catch (const c10::Error& e) {
    return absl::InternalError(
        absl::StrCat(path, ": cannot save weights: ", e.what_without_backtrace()));
  }
  return (*out)->Commit();
}

absl::Status LoadWeights(torch::nn::Module& model, const std::string& path,
                         bool skip_mismatched_head) {
  if (!IsRegularFile(path)) return absl::NotFoundError(absl::StrCat(path, ": no such file"));
  try {
    torch::serialize::InputArchive archive;
    archive.load_from(path, at::Device(at::kCPU));
    at::AutoGradMode no_grad(false);
    for (auto& p : model.named_parameters()) {
      at::Tensor stored;
      if (!archive.try_read(p.key(), stored)) {
        return absl::InvalidArgumentError(
            absl::StrCat(path, ": parameter '", p.key(), "' is missing"));
      }
      if (stored.sizes() != p.value().sizes()) {
        if (skip_mismatched_head && p.key().rfind("head_", 0) == 0) continue;
        return absl::InvalidArgumentError(
            absl::StrCat(path, ": parameter '", p.key(), "' has shape ", c10::str(stored.sizes()),
                         ", the model expects ", c10::str(p.value().sizes())));
      }
      p.value().copy_(stored);
    }
  } catch (const c10::Error& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": corrupt or unreadable weights: ", e.what_without_backtrace()));
  } catch (const std::exception& e) {
    // TorchScript's importer reports a damaged code entry of the archive as std::runtime_error
    // (found by tests/fuzz/model_dir_fuzzer), not as c10::Error.
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": corrupt or unreadable weights: ", e.what()));
  }
  return absl::OkStatus();
}

absl::Status SaveModelDir(const std::string& dir, EncoderClassifier& model,
                          const tokenize::Tokenizer& tokenizer, const tokenize::LabelMap& labels) {
  absl::Status s = internal::MakeDirectories(dir);
  if (s.ok()) s = report::WriteFileAtomically(JoinPath(dir, kConfigFile), model->config().ToJson());
  if (s.ok()) s = SaveWeights(*model, JoinPath(dir, kWeightsFile));
  if (s.ok()) s = tokenizer.Save(JoinPath(dir, kTokenizerFile));
  if (s.ok()) s = labels.Save(JoinPath(dir, kLabelsFile));
  return s;
}

absl::StatusOr<LoadedModel> LoadModelDir(const std::string& dir, const c10::Device& device) {
  if (const report::FileKind kind = report::KindOfPath(dir); kind != report::FileKind::kDirectory) {
    if (kind == report::FileKind::kMissing) {
      return absl::NotFoundError(absl::StrCat(dir, ": not a model directory (does not exist)"));
    }
    return absl::FailedPreconditionError(
        absl::StrCat(dir, ": not a model directory (it is ", report::FileKindName(kind), ")"));
  }
  for (const char* f : {kConfigFile, kWeightsFile, kTokenizerFile, kLabelsFile}) {
    if (!IsRegularFile(JoinPath(dir, f))) {
      return absl::NotFoundError(
          absl::StrCat(JoinPath(dir, f), ": missing from the model directory"));
    }
  }
  absl::StatusOr<std::string> json = report::ReadFile(JoinPath(dir, kConfigFile));
  if (!json.ok()) return json.status();
  absl::StatusOr<EncoderConfig> config = EncoderConfig::FromJson(*json, JoinPath(dir, kConfigFile));
  if (!config.ok()) return config.status();
  absl::StatusOr<tokenize::Tokenizer> tokenizer =
      tokenize::Tokenizer::Load(JoinPath(dir, kTokenizerFile));
  if (!tokenizer.ok()) return tokenizer.status();
  absl::StatusOr<tokenize::LabelMap> labels = tokenize::LabelMap::Load(JoinPath(dir, kLabelsFile));
  if (!labels.ok()) return labels.status();
  if (labels->size() != config->num_labels()) {
    return absl::InvalidArgumentError(absl::StrCat(JoinPath(dir, kLabelsFile), ": ", labels->size(),
                                                   " labels, but the config has num_labels ",
                                                   config->num_labels()));
  }
  if (tokenizer->vocab_size() > config->vocab_size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(JoinPath(dir, kTokenizerFile), ": vocabulary of ", tokenizer->vocab_size(),
                     " exceeds the model's vocab_size ", config->vocab_size()));
  }
  try {
    EncoderClassifier model(*config);
    absl::Status s = LoadWeights(*model, JoinPath(dir, kWeightsFile));
    if (!s.ok()) return s;
    model->to(device);
    model->eval();
    return LoadedModel{*config, model, std::move(*tokenizer), std::move(*labels)};
  } catch (const c10::Error& e) {
    return absl::InternalError(
        absl::StrCat(dir, ": cannot build the model: ", e.what_without_backtrace()));
  }
}

}  // namespace padless::models
