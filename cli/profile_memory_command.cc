// Placeholder registration; the owning work replaces this file.
#include "subcommand.h"

namespace padless::cli {
namespace {
int NotYet(const std::vector<std::string>&) { return kExitFailure; }
}  // namespace
const Subcommand kProfileMemoryCommand = {"profile-memory", "memory per sequence length (not built yet)", "usage: padless profile-memory", {}, NotYet};
}  // namespace padless::cli
