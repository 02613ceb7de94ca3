// "Load the cached TokenizedCorpus or build and save it": the cache is keyed by a fingerprint of
// the data file(s), the tokenizer model and the encoding options, so a changed input, model or
// option, or a corrupt or truncated cache file, leads to a rebuild instead of stale data.
#ifndef PADLESS_CORPUS_CORPUS_CACHE_H_
#define PADLESS_CORPUS_CORPUS_CACHE_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "padless/corpus/tokenized_corpus.h"
#include "padless/tokenize/tokenizer.h"

namespace padless::corpus {

// A stable 64-bit fingerprint of the contents of `files` (in order), the model's serialized bytes
// and a free-form description of everything else that shapes the output (options, label map).
absl::StatusOr<uint64_t> CacheFingerprint(const std::vector<std::string>& files,
                                          const tokenize::Tokenizer& tokenizer,
                                          absl::string_view options_description);

// A canonical description of EncodeOptions for CacheFingerprint.
std::string DescribeOptions(const tokenize::EncodeOptions& options);

struct CachedCorpus {
  TokenizedCorpus corpus;
  bool from_cache = false;
  // Why the cache was not used ("missing", "checksum mismatch", ...); empty on a hit.
  std::string rebuild_reason;
  // Non-empty when the rebuilt corpus could not be saved (the corpus is still returned).
  std::string save_error;
};

// Loads (maps) `cache_path` if it holds a valid cache with `fingerprint`, all of its blocks
// verified (the callers read every example); otherwise calls `build` and
// saves its result there (atomically). Only an error from `build` is returned as an error.
absl::StatusOr<CachedCorpus> LoadOrBuildCorpus(
    const std::string& cache_path, uint64_t fingerprint,
    const std::function<absl::StatusOr<TokenizedCorpus>()>& build);

}  // namespace padless::corpus

#endif  // PADLESS_CORPUS_CORPUS_CACHE_H_
