// Private: the on-disk layout of the tokenized corpus cache (version 2), shared by the streaming
// writer (corpus_cache_writer.cc), the mapped reader (tokenized_corpus_load.cc) and the fuzzer.
//
// Little endian (the only byte order padless targets). The bulk comes first and the small index
// and the trailer last, so a writer can stream tokens it has not counted yet through an
// append-only AtomicFileWriter, and a reader can map the tokens at offset 0 (aligned):
//
//   tokens   int32[T]                      the bulk: read through the mapping, page by page
//   type_ids int8[T], or nothing           (flag bit 0)
//   zero padding to a multiple of 8
//   offsets  int64[n + 1]                  the index: read into memory when the file is opened
//   labels   int64[n]
//   block checksums uint64[B]              B = ceil(bulk bytes / block_bytes)
//   label names: uint64 count, then per name uint64 length + bytes; zero padding to 8
//   Trailer  (128 bytes)
//
// Checksums (FNV-1a 64). The trailer checks itself (trailer_checksum) and the index
// (index_checksum), both verified when the file is opened: they are small. The bulk, which can be
// far larger than memory, is checked per block of block_bytes: block k's checksum covers its
// index k and its bytes, so moved blocks are caught as well as flipped bytes. A reader verifies a
// block the first time it reads from it (TokenizedCorpus::VerifyExample), so a rank pays only for
// the blocks of its own shard.
#ifndef PADLESS_CORPUS_CACHE_FORMAT_H_
#define PADLESS_CORPUS_CACHE_FORMAT_H_

#include <cstddef>
#include <cstdint>

#include "fnv1a.h"

namespace padless::corpus::internal {

inline constexpr char kCacheMagic[8] = {'P', 'A', 'D', 'L', 'C', 'O', 'R', 'P'};
inline constexpr uint32_t kCacheVersion = 2;
inline constexpr uint32_t kFlagTypeIds = 1;
// 64 KiB: what one page fault maps around itself by default (fault-around), so verifying the
// block of a sequence reads little more than reading the sequence does.
inline constexpr uint64_t kCacheBlockBytes = 64 * 1024;

struct CacheTrailer {
  char magic[8];
  uint32_t version;
  uint32_t flags;
  uint64_t fingerprint;
  uint64_t num_examples;  // n
  uint64_t num_tokens;    // T
  uint64_t block_bytes;
  uint64_t file_bytes;   // the whole file, trailer included
  uint64_t names_bytes;  // the label-name section, padding included
  int32_t min_token;     // over all tokens; 0 and -1 when there are none
  int32_t max_token;
  uint64_t index_checksum;    // offsets, labels, block checksums, label names
  uint64_t reserved[5];       // zero
  uint64_t trailer_checksum;  // of the 120 bytes before it
};
static_assert(sizeof(CacheTrailer) == 128, "the cache trailer must stay 128 bytes");

inline uint64_t BulkBytes(uint64_t num_tokens, bool typed) {
  return num_tokens * 4 + (typed ? num_tokens : 0);
}
inline uint64_t PaddedTo8(uint64_t bytes) { return (bytes + 7) / 8 * 8; }
inline uint64_t NumBlocks(uint64_t bulk_bytes, uint64_t block_bytes) {
  return (bulk_bytes + block_bytes - 1) / block_bytes;
}

inline uint64_t BlockChecksum(uint64_t block, const void* data, size_t n) {
  Fnv1a sum;
  sum.UpdateValue(block);
  sum.Update(data, n);
  return sum.value();
}

inline uint64_t TrailerChecksum(const CacheTrailer& t) {
  Fnv1a sum;
  sum.Update(&t, offsetof(CacheTrailer, trailer_checksum));
  return sum.value();
}

}  // namespace padless::corpus::internal

#endif  // PADLESS_CORPUS_CACHE_FORMAT_H_
