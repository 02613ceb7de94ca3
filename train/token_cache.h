// Private to train_job.cc: tokenize once. `padless train` encodes its training file into a
// memory-mapped corpus cache (corpus/corpus_cache_builder.h) once, reuses it while the data, the
// tokenizer and the encoding options are unchanged, and every rank of a data-parallel job maps a
// copy on its node's disk: rank 0 opens or builds its own before the other ranks are let in (they
// wait at the job's start barrier, bounded by --dist-timeout); then the first rank of every other
// node opens or builds the one on its disk, once all nodes agreed on rank 0's fingerprint, and the
// node's other ranks only map it (node_inputs.h). Each rank then reads the pages of its own
// batches only.
#ifndef PADLESS_TRAIN_TOKEN_CACHE_H_
#define PADLESS_TRAIN_TOKEN_CACHE_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "padless/corpus/tokenized_corpus.h"
#include "padless/tokenize/tokenizer.h"
#include "padless/train/train_job.h"

namespace padless::train {

// TrainJobOptions::token_cache, or DIR/kTokenCacheFile of the model directory.
std::string TokenCachePath(const TrainJobOptions& o);

// What identifies the cache's content: the data file's bytes, the tokenizer, and every option that
// shapes the encoding or the reading (max_len, truncation, the reader's format and fields).
absl::StatusOr<uint64_t> TokenCacheFingerprint(const TrainJobOptions& o,
                                               const tokenize::Tokenizer& tokenizer);

struct OpenedTokenCache {
  std::string path;
  corpus::TokenizedCorpus corpus;  // mapped; label_names() name its label ids
  uint64_t fingerprint = 0;
  enum class How { kHit, kBuilt, kMapped } how = How::kHit;  // kMapped: rank `opened_by` opened it
  int opened_by = 0;
  double seconds = 0;
};

// Rank 0, a single process, or the first rank of a node: maps the cache when it matches
// `fingerprint`, else builds it from the data file (streaming) and maps it. Says which on stderr
// unless `quiet`.
absl::StatusOr<OpenedTokenCache> OpenOrBuildTokenCache(const TrainJobOptions& o,
                                                       const tokenize::Tokenizer& tokenizer,
                                                       uint64_t fingerprint);
// A node's other ranks: maps the cache that rank `opened_by`, the node's first, opened; never
// builds. A one-line note on stderr unless `quiet`, so a job's log shows that the rank did not
// tokenize.
absl::StatusOr<OpenedTokenCache> MapNodesTokenCache(const TrainJobOptions& o, uint64_t fingerprint,
                                                    int opened_by, bool quiet);

// The cached corpus split into the training set and the held-out dev share of `fraction` (the
// examples corpus::SplitOff would draw with `seed`), both subsets of the mapping; no dev set when
// `fraction` is 0.
struct CachedSplit {
  corpus::TokenizedCorpus train;
  std::optional<corpus::TokenizedCorpus> dev;
};
CachedSplit HoldOutOfCache(const corpus::TokenizedCorpus& corpus, double fraction, uint64_t seed);

}  // namespace padless::train

#endif  // PADLESS_TRAIN_TOKEN_CACHE_H_
