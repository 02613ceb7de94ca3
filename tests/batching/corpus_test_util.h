// Random TokenizedCorpus for the collator and loader tests (ids drawn past the special ids, so a
// pad id (0) in the output can only come from padding).
#ifndef PADLESS_TESTS_BATCHING_CORPUS_TEST_UTIL_H_
#define PADLESS_TESTS_BATCHING_CORPUS_TEST_UTIL_H_

#include <cstdint>
#include <random>
#include <vector>

#include "padless/corpus/tokenized_corpus.h"
#include "plan_test_util.h"

namespace padless::batching::testing {

inline corpus::TokenizedCorpus RandomCorpus(size_t n, uint64_t seed, int64_t max_len,
                                            bool with_type_ids = false) {
  std::mt19937_64 rng(seed);
  const std::vector<int64_t> lengths = RandomLengths(n, seed + 1000, max_len);
  corpus::TokenizedCorpus corpus;
  std::vector<int32_t> ids;
  std::vector<int8_t> types;
  for (size_t i = 0; i < n; ++i) {
    ids.resize(lengths[i]);
    for (auto& id : ids) id = 5 + static_cast<int32_t>(rng() % 16000);
    types.assign(with_type_ids ? ids.size() : 0, 0);
    for (size_t t = types.size() / 2; t < types.size(); ++t) types[t] = 1;
    corpus.Add(ids, types, static_cast<int64_t>(rng() % 3));
  }
  return corpus;
}

}  // namespace padless::batching::testing

#endif  // PADLESS_TESTS_BATCHING_CORPUS_TEST_UTIL_H_
