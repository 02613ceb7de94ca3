// CorpusCacheWriter: writes a tokenized corpus cache (the file TokenizedCorpus::Load maps) while
// the examples are still being encoded, so a corpus larger than memory can be cached. Tokens go
// straight to the file; type ids go to an unlinked side file next to it and are appended at the
// end; only offsets and labels (16 bytes per example) are held in memory. The file appears
// atomically on Commit() (AtomicFileWriter): a crash or an error leaves the earlier cache, if any.
//
// The bytes are exactly those TokenizedCorpus::Save writes for the same examples (Save uses this
// writer), whatever the chunking of the Add calls.
#ifndef PADLESS_CORPUS_CORPUS_CACHE_WRITER_H_
#define PADLESS_CORPUS_CORPUS_CACHE_WRITER_H_

#include <climits>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "padless/base/atomic_file_writer.h"
#include "padless/corpus/tokenized_corpus.h"

namespace padless::corpus {

namespace internal {
class BlockHasher;  // corpus_cache_writer.cc
}  // namespace internal

class CorpusCacheWriter {
 public:
  // Unavailable when the file (or its side file) cannot be created, e.g. a missing directory.
  static absl::StatusOr<std::unique_ptr<CorpusCacheWriter>> Open(const std::string& path,
                                                                 uint64_t fingerprint);
  ~CorpusCacheWriter();
  CorpusCacheWriter(const CorpusCacheWriter&) = delete;
  CorpusCacheWriter& operator=(const CorpusCacheWriter&) = delete;

  // As TokenizedCorpus::Add (type ids: all examples or none, zeros back-filled). The first write
  // error sticks and is returned by every later call.
  absl::Status Add(absl::Span<const int32_t> ids, absl::Span<const int8_t> type_ids, int64_t label);
  // Every example of `corpus`, in order.
  absl::Status AddAll(const TokenizedCorpus& corpus);

  // Rewrites the labels added so far: label L becomes new_ids[L]. For builders that learn the
  // final label ids only after the last example (a label map sorted over the whole file).
  // Negative labels (unlabeled examples) stay; InvalidArgument when a label is beyond new_ids.
  absl::Status RemapLabels(absl::Span<const int64_t> new_ids);
  void set_label_names(std::vector<std::string> names) { label_names_ = std::move(names); }

  // Appends the type ids, the index and the trailer, and moves the file into place.
  absl::Status Commit();

  int64_t examples() const { return static_cast<int64_t>(labels_.size()); }
  int64_t tokens() const { return offsets_.back(); }

 private:
  CorpusCacheWriter(std::unique_ptr<base::AtomicFileWriter> out, std::FILE* types,
                    std::string types_path, uint64_t fingerprint);
  absl::Status AppendTypeIds(absl::Span<const int8_t> type_ids, size_t zeros);
  absl::Status CopyTypeIdsToFile();
  absl::Status AppendIndexAndTrailer();
  absl::Status Write(const void* data, size_t n, bool bulk);

  std::unique_ptr<base::AtomicFileWriter> out_;
  std::FILE* types_ = nullptr;  // the side file of type ids, already unlinked
  std::string types_path_;      // for messages
  uint64_t fingerprint_ = 0;
  bool typed_ = false;
  std::unique_ptr<internal::BlockHasher> hasher_;
  uint64_t index_checksum_ = 0;
  uint64_t written_ = 0;
  int32_t min_id_ = INT32_MAX;  // over the tokens added so far
  int32_t max_id_ = INT32_MIN;
  std::vector<int64_t> offsets_{0};
  std::vector<int64_t> labels_;
  std::vector<std::string> label_names_;
  absl::Status status_;
};

}  // namespace padless::corpus

#endif  // PADLESS_CORPUS_CORPUS_CACHE_WRITER_H_
