// A subcommand of the padless tool: its name, a one-line summary, its usage text, and the function
// that runs it with the positional arguments left after flag parsing. Exit codes: 0 success,
// 1 runtime failure (bad data, bad paths, I/O), 2 usage error (bad or missing flags); the rule
// and the one error format are in cli_util.h.
#ifndef PADLESS_CLI_SUBCOMMAND_H_
#define PADLESS_CLI_SUBCOMMAND_H_

#include <string>
#include <vector>

namespace padless::cli {

constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

struct Subcommand {
  const char* name;
  const char* summary;
  const char* usage;
  // Names of the flags this subcommand reads (common ones included); any other flag given on the
  // command line is a usage error, and `--help` lists exactly these.
  std::vector<std::string> flags;
  // `args` are the positional arguments after the subcommand name (e.g. `train` in
  // `padless tokenize train`).
  int (*run)(const std::vector<std::string>& args);
};

// Each subcommand file defines one of these; main.cc lists them.
extern const Subcommand kTokenizeCommand;       // tokenize_command.cc
extern const Subcommand kBenchPaddingCommand;   // bench_padding_command.cc
extern const Subcommand kTrainCommand;          // train_command.cc
extern const Subcommand kEvalCommand;           // eval_command.cc
extern const Subcommand kPredictCommand;        // predict_command.cc
extern const Subcommand kEmbedCommand;          // embed_command.cc
extern const Subcommand kProfileMemoryCommand;  // profile_memory_command.cc
extern const Subcommand kExportHfCommand;       // export_hf_command.cc
extern const Subcommand kServeCommand;          // serve_command.cc
extern const Subcommand kPruneCommand;          // prune_command.cc

}  // namespace padless::cli

#endif  // PADLESS_CLI_SUBCOMMAND_H_
