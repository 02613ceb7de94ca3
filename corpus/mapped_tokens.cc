#include "mapped_tokens.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "cache_format.h"

namespace padless::corpus::internal {

MappedTokens::MappedTokens(std::shared_ptr<const base::MappedFile> mapped, uint64_t tokens_count,
                           bool typed, std::vector<uint64_t> sums, uint64_t block,
                           TokenIdRange token_range)
    : file(std::move(mapped)),
      num_tokens(tokens_count),
      bulk_bytes(BulkBytes(tokens_count, typed)),
      block_sums(std::move(sums)),
      block_bytes(block),
      range(token_range),
      verified_(new std::atomic<bool>[block_sums.size()]) {
  const char* base = file->bytes().data();
  tokens = reinterpret_cast<const int32_t*>(base);
  type_ids = typed ? reinterpret_cast<const int8_t*>(base + num_tokens * 4) : nullptr;
  for (size_t k = 0; k < block_sums.size(); ++k) verified_[k].store(false);
}

absl::Status MappedTokens::VerifyBlock(uint64_t block) const {
  if (verified_[block].load(std::memory_order_acquire)) return absl::OkStatus();
  const uint64_t begin = block * block_bytes;
  const uint64_t end = std::min(bulk_bytes, begin + block_bytes);
  const char* bytes = file->bytes().data();
  if (BlockChecksum(block, bytes + begin, end - begin) != block_sums[block]) {
    return absl::DataLossError(absl::StrCat(file->path(), ": corpus cache block ", block, " of ",
                                            block_sums.size(), " is corrupt (checksum mismatch)"));
  }
  // Token ids of this block must lie in the recorded range, which the vocabulary check trusts.
  const uint64_t token_end = std::min(end, num_tokens * 4);
  for (uint64_t at = begin; at < token_end; at += 4) {
    int32_t id;
    std::memcpy(&id, bytes + at, sizeof(id));
    if (id < range.min || id > range.max) {
      return absl::DataLossError(absl::StrCat(file->path(), ": corpus cache block ", block,
                                              " holds token id ", id, " outside the recorded [",
                                              range.min, ", ", range.max, "]"));
    }
  }
  verified_[block].store(true, std::memory_order_release);
  return absl::OkStatus();
}

absl::Status MappedTokens::VerifyBytes(uint64_t begin, uint64_t end) const {
  if (begin >= end) return absl::OkStatus();
  for (uint64_t k = begin / block_bytes; k <= (end - 1) / block_bytes; ++k) {
    if (absl::Status s = VerifyBlock(k); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status MappedTokens::VerifyTokens(uint64_t begin, uint64_t end) const {
  if (absl::Status s = VerifyBytes(begin * 4, end * 4); !s.ok()) return s;
  if (type_ids == nullptr) return absl::OkStatus();
  return VerifyBytes(num_tokens * 4 + begin, num_tokens * 4 + end);
}

absl::Status MappedTokens::VerifyAll() const {
  if (absl::Status s = VerifyBytes(0, bulk_bytes); !s.ok()) return s;
  TokenIdRange actual;
  if (num_tokens > 0) {
    const auto [lo, hi] = std::minmax_element(tokens, tokens + num_tokens);
    actual = {*lo, *hi};
  }
  if (actual.min != range.min || actual.max != range.max) {
    return absl::DataLossError(absl::StrCat(file->path(), ": corpus cache records token ids in [",
                                            range.min, ", ", range.max, "], they are in [",
                                            actual.min, ", ", actual.max, "]"));
  }
  return absl::OkStatus();
}

}  // namespace padless::corpus::internal
