#include "padless/corpus/corpus_cache_builder.h"

#include <memory>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "padless/corpus/corpus_cache_writer.h"
#include "padless/corpus/label_map.h"

namespace padless::corpus {
namespace {

// The label ids of a file whose labels are seen a chunk at a time: first-seen ids while
// streaming, and at the end the remap to the ids LabelMap::FromLabels gives over all of them.
class StreamingLabels {
 public:
  // The map for encoding `chunk`: the labels seen so far, in first-seen order.
  absl::StatusOr<LabelMap> For(const std::vector<Example>& chunk) {
    for (const Example& e : chunk) {
      if (!e.label.empty() && seen_.insert(e.label).second) names_.push_back(e.label);
    }
    return LabelMap::FromNames(names_);
  }

  LabelMap Final() const { return LabelMap::FromLabels(names_); }

  // new_ids[first-seen id] = final id.
  std::vector<int64_t> Remap(const LabelMap& final_map) const {
    std::vector<int64_t> new_ids;
    for (const std::string& name : names_) new_ids.push_back(*final_map.Id(name));
    return new_ids;
  }

 private:
  absl::flat_hash_set<std::string> seen_;
  std::vector<std::string> names_;
};

}  // namespace

absl::StatusOr<CacheBuildReport> BuildCorpusCache(const std::string& data_path,
                                                  const tokenize::Tokenizer& tokenizer,
                                                  const CacheBuildOptions& options,
                                                  const std::string& cache_path,
                                                  uint64_t fingerprint) {
  absl::StatusOr<std::unique_ptr<CorpusCacheWriter>> writer =
      CorpusCacheWriter::Open(cache_path, fingerprint);
  if (!writer.ok()) return writer.status();
  StreamingLabels labels;
  BatchEncodeOptions encode = options.encode;
  encode.progress = nullptr;
  RawCorpus chunk;
  chunk.source = data_path;
  absl::StatusOr<ReadReport> read = StreamCorpus(
      data_path, options.reader, options.chunk_examples, [&](std::vector<Example>& examples) {
        absl::StatusOr<LabelMap> map = labels.For(examples);
        if (!map.ok()) return map.status();
        chunk.examples = std::move(examples);
        absl::StatusOr<TokenizedCorpus> encoded = EncodeCorpus(tokenizer, chunk, *map, encode);
        if (!encoded.ok()) return encoded.status();
        return (*writer)->AddAll(*encoded);
      });
  if (!read.ok()) return read.status();
  const LabelMap final_map = labels.Final();
  // Unlabeled examples keep -1 (EncodeCorpus); the remap needs ids >= 0, so they stay out of it.
  if (absl::Status s = (*writer)->RemapLabels(labels.Remap(final_map)); !s.ok()) return s;
  (*writer)->set_label_names(final_map.names());
  CacheBuildReport report;
  report.read = *read;
  report.examples = (*writer)->examples();
  report.tokens = (*writer)->tokens();
  report.label_names = final_map.names();
  if (absl::Status s = (*writer)->Commit(); !s.ok()) return s;
  return report;
}

}  // namespace padless::corpus
