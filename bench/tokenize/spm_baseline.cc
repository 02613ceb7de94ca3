// Sees SentencePiece's headers, so it includes no Abseil header (see tokenize/spm_backend.h).
#include "spm_baseline.h"

#include <sentencepiece_processor.h>

namespace padless::bench {

struct SpmBaseline::Impl {
  sentencepiece::SentencePieceProcessor processor;
};

SpmBaseline::SpmBaseline() : impl_(std::make_unique<Impl>()) {}
SpmBaseline::~SpmBaseline() = default;

std::string SpmBaseline::Load(const std::string& serialized_model) {
  const auto status = impl_->processor.LoadFromSerializedProto(serialized_model);
  return status.ok() ? "" : status.ToString();
}

int64_t SpmBaseline::EncodeAll(const std::vector<std::string>& texts) const {
  std::vector<int> ids;
  int64_t tokens = 0;
  for (const std::string& text : texts) {
    if (!impl_->processor.Encode(text, &ids).ok()) return -1;
    tokens += static_cast<int64_t>(ids.size());
  }
  return tokens;
}

}  // namespace padless::bench
