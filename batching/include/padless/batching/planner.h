// The batch planner: turns example lengths into the batches of one epoch for one rank, without
// touching tokens or tensors. It is pure and deterministic for (options, seed, epoch, rank, world
// size), so a plan is cheap to test, to replay when resuming, and identical on every worker.
#ifndef PADLESS_BATCHING_PLANNER_H_
#define PADLESS_BATCHING_PLANNER_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "padless/batching/batch_spec.h"
#include "padless/tokenize/truncation.h"
#include "padless/batching/bucket_boundaries.h"
#include "padless/batching/packer.h"

namespace padless::batching {

// Builder-style option setters in the LibTorch frontend's manner: `opts.batch_size(32)` sets and
// returns *this, `opts.batch_size()` reads.
#define PADLESS_ARG(T, name, init)          \
 public:                                    \
  auto name(const T& v)->decltype(*this) {  \
    name##_ = v;                            \
    return *this;                           \
  }                                         \
  const T& name() const { return name##_; } \
                                            \
 private:                                   \
  T name##_ = init

enum class Sampler {
  kRandom,           // shuffled, fixed batch_size sequences, padded per the padding policy
  kSortedMegabatch,  // HF group_by_length: megabatches of 50*batch_size sorted by length, desc
  kBucketed,         // sequences grouped by bucket boundaries; batch_size or max_tokens per batch
  kTokenBudget,      // fairseq batch_by_size: sorted by length, at most max_tokens slots per batch
  kPacked,           // several sequences per row (kPacked layout) or flat varlen batches
};

enum class BucketScheme { kExplicit, kQuantile, kGeometric, kOptimal };

enum class PadTo {
  kLongest,         // the longest sequence of the batch
  kMaxLength,       // always max_len: one shape for every batch
  kMultiple,        // the longest, rounded up to a multiple of pad_multiple (tensor cores)
  kBucketBoundary,  // the bucket's upper boundary (kBucketed only): one shape per bucket
};

// Examples longer than max_len. Both keep the example's [CLS] first and its [SEP] last (every
// example is [CLS] content [SEP], as the tokenizer makes them) and use tokenize/truncation.h, the
// one implementation of truncation and windows that Tokenizer::Encode and EncodeWindows use too.
enum class OverLong {
  kTruncate,  // keep max_len - 2 content tokens chosen by `truncation` (tokenize::PlanSingle)
  kSplit,     // windows of max_len - 2 content tokens sharing window_stride tokens
              // (tokenize::WindowStarts); each window is a sequence [CLS] slice [SEP]
};

class PlannerOptions {
 public:
  PlannerOptions() = default;

  PADLESS_ARG(Sampler, sampler, Sampler::kRandom);
  PADLESS_ARG(uint64_t, seed, 1234);
  // Longest row in tokens; longer examples are truncated or split (over_long).
  PADLESS_ARG(int64_t, max_len, 512);
  PADLESS_ARG(OverLong, over_long, OverLong::kTruncate);
  // On truncation, which content tokens to keep (and the head's share for kHeadTail).
  PADLESS_ARG(tokenize::Truncation, truncation, tokenize::Truncation::kHead);
  PADLESS_ARG(double, head_fraction, tokenize::kDefaultHeadFraction);
  // On split, the tokens shared by consecutive windows, in [0, max_len - 2): the meaning of
  // Tokenizer::EncodeWindows' stride and of `padless predict --window-stride`.
  PADLESS_ARG(int64_t, window_stride, 0);

  // Sequences per batch (kRandom, kSortedMegabatch, kBucketed without max_tokens); rows per
  // batch for kPacked when max_tokens is 0.
  PADLESS_ARG(int64_t, batch_size, 32);
  // Token budget per batch, padding included (kTokenBudget; kBucketed and kPacked when > 0).
  PADLESS_ARG(int64_t, max_tokens, 0);
  // Most sequences per batch under a token budget (0: unlimited).
  PADLESS_ARG(int64_t, max_sentences, 0);
  // Under a token budget, batches of more than this many sequences are cut to a multiple of it.
  PADLESS_ARG(int64_t, batch_size_multiple, 1);
  PADLESS_ARG(bool, drop_last, false);
  // Megabatch = megabatch_factor * batch_size sequences (HF uses 50).
  PADLESS_ARG(int64_t, megabatch_factor, 50);
  // Put the epoch's most expensive step (most token slots) first, as HF's length-grouped sampler
  // does, so that an out-of-memory error shows up at the first step rather than hours later.
  PADLESS_ARG(bool, longest_first, false);

  PADLESS_ARG(PadTo, pad_to, PadTo::kLongest);
  PADLESS_ARG(int64_t, pad_multiple, 8);

  PADLESS_ARG(BucketScheme, bucket_scheme, BucketScheme::kOptimal);
  PADLESS_ARG(int, num_buckets, 8);
  PADLESS_ARG(std::vector<int64_t>, boundaries, {});  // kExplicit

  // kPacked: rows of max_len (Layout::kPacked) or flat batches of max_tokens (Layout::kVarlen).
  PADLESS_ARG(Layout, packed_layout, Layout::kPacked);
  PADLESS_ARG(PackAlgorithm, pack_algorithm, PackAlgorithm::kBestFitDecreasing);
  PADLESS_ARG(int64_t, max_sequences_per_row, 0);
  // Packing happens within shuffled windows of this many sequences, so that rows (and epochs) are
  // not sorted by length; 0 packs the whole epoch at once (densest, but rows become length-sorted).
  PADLESS_ARG(int64_t, pack_window, 8192);
};

#undef PADLESS_ARG

// How evenly one epoch's batches were spread over the ranks, in token slots (the GPU's work).
struct ShardReport {
  int64_t steps = 0;           // batches per rank
  double step_imbalance = 0;   // mean over steps of (max rank / mean rank) - 1
  double total_imbalance = 0;  // (max rank total / mean rank total) - 1
  int64_t batches_split = 0;   // batches halved to give every rank the same count
  // Batches without sequences (rows empty, length 0) given to short ranks when no batch was left
  // to halve: the rank joins the step with zero loss weight and zero gradient (train_step.h).
  int64_t empty_batches = 0;
};

struct EpochPlan {
  std::vector<std::vector<BatchSpec>> ranks;  // ranks[r][step]
  ShardReport report;
};

class Planner {
 public:
  explicit Planner(PlannerOptions options) : options_(std::move(options)) {}
  const PlannerOptions& options() const { return options_; }

  // Every rank's batches of `epoch`. Each example (or window of a split example) appears in
  // exactly one batch over all ranks; every rank gets the same number of batches, balanced by
  // token slots: batches are halved (between rows, or between the sequences of a packed row or a
  // varlen batch) until their count divides world_size, and where no batch holds two sequences
  // any more, the missing ones are empty batches (no rows; see ShardReport::empty_batches). Any
  // world size works for an epoch of at least world_size sequences; fewer is a
  // FailedPrecondition error. Other errors name the offending option or example.
  absl::StatusOr<EpochPlan> PlanEpoch(absl::Span<const int64_t> lengths, int64_t epoch,
                                      int world_size = 1) const;

  // The batches of `rank`, from `start_step` on (resume: skip exactly the consumed batches).
  absl::StatusOr<std::vector<BatchSpec>> Plan(absl::Span<const int64_t> lengths, int64_t epoch,
                                              int rank = 0, int world_size = 1,
                                              int64_t start_step = 0) const;

  // The pieces (sequences as placed in rows) of the epoch's examples after truncation or
  // splitting, in example order. Exposed for tests and statistics.
  absl::StatusOr<std::vector<Placement>> Pieces(absl::Span<const int64_t> lengths) const;

  // Bucket boundaries used by kBucketed for these lengths (after truncation/splitting).
  absl::StatusOr<Boundaries> BucketBoundaries(absl::Span<const int64_t> lengths) const;

 private:
  // The pieces of one example of `len` tokens: itself, its truncation or its windows.
  void AppendPieces(int64_t example, int64_t len, std::vector<Placement>* pieces) const;

  PlannerOptions options_;
};

}  // namespace padless::batching

#endif  // PADLESS_BATCHING_PLANNER_H_
