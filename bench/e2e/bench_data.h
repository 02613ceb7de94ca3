// The benchmark's data: a SentencePiece unigram model trained on the corpus (or loaded from the
// cache directory), the corpus tokenized with head+tail truncation (cached too), and the token
// lengths written one per line for the Python anchors, so both sides train on the same lengths.
#ifndef PADLESS_BENCH_E2E_BENCH_DATA_H_
#define PADLESS_BENCH_E2E_BENCH_DATA_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "padless/corpus/tokenized_corpus.h"

namespace padless::bench::e2e {

struct DataOptions {
  std::string data_path;  // labeled TSV/CSV/JSONL (label + text)
  std::string cache_dir;  // tokenizer model and corpus cache live here
  int vocab_size = 16000;
  int64_t max_len = 512;  // special tokens included; longer texts keep head + tail
  int64_t max_rows = 0;   // 0: every row
  int threads = 0;        // 0: hardware concurrency
};

struct BenchData {
  corpus::TokenizedCorpus corpus;
  int64_t vocab_size = 0;
  int64_t pad_id = 0;  // the tokenizer's special_ids().pad
  int64_t num_labels = 0;
  std::string tokenizer_path;
  bool tokenizer_from_cache = false;
  bool corpus_from_cache = false;
  double tokenizer_seconds = 0;  // training (or loading) the tokenizer
  double encode_seconds = 0;     // reading and tokenizing (or loading the cache)
  std::string read_summary;      // the reader's report, e.g. "25000 examples"
};

absl::StatusOr<BenchData> PrepareData(const DataOptions& options);

// One length per line, in corpus order (the format of the anchors' --lengths).
absl::Status WriteLengths(const corpus::TokenizedCorpus& corpus, const std::string& path);

}  // namespace padless::bench::e2e

#endif  // PADLESS_BENCH_E2E_BENCH_DATA_H_
