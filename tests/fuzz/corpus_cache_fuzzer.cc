// Fuzzes the TokenizedCorpus cache loader (TokenizedCorpus::Load and LoadOrBuildCorpus) on
// arbitrary files. The first input byte can ask the harness to repair the header's checksum,
// payload size and fingerprint, so mutations get past the checksum to the structural checks.
// Invariants: an accepted file describes a consistent corpus and saves back to the same bytes; a
// rejected one names the file and makes LoadOrBuildCorpus rebuild and leave a loadable cache.
#include <cstdint>
#include <cstring>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "fnv1a.h"
#include "fuzz_util.h"
#include "padless/tokenize/corpus_cache.h"
#include "padless/tokenize/tokenized_corpus.h"

namespace padless::tokenize {
namespace {

// Field offsets of the 64-byte cache header (tokenized_corpus.cc).
constexpr size_t kHeaderBytes = 64;
constexpr size_t kFingerprintAt = 16;
constexpr size_t kPayloadBytesAt = 40;
constexpr size_t kChecksumAt = 48;
constexpr uint64_t kFingerprint = 0x7061646c65737321ull;

void Put64(std::string* s, size_t at, uint64_t v) { std::memcpy(&(*s)[at], &v, sizeof(v)); }

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
}  // namespace padless::tokenize

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace padless::tokenize;  // NOLINT: a fuzz entry point
  using padless::fuzz::ReadWholeFile;
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  std::string file(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (file.size() >= kHeaderBytes) {
    if (mode & 1) Put64(&file, kFingerprintAt, kFingerprint);
    if (mode & 2) Put64(&file, kPayloadBytesAt, file.size() - kHeaderBytes);
    if (mode & 4) {
      internal::Fnv1a sum;
      sum.Update(file.data() + kHeaderBytes, file.size() - kHeaderBytes);
      Put64(&file, kChecksumAt, sum.value());
    }
  }
  const std::string path = padless::fuzz::WriteScratchFile("cache.bin", file);
  absl::StatusOr<TokenizedCorpus> loaded = TokenizedCorpus::Load(path, kFingerprint);
  if (loaded.ok()) {
    CheckCorpus(*loaded);
    // Every header field is checked, so an accepted file is exactly what Save writes.
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
                   cached->corpus.labels() == loaded->labels(),
               "LoadOrBuildCorpus differs from Load");
    return 0;
  }
  FUZZ_CHECK(absl::StrContains(loaded.status().message(), path),
             absl::StrCat("error does not name the file: ", loaded.status().message()));
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
  FUZZ_CHECK(again.ok() && again->flat_tokens() == rebuilt.flat_tokens(),
             "the rebuilt cache does not load");
  return 0;
}
