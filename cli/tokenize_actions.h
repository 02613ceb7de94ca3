// The actions of `padless tokenize`, one file each; tokenize_command.cc dispatches to them with
// the positional arguments after the action's name. Usage errors are marked (cli_util.h
// UsageError); the dispatcher reports every error under "tokenize <action>".
#ifndef PADLESS_CLI_TOKENIZE_ACTIONS_H_
#define PADLESS_CLI_TOKENIZE_ACTIONS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace padless::cli {

// tokenize train: trains a SentencePiece model (tokenize_train_command.cc).
absl::Status TokenizeTrain(const std::vector<std::string>& rest);

// tokenize encode: encodes a labeled corpus into the token cache, or writes its ids
// (tokenize_encode_command.cc).
absl::Status TokenizeEncode(const std::vector<std::string>& rest);

// tokenize stats: prints the token-length distribution of a corpus (tokenize_stats_command.cc).
absl::Status TokenizeStats(const std::vector<std::string>& rest);

}  // namespace padless::cli

#endif  // PADLESS_CLI_TOKENIZE_ACTIONS_H_
