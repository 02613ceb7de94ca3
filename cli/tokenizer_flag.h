// The --model flag of `tokenize encode|stats` and `bench-padding`: a tokenizer file, or a model
// directory holding one of tokenize::kTokenizerFileNames (tokenize::Tokenizer::Load takes both).
#ifndef PADLESS_CLI_TOKENIZER_FLAG_H_
#define PADLESS_CLI_TOKENIZER_FLAG_H_

#include <string>

#include "padless/tokenize/tokenizer.h"
#include "path_checks.h"

namespace padless::cli {

// The path check of a tokenizer flag: a file, or a directory holding a tokenizer file.
PathFlag TokenizerPathFlag(const std::string& flag, const std::string& path);

}  // namespace padless::cli

#endif  // PADLESS_CLI_TOKENIZER_FLAG_H_
