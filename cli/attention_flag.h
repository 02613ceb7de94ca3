// --attention, defined here and read by train, predict, embed and serve through AttentionFlag(),
// so that its names and its message are written once.
#ifndef PADLESS_CLI_ATTENTION_FLAG_H_
#define PADLESS_CLI_ATTENTION_FLAG_H_

#include <string>

#include "absl/flags/declare.h"
#include "absl/status/statusor.h"
#include "padless/models/attention.h"

ABSL_DECLARE_FLAG(std::string, attention);

namespace padless::cli {

// --attention as a backend (models::ParseAttentionBackend's names); for another name an
// InvalidArgument marked as a usage error, naming the flag as written and the valid choices.
absl::StatusOr<models::AttentionBackend> AttentionFlag();

}  // namespace padless::cli

#endif  // PADLESS_CLI_ATTENTION_FLAG_H_
