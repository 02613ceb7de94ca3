// Multi-threaded encoding of many texts into one TokenizedCorpus. Work is split into fixed blocks
// of examples that threads take in any order, and the blocks are joined in input order, so the
// result is identical for every thread count.
#ifndef PADLESS_CORPUS_BATCH_ENCODER_H_
#define PADLESS_CORPUS_BATCH_ENCODER_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "padless/corpus/corpus_reader.h"
#include "padless/corpus/label_map.h"
#include "padless/corpus/tokenized_corpus.h"
#include "padless/tokenize/tokenizer.h"

namespace padless::corpus {

struct BatchEncodeOptions {
  tokenize::EncodeOptions encode;
  int num_threads = 0;  // 0: hardware concurrency
  // Called on the calling thread now and then with (examples done, total), increasing, and last
  // with done == total when encoding succeeds; may be empty.
  std::function<void(int64_t, int64_t)> progress;
};

// Encodes texts[i] (with pairs[i] when `pairs` is not empty) and labels[i] into example i.
// `pairs` and `labels` must be empty or as long as `texts`; missing labels are -1.
absl::StatusOr<TokenizedCorpus> EncodeTexts(const tokenize::Tokenizer& tokenizer,
                                            absl::Span<const std::string> texts,
                                            absl::Span<const std::string> pairs,
                                            absl::Span<const int64_t> labels,
                                            const BatchEncodeOptions& options);

// Encodes a corpus read by ReadCorpus, mapping labels through `labels`. Errors name file:line.
// Examples with an empty label get -1 (unlabeled data read with require_label = false).
absl::StatusOr<TokenizedCorpus> EncodeCorpus(const tokenize::Tokenizer& tokenizer,
                                             const RawCorpus& corpus, const LabelMap& labels,
                                             const BatchEncodeOptions& options);

}  // namespace padless::corpus

#endif  // PADLESS_CORPUS_BATCH_ENCODER_H_
