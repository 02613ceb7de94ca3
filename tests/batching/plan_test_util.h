// Shared helpers of the batching tests: seeded random lengths and plan invariants.
#ifndef PADLESS_TESTS_BATCHING_PLAN_TEST_UTIL_H_
#define PADLESS_TESTS_BATCHING_PLAN_TEST_UTIL_H_

#include <cstdint>
#include <random>
#include <vector>

namespace padless::batching::testing {

// Lengths with a long right tail (like IMDB token counts): lognormal, clipped to [1, max].
inline std::vector<int64_t> RandomLengths(size_t n, uint64_t seed, int64_t max = 2000) {
  std::mt19937_64 rng(seed);
  std::lognormal_distribution<double> dist(5.4, 0.7);
  std::vector<int64_t> out(n);
  for (auto& v : out) {
    v = static_cast<int64_t>(dist(rng));
    if (v < 1) v = 1;
    if (v > max) v = max;
  }
  return out;
}

}  // namespace padless::batching::testing

#endif  // PADLESS_TESTS_BATCHING_PLAN_TEST_UTIL_H_
