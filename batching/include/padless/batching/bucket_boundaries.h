// Bucket boundaries for length-bucketed batching: explicit, equal-count quantiles, geometric, or
// optimal (a dynamic program over the length histogram that minimises the total padding when every
// sequence is padded to its bucket's upper boundary).
#ifndef PADLESS_BATCHING_BUCKET_BOUNDARIES_H_
#define PADLESS_BATCHING_BUCKET_BOUNDARIES_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace padless::batching {

// Boundaries are the sorted, distinct, inclusive upper lengths of the buckets: a sequence of
// length n goes to the first bucket whose boundary is >= n. The last boundary is >= the longest
// length, so every sequence has a bucket.
using Boundaries = std::vector<int64_t>;

// Checks that `boundaries` is non-empty, strictly increasing, positive and covers `max_length`.
absl::StatusOr<Boundaries> ExplicitBoundaries(std::vector<int64_t> boundaries, int64_t max_length);

// k buckets holding (about) the same number of sequences; fewer when lengths repeat a lot.
absl::StatusOr<Boundaries> QuantileBoundaries(absl::Span<const int64_t> lengths, int k);

// k buckets whose boundaries grow by a constant factor from `min_length` to `max_length`.
absl::StatusOr<Boundaries> GeometricBoundaries(int64_t min_length, int64_t max_length, int k);

// The k boundaries that minimise BucketPadding(lengths, boundaries). O(k * V log V) time over the
// V distinct lengths (V <= max length: 8192 and more for long documents), O(k * V) memory; at most
// k buckets (fewer if V < k).
absl::StatusOr<Boundaries> OptimalBoundaries(absl::Span<const int64_t> lengths, int k);

// Index of the bucket of a sequence of `length` (binary search); boundaries.size() if none fits.
int BucketOf(const Boundaries& boundaries, int64_t length);

// Total padding tokens when each sequence is padded to its bucket's boundary.
int64_t BucketPadding(absl::Span<const int64_t> lengths, const Boundaries& boundaries);

}  // namespace padless::batching

#endif  // PADLESS_BATCHING_BUCKET_BOUNDARIES_H_
