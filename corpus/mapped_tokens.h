// Private: the bulk of a mapped corpus cache (cache_format.h) and its lazy per-block verification.
#ifndef PADLESS_CORPUS_MAPPED_TOKENS_H_
#define PADLESS_CORPUS_MAPPED_TOKENS_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "padless/base/mapped_file.h"
#include "padless/corpus/tokenized_corpus.h"

namespace padless::corpus::internal {

struct MappedTokens {
  MappedTokens(std::shared_ptr<const base::MappedFile> file, uint64_t num_tokens, bool typed,
               std::vector<uint64_t> block_sums, uint64_t block_bytes, TokenIdRange range);

  // Verifies every block that bulk bytes [begin, end) touch.
  absl::Status VerifyBytes(uint64_t begin, uint64_t end) const;
  // Verifies the blocks of the tokens (and type ids) [begin, end).
  absl::Status VerifyTokens(uint64_t begin, uint64_t end) const;
  // Every block, and the recorded token id range exactly.
  absl::Status VerifyAll() const;

  std::shared_ptr<const base::MappedFile> file;
  const int32_t* tokens = nullptr;
  const int8_t* type_ids = nullptr;  // nullptr when the corpus has none
  uint64_t num_tokens = 0;
  uint64_t bulk_bytes = 0;
  std::vector<uint64_t> block_sums;
  uint64_t block_bytes = 0;
  TokenIdRange range;

 private:
  absl::Status VerifyBlock(uint64_t block) const;
  // Set once a block's checksum (and token range) matched; a race verifies a block twice, which is
  // harmless.
  std::unique_ptr<std::atomic<bool>[]> verified_;
};

}  // namespace padless::corpus::internal

#endif  // PADLESS_CORPUS_MAPPED_TOKENS_H_
