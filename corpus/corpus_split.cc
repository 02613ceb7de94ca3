#include "padless/corpus/corpus_split.h"

#include <algorithm>
#include <numeric>
#include <random>
#include <utility>
#include <vector>

namespace padless::corpus {

std::vector<bool> SplitMask(size_t size, size_t count, uint64_t seed) {
  std::vector<size_t> order(size);
  std::iota(order.begin(), order.end(), size_t{0});
  std::mt19937_64 rng(seed);
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<bool> chosen(size, false);
  for (size_t i = 0; i < std::min(count, size); ++i) chosen[order[i]] = true;
  return chosen;
}

RawCorpus SplitOff(RawCorpus& corpus, size_t count, uint64_t seed) {
  const std::vector<bool> chosen = SplitMask(corpus.examples.size(), count, seed);
  RawCorpus split;
  split.source = corpus.source;
  std::vector<Example> kept;
  for (size_t i = 0; i < corpus.examples.size(); ++i) {
    (chosen[i] ? split.examples : kept).push_back(std::move(corpus.examples[i]));
  }
  corpus.examples = std::move(kept);
  return split;
}

}  // namespace padless::corpus
