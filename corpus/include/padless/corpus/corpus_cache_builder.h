// BuildCorpusCache: tokenizes a labeled data file straight into a corpus cache (the file
// TokenizedCorpus::Load maps), chunk by chunk: the file is read through StreamCorpus, each chunk
// is encoded in parallel (EncodeCorpus) and appended to a CorpusCacheWriter. Memory stays at one
// chunk of texts and tokens plus 16 bytes per example, whatever the size of the file, so a corpus
// larger than memory can be tokenized. The cache holds exactly the bytes that EncodeCorpus over the
// whole file followed by TokenizedCorpus::Save would write (tests/corpus prove it).
#ifndef PADLESS_CORPUS_CORPUS_CACHE_BUILDER_H_
#define PADLESS_CORPUS_CORPUS_CACHE_BUILDER_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "padless/corpus/batch_encoder.h"
#include "padless/corpus/corpus_reader.h"
#include "padless/tokenize/tokenizer.h"

namespace padless::corpus {

struct CacheBuildOptions {
  ReaderOptions reader;
  BatchEncodeOptions encode;  // `progress` is not called
  // Examples read, encoded and appended at a time: large enough to keep the encoding threads busy,
  // small enough to be a rounding error in memory (IMDB: about 10 MB of text).
  size_t chunk_examples = 8192;
};

struct CacheBuildReport {
  ReadReport read;
  int64_t examples = 0;
  int64_t tokens = 0;
  // The label map's names in id order: LabelMap::FromLabels over the file's labels, as
  // LabelMap::FromCorpus would give, and as recorded in the cache.
  std::vector<std::string> label_names;
};

// Encodes `data_path` into a cache at `cache_path` (written atomically) with `fingerprint`.
// Label ids follow LabelMap::FromLabels of all the labels in the file: learned while streaming
// (first-seen ids) and remapped before the index is written. Errors as ReadCorpus and
// EncodeCorpus (naming file:line), and as CorpusCacheWriter.
absl::StatusOr<CacheBuildReport> BuildCorpusCache(const std::string& data_path,
                                                  const tokenize::Tokenizer& tokenizer,
                                                  const CacheBuildOptions& options,
                                                  const std::string& cache_path,
                                                  uint64_t fingerprint);

}  // namespace padless::corpus

#endif  // PADLESS_CORPUS_CORPUS_CACHE_BUILDER_H_
