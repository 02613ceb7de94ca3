// TokenizedCorpus: every encoded example of a dataset in one flat int32 buffer plus int64 offsets,
// so batch builders read sequences as spans (views, never copies). It carries the labels, optional
// token type ids (for text pairs) and a versioned, checksummed binary cache format.
#ifndef PADLESS_TOKENIZE_TOKENIZED_CORPUS_H_
#define PADLESS_TOKENIZE_TOKENIZED_CORPUS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace padless::tokenize {

class TokenizedCorpus {
 public:
  TokenizedCorpus() : offsets_{0} {}

  // Appends one example. `type_ids` is empty for single texts; for pairs it has ids.size() entries.
  // A corpus either has type ids for every example or for none (mixing is a programming error).
  void Add(absl::Span<const int32_t> ids, absl::Span<const int8_t> type_ids, int64_t label);
  void Reserve(size_t examples, size_t tokens);

  size_t size() const { return labels_.size(); }
  bool empty() const { return labels_.empty(); }
  bool has_type_ids() const { return !type_ids_.empty(); }

  absl::Span<const int32_t> tokens(size_t i) const {
    return absl::MakeConstSpan(tokens_.data() + offsets_[i], offsets_[i + 1] - offsets_[i]);
  }
  // Empty span when the corpus has no type ids.
  absl::Span<const int8_t> type_ids(size_t i) const {
    if (type_ids_.empty()) return {};
    return absl::MakeConstSpan(type_ids_.data() + offsets_[i], offsets_[i + 1] - offsets_[i]);
  }
  int64_t label(size_t i) const { return labels_[i]; }
  int64_t length(size_t i) const { return offsets_[i + 1] - offsets_[i]; }
  int64_t total_tokens() const { return offsets_.back(); }
  // Lengths of all examples, in order: the input of the batching planner.
  std::vector<int64_t> Lengths() const;

  const std::vector<int32_t>& flat_tokens() const { return tokens_; }
  const std::vector<int64_t>& offsets() const { return offsets_; }
  const std::vector<int64_t>& labels() const { return labels_; }

  // Binary cache. `fingerprint` identifies what produced the corpus (data file, model, options);
  // Load fails with a clear status when the file is corrupt, truncated, of another version, or
  // was built from a different fingerprint, so the caller rebuilds instead of reading garbage.
  absl::Status Save(const std::string& path, uint64_t fingerprint) const;
  static absl::StatusOr<TokenizedCorpus> Load(const std::string& path, uint64_t fingerprint);

 private:
  std::vector<int32_t> tokens_;
  std::vector<int8_t> type_ids_;
  std::vector<int64_t> offsets_;
  std::vector<int64_t> labels_;
};

}  // namespace padless::tokenize

#endif  // PADLESS_TOKENIZE_TOKENIZED_CORPUS_H_
