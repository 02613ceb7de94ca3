// padless tokenize train|encode|stats (filled in by the tokenize work).
#include "subcommand.h"

namespace padless::cli {
namespace {
int RunTokenize(const std::vector<std::string>& args) { return kExitUsage; }
}  // namespace
const Subcommand kTokenizeCommand = {"tokenize", "train, apply and inspect SentencePiece models",
                                     "usage: padless tokenize train|encode|stats [--flags]",
                                     {"data", "model", "out", "max_len", "threads"},
                                     RunTokenize};
}  // namespace padless::cli
