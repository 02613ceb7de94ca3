#include "tokenizer_flag.h"

namespace padless::cli {

PathFlag TokenizerPathFlag(const std::string& flag, const std::string& path) {
  const std::vector<std::string> names(std::begin(tokenize::kTokenizerFileNames),
                                       std::end(tokenize::kTokenizerFileNames));
  return PathFlag{flag, path, PathUse::kInputFileOrDirectory, {}, names};
}

}  // namespace padless::cli
