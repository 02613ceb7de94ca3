// The one check of every path flag, run before any work starts and before anything is written,
// so that a bad path fails at once with a message that names the flag as the user wrote it, the
// path, and what is wrong:  "--data /tmp/somedir: is a directory, expected a file".
//
// Exit codes (cli_util.h): every error returned here is about what the path names on disk, so it
// is a failure (exit 1), never a usage error. An empty path is skipped: whether a flag is required
// is a usage question the subcommand answers first (exit 2). Callers check their flag values
// (usage errors) before the paths, so a bad value is reported even when a path is bad too.
//
// What is checked, by PathUse:
//   input files:  exists; a regular file (not a directory, FIFO, socket or device: padless reads
//                 input files whole, and opening a FIFO would block); readable (opened, not just
//                 access(2), so it holds for root too); not empty; for text files also not binary:
//                 no NUL byte and at most 1 invalid UTF-8 sequence per 8 bytes in the first 64 KiB
//                 (a few invalid sequences are text with a wrong byte, which the corpus reader
//                 repairs and counts).
//   input dirs:   exists; a directory; readable; holds the required members (e.g. config.json).
//   output files: not a directory or other non-regular file; an existing file is writable; its
//                 directory exists and is writable.
//   output dirs:  an existing directory that is writable, or a path whose nearest existing
//                 ancestor is a writable directory (so it can be created); never an existing file.
#ifndef PADLESS_CLI_PATH_CHECKS_H_
#define PADLESS_CLI_PATH_CHECKS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace padless::cli {

enum class PathUse {
  kInputTextFile,         // a data file: TSV, CSV, JSONL or plain text
  kInputFile,             // any content, e.g. a SentencePiece model
  kInputDirectory,        // e.g. a trained model directory
  kInputFileOrDirectory,  // e.g. a tokenizer: its file, or a model directory holding it
  kOutputFile,
  kOutputDirectory,
};

struct PathFlag {
  std::string flag;  // the flag's definition name, e.g. "data" or "metrics_json"
  std::string path;  // its value; empty: not given, nothing to check
  PathUse use = PathUse::kInputTextFile;
  // Directories: members that must all be present, e.g. {"config.json"}.
  std::vector<std::string> required_members = {};
  // Directories: at least one of these must be present, e.g. {"tokenizer.model",
  // "tokenizer.json"}. Empty: no such requirement.
  std::vector<std::string> any_member = {};
};

// OK, or the error for `flag` (see above).
absl::Status CheckPathFlag(const PathFlag& flag);

// The first error among `flags`, in order.
absl::Status CheckPathFlags(const std::vector<PathFlag>& flags);

}  // namespace padless::cli

#endif  // PADLESS_CLI_PATH_CHECKS_H_
