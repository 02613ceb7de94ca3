// Sees SentencePiece's headers, so it includes no Abseil header (see tokenize/spm_backend.h).
#include "spm_reference.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <unordered_map>

namespace padless::tokenize::testing {

bool ReferenceEncode(const std::string& serialized_model, const std::vector<std::string>& texts,
                     std::vector<std::vector<int>>* ids, std::string* error) {
  sentencepiece::SentencePieceProcessor processor;
  auto status = processor.LoadFromSerializedProto(serialized_model);
  if (!status.ok()) {
    *error = status.ToString();
    return false;
  }
  ids->assign(texts.size(), {});
  for (size_t i = 0; i < texts.size(); ++i) {
    status = processor.Encode(texts[i], &(*ids)[i]);
    if (!status.ok()) {
      *error = status.ToString();
      return false;
    }
  }
  return true;
}

std::string TrainDefaultLayoutModel(const std::string& text_file, int vocab_size,
                                    std::string* error) {
  std::string serialized;
  const auto status = sentencepiece::SentencePieceTrainer::Train(
      std::unordered_map<std::string, std::string>{
          {"input", text_file}, {"vocab_size", std::to_string(vocab_size)}, {"minloglevel", "2"}},
      nullptr, &serialized);
  if (!status.ok()) *error = status.ToString();
  return serialized;
}

}  // namespace padless::tokenize::testing
