// Fuzzes the TokenizedCorpus cache loader (TokenizedCorpus::Load, VerifyAll and
// LoadOrBuildCorpus) on arbitrary files. The first input byte can ask the harness to repair the
// trailer's fingerprint and file size, the index checksum and the block checksums (cache_format.h),
// so mutations get past the checksums to the structural checks.
// Invariants: an accepted and verified file describes a consistent corpus and saves back to the
// same bytes; a rejected one names the file and makes LoadOrBuildCorpus rebuild and leave a
// loadable cache.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cache_format.h"
#include "fuzz_util.h"
#include "padless/corpus/corpus_cache.h"
#include "padless/corpus/tokenized_corpus.h"

namespace padless::corpus {
namespace {

constexpr uint64_t kFingerprint = 0x7061646c65737321ull;

// Repairs what `mode` asks for in a file whose last 128 bytes are taken as its trailer.
void Repair(std::string* file, uint8_t mode) {
  internal::CacheTrailer t;
  if (file->size() < sizeof(t)) return;
  const size_t trailer_at = file->size() - sizeof(t);
  std::memcpy(&t, file->data() + trailer_at, sizeof(t));
  if (mode & 1) t.fingerprint = kFingerprint;
  if (mode & 2) t.file_bytes = file->size();
  const bool typed = (t.flags & internal::kFlagTypeIds) != 0;
  const uint64_t bulk = t.num_tokens < file->size() ? internal::BulkBytes(t.num_tokens, typed) : 0;
  const uint64_t index_at = internal::PaddedTo8(bulk);
  const uint64_t sums_at = index_at + (2 * t.num_examples + 1) * 8;
  const uint64_t blocks = internal::NumBlocks(bulk, internal::kCacheBlockBytes);
  const bool fits = t.num_examples < file->size() && sums_at + blocks * 8 <= trailer_at;
  if ((mode & 8) && fits) {
    for (uint64_t k = 0; k < blocks; ++k) {
      const uint64_t begin = k * internal::kCacheBlockBytes;
      const uint64_t n = std::min<uint64_t>(bulk - begin, internal::kCacheBlockBytes);
      const uint64_t sum = internal::BlockChecksum(k, file->data() + begin, n);
      std::memcpy(&(*file)[sums_at + k * 8], &sum, sizeof(sum));
    }
  }
  if ((mode & 4) && fits) {
    internal::Fnv1a sum;
    sum.Update(file->data() + index_at, trailer_at - index_at);
    t.index_checksum = sum.value();
  }
  if (mode & 7) t.trailer_checksum = internal::TrailerChecksum(t);
  std::memcpy(&(*file)[trailer_at], &t, sizeof(t));
}

void CheckCorpus(const TokenizedCorpus& c) {
  const std::vector<int64_t>& off = c.offsets();
  FUZZ_CHECK(off.size() == c.size() + 1 && c.labels().size() == c.size(), "array sizes");
  FUZZ_CHECK(off.front() == 0 && off.back() == c.total_tokens() &&
                 static_cast<size_t>(c.total_tokens()) == c.flat_tokens().size(),
             absl::StrCat("offsets end at ", off.back(), " of ", c.flat_tokens().size()));
  int64_t sum = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    FUZZ_CHECK(c.length(i) >= 0, absl::StrCat("negative length at ", i));
    FUZZ_CHECK(c.tokens(i).size() == static_cast<size_t>(c.length(i)), "span size");
    FUZZ_CHECK(c.type_ids(i).size() == (c.has_type_ids() ? c.tokens(i).size() : 0), "type ids");
    sum += c.length(i);
  }
  FUZZ_CHECK(sum == c.total_tokens(), "lengths do not add up");
}

}  // namespace
}  // namespace padless::corpus

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace padless::corpus;  // NOLINT: a fuzz entry point
  using padless::fuzz::ReadWholeFile;
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  std::string file(reinterpret_cast<const char*>(data) + 1, size - 1);
  Repair(&file, mode);
  const std::string path = padless::fuzz::WriteScratchFile("cache.bin", file);
  absl::StatusOr<TokenizedCorpus> loaded = TokenizedCorpus::Load(path, kFingerprint);
  if (loaded.ok()) CheckCorpus(*loaded);
  const absl::Status verified = loaded.ok() ? loaded->VerifyAll() : loaded.status();
  if (verified.ok()) {
    // Every trailer and index field is checked, so an accepted file is exactly what Save writes.
    const std::string copy = padless::fuzz::ScratchDir() + "/copy.bin";
    FUZZ_CHECK(loaded->Save(copy, kFingerprint).ok(), "Save failed");
    FUZZ_CHECK(ReadWholeFile(copy) == file, "an accepted cache does not save back identically");
    absl::StatusOr<CachedCorpus> cached =
        LoadOrBuildCorpus(path, kFingerprint, []() -> absl::StatusOr<TokenizedCorpus> {
          padless::fuzz::Fail(__FILE__, __LINE__, "rebuilt", "a valid cache was rebuilt");
        });
    FUZZ_CHECK(cached.ok() && cached->from_cache && cached->rebuild_reason.empty() &&
                   cached->corpus.flat_tokens() == loaded->flat_tokens() &&
                   cached->corpus.offsets() == loaded->offsets() &&
                   cached->corpus.labels() == loaded->labels() &&
                   cached->corpus.label_names() == loaded->label_names(),
               "LoadOrBuildCorpus differs from Load");
    return 0;
  }
  FUZZ_CHECK(absl::StrContains(verified.message(), path),
             absl::StrCat("error does not name the file: ", verified.message()));
  // A rejected cache is rebuilt and replaced by one that loads.
  TokenizedCorpus rebuilt;
  const int32_t ids[] = {2, static_cast<int32_t>(size), 3};
  rebuilt.Add(ids, {}, mode);
  absl::StatusOr<CachedCorpus> cached = LoadOrBuildCorpus(
      path, kFingerprint, [&]() -> absl::StatusOr<TokenizedCorpus> { return rebuilt; });
  FUZZ_CHECK(cached.ok() && !cached->from_cache && !cached->rebuild_reason.empty() &&
                 cached->save_error.empty(),
             "LoadOrBuildCorpus did not rebuild");
  absl::StatusOr<TokenizedCorpus> again = TokenizedCorpus::Load(path, kFingerprint);
  FUZZ_CHECK(again.ok() && again->VerifyAll().ok() && again->flat_tokens() == rebuilt.flat_tokens(),
             "the rebuilt cache does not load");
  return 0;
}
