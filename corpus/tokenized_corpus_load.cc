// TokenizedCorpus::Load: opens a cache file (cache_format.h) as a mapped corpus. Everything but the
// bulk is checked here, before any of it is trusted; the bulk is checked block by block as it is
// read (mapped_tokens.h).
#include <cstring>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "cache_format.h"
#include "mapped_tokens.h"
#include "padless/base/mapped_file.h"
#include "padless/corpus/tokenized_corpus.h"

namespace padless::corpus {

using internal::CacheTrailer;

class CorpusCacheReader {
 public:
  explicit CorpusCacheReader(std::shared_ptr<const base::MappedFile> file)
      : file_(std::move(file)), bytes_(file_->bytes()) {}

  absl::StatusOr<TokenizedCorpus> Read(uint64_t fingerprint) {
    if (absl::Status s = ReadTrailer(fingerprint); !s.ok()) return s;
    if (absl::Status s = CheckLayout(); !s.ok()) return s;
    if (absl::Status s = ReadIndex(); !s.ok()) return s;
    return Corpus();
  }

 private:
  absl::Status Error(absl::StatusCode code, absl::string_view what) const {
    return absl::Status(code, absl::StrCat(file_->path(), ": ", what));
  }
  absl::Status Corrupt(absl::string_view what) const {
    return Error(absl::StatusCode::kDataLoss, what);
  }

  // A version-1 file began with the magic and its version (tokenized_corpus.cc before 2).
  absl::Status NoTrailer() const {
    uint32_t version = 0;
    if (bytes_.size() >= 12 && std::memcmp(bytes_.data(), internal::kCacheMagic, 8) == 0) {
      std::memcpy(&version, bytes_.data() + 8, sizeof(version));
      return Error(absl::StatusCode::kFailedPrecondition,
                   absl::StrCat("corpus cache version ", version, ", expected ",
                                internal::kCacheVersion, "; it is rebuilt"));
    }
    if (bytes_.empty()) return Corrupt("empty file, not a padless corpus cache");
    return Corrupt("not a padless corpus cache, or a truncated one (no trailer)");
  }

  absl::Status ReadTrailer(uint64_t fingerprint) {
    if (bytes_.size() < sizeof(t_) ||
        std::memcmp(bytes_.data() + bytes_.size() - sizeof(t_), internal::kCacheMagic, 8) != 0) {
      return NoTrailer();
    }
    std::memcpy(&t_, bytes_.data() + bytes_.size() - sizeof(t_), sizeof(t_));
    if (t_.version != internal::kCacheVersion) {
      return Error(absl::StatusCode::kFailedPrecondition,
                   absl::StrCat("corpus cache version ", t_.version, ", expected ",
                                internal::kCacheVersion));
    }
    if (internal::TrailerChecksum(t_) != t_.trailer_checksum) {
      return Corrupt("corpus cache trailer checksum mismatch");
    }
    if (t_.fingerprint != fingerprint) {
      return Error(absl::StatusCode::kFailedPrecondition,
                   "corpus cache was built from other data, model or options");
    }
    return absl::OkStatus();
  }

  // Sizes, with overflow-safe arithmetic, before anything is read.
  absl::Status CheckLayout() {
    // Unknown flag bits or non-zero spare fields mean a damaged (or future) trailer: not trusted.
    bool spare_zero = true;
    for (uint64_t r : t_.reserved) spare_zero = spare_zero && r == 0;
    if ((t_.flags & ~internal::kFlagTypeIds) != 0 || !spare_zero) {
      return Corrupt("corpus cache trailer has unknown flags");
    }
    typed_ = (t_.flags & internal::kFlagTypeIds) != 0;
    // The writer sets the type-id flag only for examples with type ids, i.e. with tokens.
    if (typed_ && t_.num_tokens == 0) {
      return Corrupt("corpus cache has the type-id flag but no tokens");
    }
    if (t_.block_bytes != internal::kCacheBlockBytes) {
      return Corrupt(absl::StrCat("corpus cache block size ", t_.block_bytes));
    }
    const bool empty_range = t_.num_tokens == 0 && t_.min_token == 0 && t_.max_token == -1;
    if (!empty_range && (t_.num_tokens == 0 || t_.min_token > t_.max_token)) {
      return Corrupt("corpus cache token id range is inconsistent");
    }
    const uint64_t size = bytes_.size(), n = t_.num_examples, tokens = t_.num_tokens;
    if (n > size / 16 || tokens > size / 4 || t_.names_bytes > size) {
      return Corrupt("corpus cache sizes exceed the file");
    }
    bulk_ = internal::BulkBytes(tokens, typed_);
    blocks_ = internal::NumBlocks(bulk_, t_.block_bytes);
    index_at_ = internal::PaddedTo8(bulk_);
    const uint64_t expect = index_at_ + (2 * n + 1) * 8 + blocks_ * 8 + t_.names_bytes + sizeof(t_);
    if (t_.file_bytes != expect || size != expect) {
      return Corrupt(absl::StrCat("corpus cache is truncated or has trailing bytes (", size,
                                  " bytes, expected ", expect, ")"));
    }
    for (uint64_t at = bulk_; at < index_at_; ++at) {
      if (bytes_[at] != 0) return Corrupt("corpus cache padding is not zero");
    }
    return absl::OkStatus();
  }

  template <typename T>
  void Take(std::vector<T>* out, uint64_t count, uint64_t* at) const {
    out->resize(count);
    // An empty vector's data() may be null, which memcpy must not get even for 0 bytes.
    if (count > 0) std::memcpy(out->data(), bytes_.data() + *at, count * sizeof(T));
    *at += count * sizeof(T);
  }

  absl::Status ReadIndex() {
    uint64_t at = index_at_;
    const uint64_t n = t_.num_examples;
    Take(&offsets_, n + 1, &at);
    Take(&labels_, n, &at);
    Take(&block_sums_, blocks_, &at);
    const absl::string_view names = bytes_.substr(at, t_.names_bytes);
    internal::Fnv1a sum;
    sum.Update(bytes_.data() + index_at_, at - index_at_);
    sum.Update(names.data(), names.size());
    if (sum.value() != t_.index_checksum) return Corrupt("corpus cache index checksum mismatch");
    if (offsets_.front() != 0 || static_cast<uint64_t>(offsets_.back()) != t_.num_tokens) {
      return Corrupt("corpus cache offsets are inconsistent");
    }
    for (uint64_t i = 0; i < n; ++i) {
      if (offsets_[i + 1] < offsets_[i]) return Corrupt("corpus cache offsets are not monotone");
    }
    return ReadNames(names);
  }

  // uint64 count, then uint64 length + bytes per name, zero padding to 8: exactly, nothing else.
  absl::Status ReadNames(absl::string_view names) {
    auto take64 = [&](uint64_t* v) {
      if (names.size() < 8) return false;
      std::memcpy(v, names.data(), 8);
      names.remove_prefix(8);
      return true;
    };
    uint64_t count = 0;
    if (!take64(&count) || count > names.size()) return Corrupt("corpus cache label names");
    for (uint64_t i = 0; i < count; ++i) {
      uint64_t length = 0;
      if (!take64(&length) || length > names.size()) return Corrupt("corpus cache label names");
      label_names_.emplace_back(names.substr(0, length));
      names.remove_prefix(length);
    }
    if (names.size() >= 8 || names.find_first_not_of('\0') != absl::string_view::npos) {
      return Corrupt("corpus cache label names are followed by stray bytes");
    }
    return absl::OkStatus();
  }

  TokenizedCorpus Corpus() {
    TokenizedCorpus c;
    c.mapped_ = std::make_shared<internal::MappedTokens>(file_, t_.num_tokens, typed_,
                                                         std::move(block_sums_), t_.block_bytes,
                                                         TokenIdRange{t_.min_token, t_.max_token});
    c.offsets_ = std::move(offsets_);
    c.labels_ = std::move(labels_);
    c.label_names_ = std::move(label_names_);
    c.total_tokens_ = static_cast<int64_t>(t_.num_tokens);
    return c;
  }

  std::shared_ptr<const base::MappedFile> file_;
  absl::string_view bytes_;
  CacheTrailer t_{};
  bool typed_ = false;
  uint64_t bulk_ = 0, blocks_ = 0, index_at_ = 0;
  std::vector<int64_t> offsets_, labels_;
  std::vector<uint64_t> block_sums_;
  std::vector<std::string> label_names_;
};

absl::StatusOr<TokenizedCorpus> TokenizedCorpus::Load(const std::string& path,
                                                      uint64_t fingerprint) {
  absl::StatusOr<std::shared_ptr<const base::MappedFile>> file =
      base::MappedFile::Open(path, "corpus cache", base::MappedFile::Access::kRandom);
  if (!file.ok()) return file.status();
  return CorpusCacheReader(*std::move(file)).Read(fingerprint);
}

}  // namespace padless::corpus
