// Private to train_job.cc: tokenize once. `padless train` encodes its training file into a
// memory-mapped corpus cache (corpus/corpus_cache_builder.h) once, reuses it while the data, the
// tokenizer and the encoding options are unchanged, and every rank of a data-parallel job maps the
// same file: rank 0 opens or builds it before the other ranks are let in (they wait at the job's
// start barrier, bounded by --dist-timeout), and they only map it, with the fingerprint rank 0
// checked. Each rank then reads the pages of its own batches only.
#ifndef PADLESS_TRAIN_TOKEN_CACHE_H_
#define PADLESS_TRAIN_TOKEN_CACHE_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "padless/corpus/tokenized_corpus.h"
#include "padless/distributed/data_parallel.h"
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
  enum class How { kHit, kBuilt, kMapped } how = How::kHit;  // kMapped: rank 0 opened it
  double seconds = 0;
};

// Rank 0 (or a single process): maps the cache when it matches `fingerprint`, else builds it from
// the data file (streaming) and maps it. Says which on stderr unless `quiet`.
absl::StatusOr<OpenedTokenCache> OpenOrBuildTokenCache(const TrainJobOptions& o,
                                                       const tokenize::Tokenizer& tokenizer,
                                                       uint64_t fingerprint);
// The other ranks: maps the cache rank 0 opened; never builds. A one-line note on stderr unless
// `quiet`, so a job's log shows that the rank did not tokenize.
absl::StatusOr<OpenedTokenCache> MapRankZerosTokenCache(const TrainJobOptions& o,
                                                        uint64_t fingerprint, bool quiet);

// Rank 0's fingerprint on every rank (a collective: every rank calls it once, at the same point).
absl::StatusOr<uint64_t> ShareFingerprint(const distributed::DataParallel& dp, uint64_t mine);

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
