#include "padless/corpus/batch_encoder.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace padless::corpus {
namespace {

// Small enough to balance threads on skewed lengths, large enough to amortise the bookkeeping.
constexpr size_t kBlockSize = 64;

struct Block {
  std::vector<int32_t> ids;
  std::vector<int8_t> type_ids;
  std::vector<int64_t> lengths;
  absl::Status status;
  size_t failed_index = 0;
};

// Reads example i: text, optional pair (nullptr when none).
using Fetch = std::function<void(size_t, absl::string_view*, absl::string_view*, bool*)>;

// Encodes n examples in parallel. On failure returns the error of the lowest failing index, with
// that index in *failed_index, so the result does not depend on thread timing either.
absl::StatusOr<TokenizedCorpus> EncodeParallel(const tokenize::Tokenizer& tokenizer, size_t n,
                                               const Fetch& fetch, bool typed,
                                               absl::Span<const int64_t> labels,
                                               const BatchEncodeOptions& options,
                                               size_t* failed_index) {
  const size_t num_blocks = (n + kBlockSize - 1) / kBlockSize;
  std::vector<Block> blocks(num_blocks);
  std::atomic<size_t> next_block{0};
  std::atomic<int64_t> done{0};
  std::atomic<bool> failed{false};
  int64_t reported = -1;  // last count given to options.progress (calling thread only)

  auto work = [&](bool report) {
    tokenize::Tokenizer::Scratch scratch;
    // Checked before taking a block, so every block taken is finished: all blocks below a failing
    // one are then encoded and the lowest failure is found.
    while (!failed.load(std::memory_order_relaxed)) {
      const size_t b = next_block.fetch_add(1);
      if (b >= num_blocks) break;
      Block& block = blocks[b];
      const size_t begin = b * kBlockSize, end = std::min(n, begin + kBlockSize);
      block.lengths.reserve(end - begin);
      for (size_t i = begin; i < end; ++i) {
        absl::string_view text, pair;
        bool has_pair = false;
        fetch(i, &text, &pair, &has_pair);
        const size_t before = block.ids.size();
        absl::Status s = tokenizer.EncodeAppend(text, has_pair ? &pair : nullptr, options.encode,
                                                &scratch, &block.ids, &block.type_ids);
        if (!s.ok()) {
          block.status = std::move(s);
          block.failed_index = i;
          failed.store(true, std::memory_order_relaxed);
          break;
        }
        const size_t length = block.ids.size() - before;
        // Single texts in a corpus with pairs get type ids of 0, keeping one layout.
        if (typed && !has_pair) block.type_ids.insert(block.type_ids.end(), length, 0);
        block.lengths.push_back(static_cast<int64_t>(length));
      }
      const int64_t total_done =
          done.fetch_add(static_cast<int64_t>(end - begin)) + static_cast<int64_t>(end - begin);
      if (report && options.progress) {
        reported = total_done;
        options.progress(total_done, static_cast<int64_t>(n));
      }
    }
  };

  int threads = options.num_threads > 0
                    ? options.num_threads
                    : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  threads = static_cast<int>(std::min<size_t>(threads, std::max<size_t>(num_blocks, 1)));
  std::vector<std::thread> pool;
  pool.reserve(threads - 1);
  for (int t = 1; t < threads; ++t) pool.emplace_back(work, false);
  work(true);
  for (std::thread& t : pool) t.join();
  // The calling thread reports only the blocks it finished; the workers may have taken the last
  // ones (or all of them), so the final count is reported here.
  if (options.progress && !failed.load() && reported != static_cast<int64_t>(n)) {
    options.progress(static_cast<int64_t>(n), static_cast<int64_t>(n));
  }

  // After an error, blocks past the failing one may be unprocessed; the lowest failure wins.
  for (const Block& block : blocks) {
    if (!block.status.ok()) {
      *failed_index = block.failed_index;
      return block.status;
    }
  }
  size_t total_tokens = 0;
  for (const Block& block : blocks) total_tokens += block.ids.size();
  TokenizedCorpus corpus;
  corpus.Reserve(n, total_tokens);
  size_t example = 0;
  for (const Block& block : blocks) {
    size_t offset = 0;
    for (int64_t length : block.lengths) {
      const auto len = static_cast<size_t>(length);
      corpus.Add(absl::MakeConstSpan(block.ids.data() + offset, len),
                 typed ? absl::MakeConstSpan(block.type_ids.data() + offset, len)
                       : absl::Span<const int8_t>(),
                 labels.empty() ? -1 : labels[example]);
      offset += len;
      ++example;
    }
  }
  return corpus;
}

}  // namespace

absl::StatusOr<TokenizedCorpus> EncodeTexts(const tokenize::Tokenizer& tokenizer,
                                            absl::Span<const std::string> texts,
                                            absl::Span<const std::string> pairs,
                                            absl::Span<const int64_t> labels,
                                            const BatchEncodeOptions& options) {
  if (!pairs.empty() && pairs.size() != texts.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("EncodeTexts: ", pairs.size(), " pairs for ", texts.size(), " texts"));
  }
  if (!labels.empty() && labels.size() != texts.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("EncodeTexts: ", labels.size(), " labels for ", texts.size(), " texts"));
  }
  const Fetch fetch = [&](size_t i, absl::string_view* text, absl::string_view* pair,
                          bool* has_pair) {
    *text = texts[i];
    *has_pair = !pairs.empty();
    if (*has_pair) *pair = pairs[i];
  };
  size_t failed = 0;
  absl::StatusOr<TokenizedCorpus> corpus =
      EncodeParallel(tokenizer, texts.size(), fetch, !pairs.empty(), labels, options, &failed);
  if (!corpus.ok()) {
    return absl::Status(corpus.status().code(),
                        absl::StrCat("text ", failed, ": ", corpus.status().message()));
  }
  return corpus;
}

absl::StatusOr<TokenizedCorpus> EncodeCorpus(const tokenize::Tokenizer& tokenizer,
                                             const RawCorpus& corpus, const LabelMap& labels,
                                             const BatchEncodeOptions& options) {
  std::vector<int64_t> ids(corpus.examples.size());
  for (size_t i = 0; i < corpus.examples.size(); ++i) {
    const Example& e = corpus.examples[i];
    if (e.label.empty()) {
      ids[i] = -1;
      continue;
    }
    absl::StatusOr<int64_t> id = labels.Id(e.label);
    if (!id.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(corpus.source, ":", e.line, ": ", id.status().message()));
    }
    ids[i] = *id;
  }
  const Fetch fetch = [&](size_t i, absl::string_view* text, absl::string_view* pair,
                          bool* has_pair) {
    const Example& e = corpus.examples[i];
    *text = e.text;
    *has_pair = e.has_pair;
    if (e.has_pair) *pair = e.text_pair;
  };
  size_t failed = 0;
  absl::StatusOr<TokenizedCorpus> out = EncodeParallel(tokenizer, corpus.examples.size(), fetch,
                                                       corpus.has_pairs(), ids, options, &failed);
  if (!out.ok()) {
    return absl::Status(out.status().code(),
                        absl::StrCat(corpus.source, ":", corpus.examples[failed].line, ": ",
                                     out.status().message()));
  }
  return out;
}

}  // namespace padless::corpus
