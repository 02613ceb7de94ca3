// Parsing and printing of checkpoint policies (see checkpoint_policy.h).
#include "padless/models/checkpoint_policy.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"

namespace padless::models {

absl::StatusOr<CheckpointPolicy> CheckpointPolicy::Parse(const std::string& text) {
  if (text == "none") return None();
  if (text == "all") return All();
  CheckpointPolicy p = All();
  absl::string_view rest = text;
  bool block = true;
  if (absl::ConsumePrefix(&rest, "ffn")) {
    p.scope = CheckpointScope::kFfn;
  } else if (absl::ConsumePrefix(&rest, "attn")) {
    p.scope = CheckpointScope::kAttention;
  } else if (absl::ConsumePrefix(&rest, "selective")) {
    p.scope = CheckpointScope::kSelective;
  } else {
    block = false;
  }
  if (block && rest.empty()) return p;
  if (!block || absl::ConsumePrefix(&rest, "/")) {
    int64_t k = 0;
    if (absl::ConsumePrefix(&rest, "every:") && absl::SimpleAtoi(rest, &k) && k >= 1) {
      p.every = k;
      return p;
    }
    if (absl::ConsumePrefix(&rest, "keep_last:") && absl::SimpleAtoi(rest, &k) && k >= 1) {
      p.keep_last = k;
      return p;
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat("checkpoint: bad policy '", text,
                   "' (expected none, all, every:K, keep_last:K (K >= 1), ffn, attn or "
                   "selective, the last three optionally followed by /every:K or /keep_last:K)"));
}

std::string CheckpointPolicy::ToString() const {
  if (every == 0) return "none";
  std::string layers;
  if (keep_last > 0) {
    layers = absl::StrCat("keep_last:", keep_last);
    if (every > 1) absl::StrAppend(&layers, " (every:", every, ")");  // not from Parse
  } else if (every > 1) {
    layers = absl::StrCat("every:", every);
  }
  const char* block = scope == CheckpointScope::kFfn         ? "ffn"
                      : scope == CheckpointScope::kAttention ? "attn"
                      : scope == CheckpointScope::kSelective ? "selective"
                                                             : "";
  if (*block == '\0') return layers.empty() ? "all" : layers;
  return layers.empty() ? block : absl::StrCat(block, "/", layers);
}

}  // namespace padless::models
