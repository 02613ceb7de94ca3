#include "tokenizer_flag.h"

#include "padless/report/file_kind.h"

namespace padless::cli {
namespace {

// The tokenizer file of a padless model directory (models/model_io.h writes it).
constexpr char kModelDirTokenizer[] = "tokenizer.model";

}  // namespace

PathFlag TokenizerPathFlag(const std::string& flag, const std::string& path) {
  return PathFlag{flag,
                  path,
                  PathUse::kInputFileOrDirectory,
                  {},
                  // tokenizer.json and sentencepiece.bpe.model: Hugging Face model directories.
                  {kModelDirTokenizer, "tokenizer.json", "sentencepiece.bpe.model"}};
}

absl::StatusOr<tokenize::Tokenizer> LoadTokenizerFlag(const std::string& path) {
  if (report::KindOfPath(path) == report::FileKind::kDirectory) {
    const std::string inside = report::JoinPath(path, kModelDirTokenizer);
    if (report::KindOfPath(inside) == report::FileKind::kRegular) {
      return tokenize::Tokenizer::Load(inside);
    }
  }
  return tokenize::Tokenizer::Load(path);
}

}  // namespace padless::cli
