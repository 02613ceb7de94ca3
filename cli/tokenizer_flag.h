// The --model flag of `tokenize encode|stats` and `bench-padding`: a tokenizer file (a padless
// SentencePiece .model), or a trained model directory, whose tokenizer is then used. `--help`
// has always said --model takes either; a directory used to abort the program.
#ifndef PADLESS_CLI_TOKENIZER_FLAG_H_
#define PADLESS_CLI_TOKENIZER_FLAG_H_

#include <string>

#include "absl/status/statusor.h"
#include "padless/tokenize/tokenizer.h"
#include "path_checks.h"

namespace padless::cli {

// The path check of a tokenizer flag: a file, or a directory holding a tokenizer file.
PathFlag TokenizerPathFlag(const std::string& flag, const std::string& path);

// Loads the tokenizer `path` names: the file itself, or a model directory's tokenizer.model;
// any other directory is handed to tokenize::Tokenizer::Load, which names what it lacks.
absl::StatusOr<tokenize::Tokenizer> LoadTokenizerFlag(const std::string& path);

}  // namespace padless::cli

#endif  // PADLESS_CLI_TOKENIZER_FLAG_H_
