// The only translation unit of padless_tokenize that sees SentencePiece (see spm_backend.h for
// why). It must not include any Abseil string header.
#include "spm_backend.h"

#include <unordered_map>
#include <utility>

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

namespace padless::tokenize::internal {
namespace {

std::string Message(const sentencepiece::util::Status& status) {
  if (status.ok()) return "";
  std::string message = status.ToString();
  return message.empty() ? std::string("sentencepiece error") : message;
}

// Adapts a pull function to SentencePiece's iterator interface for in-memory training.
class FunctionIterator : public sentencepiece::SentenceIterator {
 public:
  explicit FunctionIterator(const std::function<bool(std::string*)>& next) : next_(next) { Next(); }
  bool done() const override { return done_; }
  void Next() override { done_ = !next_(&value_); }
  const std::string& value() const override { return value_; }
  sentencepiece::util::Status status() const override { return sentencepiece::util::Status(); }

 private:
  const std::function<bool(std::string*)>& next_;
  std::string value_;
  bool done_ = false;
};

}  // namespace

struct SpmBackend::Impl {
  sentencepiece::SentencePieceProcessor processor;
};

SpmBackend::SpmBackend() : impl_(std::make_unique<Impl>()) {}
SpmBackend::~SpmBackend() = default;

std::string SpmBackend::LoadFromFile(const std::string& path) {
  return Message(impl_->processor.Load(path));
}

std::string SpmBackend::LoadFromSerialized(const std::string& serialized) {
  return Message(impl_->processor.LoadFromSerializedProto(serialized));
}

std::string SpmBackend::Encode(std::string_view text, std::vector<int>* ids) const {
  return Message(impl_->processor.Encode(text, ids));
}

std::string SpmBackend::EncodeWithOffsets(std::string_view text, std::vector<int>* ids,
                                          std::vector<ByteSpan>* spans) const {
  ids->clear();
  spans->clear();
  sentencepiece::ImmutableSentencePieceText pieces;
  const std::string error = Message(impl_->processor.Encode(text, pieces.mutable_proto()));
  if (!error.empty()) return error;
  for (const auto& piece : pieces.pieces()) {
    ids->push_back(static_cast<int>(piece.id()));
    spans->push_back(ByteSpan{piece.begin(), piece.end()});
  }
  return "";
}

std::string SpmBackend::Decode(const std::vector<int>& ids, std::string* text) const {
  return Message(impl_->processor.Decode(ids, text));
}

std::string SpmBackend::Serialized() const { return impl_->processor.serialized_model_proto(); }
int SpmBackend::PieceSize() const { return impl_->processor.GetPieceSize(); }
int SpmBackend::PieceToId(std::string_view piece) const {
  return impl_->processor.PieceToId(piece);
}
std::string SpmBackend::IdToPiece(int id) const { return impl_->processor.IdToPiece(id); }
bool SpmBackend::IsControl(int id) const { return impl_->processor.IsControl(id); }
bool SpmBackend::IsUnknown(int id) const { return impl_->processor.IsUnknown(id); }
int SpmBackend::pad_id() const { return impl_->processor.pad_id(); }
int SpmBackend::unk_id() const { return impl_->processor.unk_id(); }
int SpmBackend::bos_id() const { return impl_->processor.bos_id(); }
int SpmBackend::eos_id() const { return impl_->processor.eos_id(); }

std::string TrainSpm(const std::map<std::string, std::string>& options,
                     const std::function<bool(std::string*)>& next_sentence,
                     std::string* serialized_model) {
  const std::unordered_map<std::string, std::string> kwargs(options.begin(), options.end());
  if (next_sentence) {
    FunctionIterator iterator(next_sentence);
    return Message(sentencepiece::SentencePieceTrainer::Train(kwargs, &iterator, serialized_model));
  }
  return Message(sentencepiece::SentencePieceTrainer::Train(kwargs, nullptr, serialized_model));
}

}  // namespace padless::tokenize::internal
