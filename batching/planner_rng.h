// The planner's random numbers: SplitMix64 and the per-epoch streams drawn from the seed. Private
// to the planner; a plan's reproducibility rests on this exact sequence.
#ifndef PADLESS_BATCHING_PLANNER_RNG_H_
#define PADLESS_BATCHING_PLANNER_RNG_H_

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace padless::batching::internal {

// SplitMix64: tiny, fast and identical on every platform (std's distributions are not), so a plan
// is reproducible across compilers and machines.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n) (Lemire's multiply-shift; the tiny bias is irrelevant for shuffling).
  uint64_t Below(uint64_t n) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(Next()) * n) >> 64);
  }
  template <typename T>
  void Shuffle(std::vector<T>& v) {
    for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[Below(i)]);
  }

 private:
  uint64_t state_;
};

// Independent streams for the epoch's sample order and its batch order.
Rng StreamRng(uint64_t seed, int64_t epoch, uint64_t stream);

}  // namespace padless::batching::internal

#endif  // PADLESS_BATCHING_PLANNER_RNG_H_
