// Private to train_job.cc: what the ranks of a data-parallel job take from rank 0 before training,
// whether or not their nodes share a filesystem. Rank 0 resolves the tokenizer and opens or builds
// its token cache alone, while the others wait at the job's start barrier (token_cache.h). Then
// every rank runs the same collectives:
//  1. ShareRankZerosTokenizer: rank 0's tokenizer goes to every rank over the process group, so
//     no rank reads it from rank 0's disk;
//  2. the first rank of every node (LOCAL_RANK 0) fingerprints its own data file with it, and the
//     fingerprints are gathered: one that differs from rank 0's stops every rank with an error
//     naming the node and the rank;
//  3. every node's first rank opens the cache at its own path or builds it there, and after a
//     barrier the node's other ranks map it.
// Checkpoints and the model directory stay rank 0's alone (written on its node); a `--resume` on
// a node that lacks them is an error (resume_state.h).
#ifndef PADLESS_TRAIN_NODE_INPUTS_H_
#define PADLESS_TRAIN_NODE_INPUTS_H_

#include <cstdint>
#include <optional>

#include "absl/status/statusor.h"
#include "padless/distributed/data_parallel.h"
#include "padless/tokenize/tokenizer.h"
#include "padless/train/train_job.h"
#include "token_cache.h"

namespace padless::train {

// Rank 0's tokenizer on every rank (a collective). Rank 0 passes its own and gets nullopt back;
// the others pass null and get rank 0's, or nullopt when its backend cannot be rebuilt from its
// bytes (XLM-R's SentencePiece model loads only from its directory): they then load it from their
// own disk, as rank 0 did.
absl::StatusOr<std::optional<tokenize::Tokenizer>> ShareRankZerosTokenizer(
    const distributed::DataParallel& dp, const tokenize::Tokenizer* rank_zeros);

// Rank 0's part in the token cache agreement (after it opened or built its own cache, whose
// fingerprint it passes): the same collectives as OpenTokenCacheOnNode. An error when a node's
// fingerprint differs.
absl::Status AgreeOnTokenCacheAsRankZero(const distributed::DataParallel& dp, uint64_t fingerprint);

// Every other rank: the token cache on this node's disk, opened or built by the node's first rank
// once all nodes agree on rank 0's fingerprint, and mapped by the others. `say`: print this rank's
// cache line.
absl::StatusOr<OpenedTokenCache> OpenTokenCacheOnNode(const TrainJobOptions& o,
                                                      const tokenize::Tokenizer& tokenizer,
                                                      bool say);

}  // namespace padless::train

#endif  // PADLESS_TRAIN_NODE_INPUTS_H_
