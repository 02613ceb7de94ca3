// TokenizedCorpus: every encoded example of a dataset in one flat int32 buffer plus int64 offsets,
// so batch builders read sequences as spans (views, never copies). It carries the labels, optional
// token type ids (for text pairs), optional label names, and a versioned, checksummed binary cache
// format.
//
// Two kinds of storage, one interface. A corpus built with Add() holds its tokens in memory. A
// corpus opened with Load() maps the cache file read-only: its tokens (and type ids) stay on disk
// until a sequence is read, so a process that reads only its shard has only that shard's pages
// resident, and a corpus larger than memory can be trained on. Offsets and labels (16 bytes per
// example) are always in memory. Copies and Subset()s of a mapped corpus share the mapping.
//
// The checksum contract of a mapped corpus: Load() verifies the file's trailer and its whole index
// (offsets, labels, label names, the table of block checksums) and rejects a corrupt, truncated,
// foreign or stale file with a Status naming it. The tokens are checked per 64 KiB block, lazily:
// VerifyExample(i) checks the blocks that example i lies in (once per block and process; a cheap
// flag test afterwards), so a rank pays for the blocks of its own shard only. Readers of a mapped
// corpus call VerifyExample before trusting tokens(i); the collator does (batching/collator.cc).
// VerifyAll() checks every block, for tools that read everything anyway.
#ifndef PADLESS_CORPUS_TOKENIZED_CORPUS_H_
#define PADLESS_CORPUS_TOKENIZED_CORPUS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace padless::corpus {

namespace internal {
struct MappedTokens;  // mapped_tokens.h
}  // namespace internal

// The smallest and largest token id of a corpus; min > max when it has no tokens.
struct TokenIdRange {
  int32_t min = 0;
  int32_t max = -1;
};

class TokenizedCorpus {
 public:
  TokenizedCorpus() : offsets_{0} {}

  // Appends one example. `type_ids` is empty for single texts; for pairs it has ids.size() entries.
  // A corpus either has type ids for every example or for none: the first example with type ids
  // back-fills zeros for the ones before it. Calling it on a mapped corpus or a subset is a
  // programming error.
  void Add(absl::Span<const int32_t> ids, absl::Span<const int8_t> type_ids, int64_t label);
  void Reserve(size_t examples, size_t tokens);

  size_t size() const { return labels_.size(); }
  bool empty() const { return labels_.empty(); }
  bool has_type_ids() const;
  // Whether the tokens are read from a mapped cache file (Load) rather than held in memory.
  bool mapped() const { return mapped_ != nullptr; }

  absl::Span<const int32_t> tokens(size_t i) const {
    return absl::MakeConstSpan(token_data() + Begin(i), static_cast<size_t>(length(i)));
  }
  // Empty span when the corpus has no type ids.
  absl::Span<const int8_t> type_ids(size_t i) const;
  int64_t label(size_t i) const { return labels_[i]; }
  int64_t length(size_t i) const { return offsets_[Row(i) + 1] - offsets_[Row(i)]; }
  int64_t total_tokens() const { return total_tokens_; }
  // Lengths of all examples, in order: the input of the batching planner.
  std::vector<int64_t> Lengths() const;

  // The underlying token array and its offsets (n + 1); for a Subset(), those of the corpus it was
  // taken from, so prefer tokens(i).
  absl::Span<const int32_t> flat_tokens() const;
  const std::vector<int64_t>& offsets() const { return offsets_; }
  const std::vector<int64_t>& labels() const { return labels_; }

  // The names of the label ids (id i is label_names()[i]), when the builder recorded them; saved
  // in the cache so that a job reading it needs no pass over the raw data for its label map.
  const std::vector<std::string>& label_names() const { return label_names_; }
  void set_label_names(std::vector<std::string> names) { label_names_ = std::move(names); }

  // For an in-memory corpus, computed from the tokens; for a mapped one, recorded in the cache
  // (and checked against every block that is verified), so no token needs to be read.
  TokenIdRange token_id_range() const;

  // OK for an in-memory corpus. For a mapped one, verifies the checksums of the blocks example i
  // lies in (see the header comment): DataLoss naming the file and the block when one is corrupt.
  // Thread-safe.
  absl::Status VerifyExample(size_t i) const;
  // Every block (and, for a mapped corpus, the recorded token id range exactly).
  absl::Status VerifyAll() const;

  // The examples at `indices` (ascending or not), in that order. A mapped corpus shares its
  // mapping (nothing but 24 bytes per example is copied); an in-memory one is copied.
  TokenizedCorpus Subset(absl::Span<const size_t> indices) const;

  // Binary cache (format: cache_format.h; written by CorpusCacheWriter, which streams).
  // `fingerprint` identifies what produced the corpus (data file, model, options); Load fails with
  // a clear status when the file is missing, not a regular file, corrupt, truncated, of another
  // version, or was built from a different fingerprint, so the caller rebuilds instead of reading
  // garbage. Save on a mapped corpus verifies it first.
  absl::Status Save(const std::string& path, uint64_t fingerprint) const;
  static absl::StatusOr<TokenizedCorpus> Load(const std::string& path, uint64_t fingerprint);

 private:
  friend class CorpusCacheReader;  // tokenized_corpus_load.cc fills a mapped corpus

  size_t Row(size_t i) const { return rows_.empty() ? i : static_cast<size_t>(rows_[i]); }
  int64_t Begin(size_t i) const { return offsets_[Row(i)]; }
  const int32_t* token_data() const;
  const int8_t* type_id_data() const;

  // In-memory storage.
  std::vector<int32_t> tokens_;
  std::vector<int8_t> type_ids_;
  // Mapped storage, shared by copies and subsets.
  std::shared_ptr<const internal::MappedTokens> mapped_;
  std::vector<int64_t> offsets_;
  // A subset of a mapped corpus: the underlying example of each of its examples.
  std::vector<int64_t> rows_;
  std::vector<int64_t> labels_;
  std::vector<std::string> label_names_;
  int64_t total_tokens_ = 0;
};

}  // namespace padless::corpus

#endif  // PADLESS_CORPUS_TOKENIZED_CORPUS_H_
