#include "tokenizer_files.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "hf_tokenizer_json.h"
#include "padless/base/directory.h"
#include "padless/base/file_kind.h"
#include "padless/base/read_file.h"
#include "sentencepiece_model.h"
#include "spm_backend.h"

namespace padless::tokenize::internal {
namespace {

absl::StatusOr<std::unique_ptr<TokenizerBackend>> LoadFile(const std::string& path,
                                                           bool xlmr = false) {
  // ReadFile names the path and says what is wrong (missing, a FIFO, unreadable, ...).
  absl::StatusOr<std::string> bytes = base::ReadFile(path);
  if (!bytes.ok()) return bytes.status();
  return BackendFromBytes(*bytes, path, xlmr);
}

absl::StatusOr<std::unique_ptr<TokenizerBackend>> LoadDirectory(const std::string& dir) {
  const std::string padless = dir + "/tokenizer.model", json = dir + "/tokenizer.json",
                    xlmr = dir + "/sentencepiece.bpe.model";
  if (base::IsRegularFile(padless)) return LoadFile(padless);
  if (base::IsRegularFile(json)) {
    absl::StatusOr<std::unique_ptr<TokenizerBackend>> backend = LoadFile(json);
    // XLM-R directories carry a Unigram tokenizer.json beside the SentencePiece model.
    const bool other_type = backend.status().code() == absl::StatusCode::kUnimplemented;
    if (!other_type || !base::IsRegularFile(xlmr)) return backend;
  }
  if (base::IsRegularFile(xlmr)) return LoadFile(xlmr, /*xlmr=*/true);
  return absl::NotFoundError(absl::StrCat(
      dir, " holds no tokenizer (tokenizer.model, tokenizer.json or sentencepiece.bpe.model)"));
}

}  // namespace

absl::StatusOr<std::unique_ptr<TokenizerBackend>> BackendFromBytes(const std::string& bytes,
                                                                   const std::string& origin,
                                                                   bool xlmr) {
  if (bytes.empty()) return absl::InvalidArgumentError(absl::StrCat(origin, ": file is empty"));
  if (LooksLikeJson(bytes)) {
    return ParseTokenizerJson(bytes, origin);
  }
  auto spm = std::make_unique<SpmBackend>();
  if (const std::string error = spm->LoadFromSerialized(bytes); !error.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        origin, ": neither a tokenizer.json nor a valid SentencePiece model: ", error));
  }
  absl::StatusOr<std::unique_ptr<SentencePieceModel>> model =
      SentencePieceModel::Create(std::move(spm), origin, xlmr);
  if (!model.ok()) return model.status();
  return std::unique_ptr<TokenizerBackend>(*std::move(model));
}

absl::StatusOr<std::unique_ptr<TokenizerBackend>> LoadBackend(const std::string& path) {
  if (base::KindOfPath(path) == base::FileKind::kDirectory) return LoadDirectory(path);
  return LoadFile(path);
}

}  // namespace padless::tokenize::internal
