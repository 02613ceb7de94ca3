#include "padless/tokenize/tokenized_corpus.h"

#include <cstring>
#include <fstream>
#include <memory>

#include "absl/strings/str_cat.h"
#include "fnv1a.h"
#include "padless/base/atomic_file_writer.h"
#include "padless/base/file_kind.h"

namespace padless::tokenize {
namespace {

// Cache layout (little endian, the only byte order padless targets):
//   Header (64 bytes) | tokens int32[T] | type_ids int8[T or 0] | offsets int64[n+1] | labels
//   int64[n]
// The checksum (FNV-1a 64) covers everything after the header, so a flipped byte or a truncated
// payload is detected before any of it is trusted.
constexpr char kMagic[8] = {'P', 'A', 'D', 'L', 'C', 'O', 'R', 'P'};
constexpr uint32_t kVersion = 1;

struct Header {
  char magic[8];
  uint32_t version;
  uint32_t flags;  // bit 0: has type ids
  uint64_t fingerprint;
  uint64_t num_examples;
  uint64_t num_tokens;
  uint64_t payload_bytes;
  uint64_t checksum;
  uint64_t reserved;
};
static_assert(sizeof(Header) == 64, "cache header must stay 64 bytes");

using internal::Fnv1a;

template <typename T>
size_t Bytes(const std::vector<T>& v) {
  return v.size() * sizeof(T);
}

}  // namespace

void TokenizedCorpus::Add(absl::Span<const int32_t> ids, absl::Span<const int8_t> type_ids,
                          int64_t label) {
  if (!type_ids.empty()) {
    // First example with type ids after examples without: back-fill zeros to keep one layout.
    if (type_ids_.size() < tokens_.size()) type_ids_.resize(tokens_.size(), 0);
    type_ids_.insert(type_ids_.end(), type_ids.begin(), type_ids.end());
  } else if (!type_ids_.empty()) {
    type_ids_.resize(type_ids_.size() + ids.size(), 0);
  }
  tokens_.insert(tokens_.end(), ids.begin(), ids.end());
  offsets_.push_back(static_cast<int64_t>(tokens_.size()));
  labels_.push_back(label);
}

void TokenizedCorpus::Reserve(size_t examples, size_t tokens) {
  tokens_.reserve(tokens);
  offsets_.reserve(examples + 1);
  labels_.reserve(examples);
}

std::vector<int64_t> TokenizedCorpus::Lengths() const {
  std::vector<int64_t> lengths(size());
  for (size_t i = 0; i < size(); ++i) lengths[i] = length(i);
  return lengths;
}

absl::Status TokenizedCorpus::Save(const std::string& path, uint64_t fingerprint) const {
  Header h{};
  std::memcpy(h.magic, kMagic, sizeof(kMagic));
  h.version = kVersion;
  h.flags = has_type_ids() ? 1u : 0u;
  h.fingerprint = fingerprint;
  h.num_examples = size();
  h.num_tokens = tokens_.size();
  h.payload_bytes = Bytes(tokens_) + Bytes(type_ids_) + Bytes(offsets_) + Bytes(labels_);
  Fnv1a sum;
  sum.Update(tokens_.data(), Bytes(tokens_));
  sum.Update(type_ids_.data(), Bytes(type_ids_));
  sum.Update(offsets_.data(), Bytes(offsets_));
  sum.Update(labels_.data(), Bytes(labels_));
  h.checksum = sum.value();

  return base::WriteFileAtomically(path, [&](std::ostream& out) {
    out.write(reinterpret_cast<const char*>(&h), sizeof(h));
    out.write(reinterpret_cast<const char*>(tokens_.data()), Bytes(tokens_));
    out.write(reinterpret_cast<const char*>(type_ids_.data()), Bytes(type_ids_));
    out.write(reinterpret_cast<const char*>(offsets_.data()), Bytes(offsets_));
    out.write(reinterpret_cast<const char*>(labels_.data()), Bytes(labels_));
  });
}

absl::StatusOr<TokenizedCorpus> TokenizedCorpus::Load(const std::string& path,
                                                      uint64_t fingerprint) {
  if (absl::Status s = base::CheckRegularFile(path, "corpus cache"); !s.ok()) return s;
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::PermissionDeniedError(absl::StrCat("cannot open corpus cache ", path));
  in.seekg(0, std::ios::end);
  const auto file_size = static_cast<uint64_t>(in.tellg());
  in.seekg(0);
  Header h{};
  if (file_size < sizeof(h) || !in.read(reinterpret_cast<char*>(&h), sizeof(h))) {
    return absl::DataLossError(absl::StrCat(path, ": truncated corpus cache header"));
  }
  if (std::memcmp(h.magic, kMagic, sizeof(kMagic)) != 0) {
    return absl::DataLossError(absl::StrCat(path, ": not a padless corpus cache (bad magic)"));
  }
  if (h.version != kVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": corpus cache version ", h.version, ", expected ", kVersion));
  }
  if (h.fingerprint != fingerprint) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": corpus cache was built from other data, model or options"));
  }
  // Unknown flag bits or a non-zero spare field mean a damaged (or future) header: not trusted.
  if ((h.flags & ~1u) != 0 || h.reserved != 0) {
    return absl::DataLossError(absl::StrCat(path, ": corpus cache header has unknown flags"));
  }
  const bool typed = (h.flags & 1u) != 0;
  // Save sets the type-id flag only when there are type ids, i.e. tokens: a typed file without
  // tokens is not one Save writes (found by tests/fuzz/corpus_cache_fuzzer).
  if (typed && h.num_tokens == 0) {
    return absl::DataLossError(
        absl::StrCat(path, ": corpus cache header has the type-id flag but no tokens"));
  }
  // Validate sizes with overflow-safe arithmetic before allocating anything.
  const uint64_t n = h.num_examples, t = h.num_tokens;
  const uint64_t limit = file_size - sizeof(h);
  if (n > limit / 16 || t > limit / 4) {
    return absl::DataLossError(absl::StrCat(path, ": corpus cache sizes exceed the file"));
  }
  const uint64_t expect = t * 4 + (typed ? t : 0) + (n + 1) * 8 + n * 8;
  if (h.payload_bytes != expect || limit != expect) {
    return absl::DataLossError(absl::StrCat(path,
                                            ": corpus cache is truncated or has trailing bytes (",
                                            limit, " payload bytes, expected ", expect, ")"));
  }
  TokenizedCorpus c;
  c.tokens_.resize(t);
  c.type_ids_.resize(typed ? t : 0);
  c.offsets_.resize(n + 1);
  c.labels_.resize(n);
  in.read(reinterpret_cast<char*>(c.tokens_.data()), Bytes(c.tokens_));
  in.read(reinterpret_cast<char*>(c.type_ids_.data()), Bytes(c.type_ids_));
  in.read(reinterpret_cast<char*>(c.offsets_.data()), Bytes(c.offsets_));
  in.read(reinterpret_cast<char*>(c.labels_.data()), Bytes(c.labels_));
  if (!in) return absl::DataLossError(absl::StrCat(path, ": corpus cache read failed"));
  Fnv1a sum;
  sum.Update(c.tokens_.data(), Bytes(c.tokens_));
  sum.Update(c.type_ids_.data(), Bytes(c.type_ids_));
  sum.Update(c.offsets_.data(), Bytes(c.offsets_));
  sum.Update(c.labels_.data(), Bytes(c.labels_));
  if (sum.value() != h.checksum) {
    return absl::DataLossError(absl::StrCat(path, ": corpus cache checksum mismatch"));
  }
  // Structural checks: offsets must be a monotone walk from 0 to T.
  if (c.offsets_.front() != 0 || static_cast<uint64_t>(c.offsets_.back()) != t) {
    return absl::DataLossError(absl::StrCat(path, ": corpus cache offsets are inconsistent"));
  }
  for (uint64_t i = 0; i < n; ++i) {
    if (c.offsets_[i + 1] < c.offsets_[i]) {
      return absl::DataLossError(absl::StrCat(path, ": corpus cache offsets are not monotone"));
    }
  }
  return c;
}

}  // namespace padless::tokenize
