// Placeholder registration; the owning work replaces this file.
#include "subcommand.h"

namespace padless::cli {
namespace {
int NotYet(const std::vector<std::string>&) { return kExitFailure; }
}  // namespace
const Subcommand kBenchPaddingCommand = {"bench-padding", "compare padding strategies (not built yet)", "usage: padless bench-padding", {}, NotYet};
}  // namespace padless::cli
