// Private bridge to SentencePiece. Only spm_backend.cc includes SentencePiece's headers: Debian's
// Abseil has its own absl::string_view class, and sentencepiece_processor.h aliases
// absl::string_view to std::string_view, so the two cannot meet in one translation unit. This
// header therefore speaks std types only; errors come back as a non-empty message string.
#ifndef PADLESS_TOKENIZE_SPM_BACKEND_H_
#define PADLESS_TOKENIZE_SPM_BACKEND_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "byte_span.h"

namespace padless::tokenize::internal {

class SpmBackend {
 public:
  SpmBackend();
  ~SpmBackend();
  SpmBackend(const SpmBackend&) = delete;
  SpmBackend& operator=(const SpmBackend&) = delete;

  // Each returns "" on success, else a description of the failure.
  std::string LoadFromFile(const std::string& path);
  std::string LoadFromSerialized(const std::string& serialized);
  std::string Encode(std::string_view text, std::vector<int>* ids) const;
  // The same ids, and per id the bytes of `text` its piece came from (SentencePiece's alignment
  // through its own normalizer; the dummy-prefix "▁" alone covers no byte).
  std::string EncodeWithOffsets(std::string_view text, std::vector<int>* ids,
                                std::vector<ByteSpan>* spans) const;
  std::string Decode(const std::vector<int>& ids, std::string* text) const;

  std::string Serialized() const;
  int PieceSize() const;
  int PieceToId(std::string_view piece) const;
  std::string IdToPiece(int id) const;
  bool IsControl(int id) const;
  bool IsUnknown(int id) const;
  // The reserved ids as the model declares them (-1 when undefined).
  int pad_id() const;
  int unk_id() const;
  int bos_id() const;
  int eos_id() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Trains a model with SentencePiece's key=value options. When `next_sentence` is set it supplies
// the training sentences (returns false at the end) and the "input" option must be absent.
// On success fills `serialized_model` and returns "".
std::string TrainSpm(const std::map<std::string, std::string>& options,
                     const std::function<bool(std::string*)>& next_sentence,
                     std::string* serialized_model);

}  // namespace padless::tokenize::internal

#endif  // PADLESS_TOKENIZE_SPM_BACKEND_H_
