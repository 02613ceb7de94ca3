// Placeholder registration; the owning work replaces this file.
#include "subcommand.h"

namespace padless::cli {
namespace {
int NotYet(const std::vector<std::string>&) { return kExitFailure; }
}  // namespace
const Subcommand kTrainCommand = {"train", "train a classifier (not built yet)", "usage: padless train", {}, NotYet};
const Subcommand kEvalCommand = {"eval", "evaluate a model (not built yet)", "usage: padless eval", {}, NotYet};
const Subcommand kPredictCommand = {"predict", "predict labels (not built yet)", "usage: padless predict", {}, NotYet};
}  // namespace padless::cli
