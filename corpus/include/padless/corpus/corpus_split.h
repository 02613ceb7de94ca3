// Seeded subsets of a raw corpus: a held-out dev share (`padless train --dev-fraction`) and a
// scoring sample (`padless prune --score-examples`) draw their examples the same way.
#ifndef PADLESS_CORPUS_CORPUS_SPLIT_H_
#define PADLESS_CORPUS_CORPUS_SPLIT_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "padless/corpus/corpus_reader.h"

namespace padless::corpus {

// Moves `count` examples of `corpus` into the returned corpus: those at the first `count`
// positions of a permutation of its indices shuffled by std::mt19937_64(seed), so the same seed
// draws the same examples. Both corpora keep file order; `count` >= the size moves them all. The
// returned corpus has `corpus`'s source and an empty report.
RawCorpus SplitOff(RawCorpus& corpus, size_t count, uint64_t seed);

// Which of `size` examples SplitOff(corpus of that size, count, seed) moves: chosen[i] for example
// i. For corpora that are split by index (a mapped TokenizedCorpus) rather than moved.
std::vector<bool> SplitMask(size_t size, size_t count, uint64_t seed);

}  // namespace padless::corpus

#endif  // PADLESS_CORPUS_CORPUS_SPLIT_H_
