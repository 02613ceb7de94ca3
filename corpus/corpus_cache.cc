#include "padless/corpus/corpus_cache.h"

#include <fstream>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "fnv1a.h"
#include "padless/base/file_kind.h"

namespace padless::corpus {

absl::StatusOr<uint64_t> CacheFingerprint(const std::vector<std::string>& files,
                                          const tokenize::Tokenizer& tokenizer,
                                          absl::string_view options_description) {
  internal::Fnv1a hash;
  std::vector<char> buffer(1 << 20);
  for (const std::string& path : files) {
    if (absl::Status s = base::CheckRegularFile(path, "data file"); !s.ok()) return s;
    std::ifstream in(path, std::ios::binary);
    if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path, " to fingerprint it"));
    uint64_t size = 0;
    while (in) {
      in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
      const auto got = static_cast<size_t>(in.gcount());
      hash.Update(buffer.data(), got);
      size += got;
    }
    if (in.bad()) return absl::DataLossError(absl::StrCat("error reading ", path));
    hash.UpdateValue(size);  // separates files, so moving bytes between them changes the hash
  }
  const std::string model = tokenizer.Serialized();
  hash.Update(model.data(), model.size());
  hash.UpdateValue(model.size());
  hash.Update(options_description.data(), options_description.size());
  return hash.value();
}

std::string DescribeOptions(const tokenize::EncodeOptions& options) {
  return absl::StrCat("max_length=", options.max_length,
                      " truncation=", tokenize::TruncationName(options.truncation),
                      " head_fraction=", options.head_fraction,
                      " pair_truncation=", tokenize::PairTruncationName(options.pair_truncation),
                      // longest_first follows tokenizers' rule since issue 45 (it followed
                      // Python's slow-tokenizer loop before): caches of the old rule are stale.
                      " longest_first_rule=tokenizers");
}

absl::StatusOr<CachedCorpus> LoadOrBuildCorpus(
    const std::string& cache_path, uint64_t fingerprint,
    const std::function<absl::StatusOr<TokenizedCorpus>()>& build) {
  CachedCorpus result;
  absl::StatusOr<TokenizedCorpus> cached = TokenizedCorpus::Load(cache_path, fingerprint);
  // The callers read the whole corpus anyway: every block is checked now, not when first read.
  if (cached.ok()) {
    if (absl::Status s = cached->VerifyAll(); !s.ok()) cached = s;
  }
  if (cached.ok()) {
    result.corpus = *std::move(cached);
    result.from_cache = true;
    return result;
  }
  result.rebuild_reason = std::string(cached.status().message());
  absl::StatusOr<TokenizedCorpus> built = build();
  if (!built.ok()) return built.status();
  result.corpus = *std::move(built);
  if (absl::Status saved = result.corpus.Save(cache_path, fingerprint); !saved.ok()) {
    result.save_error = std::string(saved.message());
  }
  return result;
}

}  // namespace padless::corpus
