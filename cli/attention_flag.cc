#include "attention_flag.h"

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "cli_util.h"
#include "flag_spelling.h"

ABSL_FLAG(std::string, attention, "auto",
          "Attention backend: auto (from the batch layout, device and precision; on an sm90 GPU "
          "FA3 where built for batches averaging 128 tokens a sequence or more), dense, flash, "
          "efficient, grouped (CPU varlen by length groups), reference, cudnn (cuDNN's fused "
          "attention, sm90, where built) or fa3 (FlashAttention-3, sm90, where built; FA2 for the "
          "calls it cannot run, such as those with dropout). flash, efficient, cudnn and fa3 need "
          "CUDA");

namespace padless::cli {

absl::StatusOr<models::AttentionBackend> AttentionFlag() {
  absl::StatusOr<models::AttentionBackend> backend =
      models::ParseAttentionBackend(absl::GetFlag(FLAGS_attention));
  if (backend.ok()) return backend;
  return UsageError(absl::StrCat(FlagAsWritten("attention"), ": ", backend.status().message()));
}

}  // namespace padless::cli
