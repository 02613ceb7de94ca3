#include "common_flags.h"

#include "absl/flags/flag.h"
#include "padless/train/training_defaults.h"

ABSL_FLAG(std::string, data, "", "Labeled data file (TSV, CSV or JSONL; see --format)");
ABSL_FLAG(std::string, model, "", "SentencePiece .model file, or a trained model directory");
ABSL_FLAG(std::string, out, "", "Output path or directory");
ABSL_FLAG(std::string, dev, "",
          "Labeled dev file: train's evaluation and early stopping, prune's accuracy per round");
ABSL_FLAG(std::optional<double>, lr, std::nullopt,
          "Peak learning rate (AdamW) of train and of prune's fine-tuning (empty: by model "
          "origin: tiny 5e-4, small 1e-4, base 5e-5, modernbert-base 5e-5 from scratch; 3e-5 "
          "when fine-tuning "
          "--init-from or a pruned model)");
ABSL_FLAG(int64_t, max_len, 512, "Maximum sequence length in tokens, special tokens included");
ABSL_FLAG(std::string, csv, "", "Also write the report as CSV to this path");
ABSL_FLAG(std::string, svg, "", "Also write the report as an SVG chart to this path");
ABSL_FLAG(int, threads, 0, "Worker threads (0: hardware concurrency)");
ABSL_FLAG(uint64_t, seed, 1234, "Random seed");
ABSL_FLAG(bool, skip_bad_rows, false,
          "Skip malformed rows (counted and reported) instead of failing");
ABSL_FLAG(std::string, format, "auto", "Data format: auto (from the extension), tsv, csv or jsonl");
ABSL_FLAG(bool, quiet, false, "No progress output on stderr");
ABSL_FLAG(int, vocab_size, 16000,
          "tokenize train, train: vocabulary size of a new tokenizer, special tokens included");
ABSL_FLAG(int64_t, batch_size, padless::train::kDefaultSequencesPerBatch,
          "Sequences per batch (rows per batch for packed strategies without a token budget); "
          "train: also the target of the default token budget (see --max-tokens)");
ABSL_FLAG(std::optional<int64_t>, max_tokens, std::nullopt,
          "Token budget per batch, padding included, for the token-budget and packed strategies "
          "(empty: train: --batch-size x the training texts' mean length in tokens, at least "
          "the longest text, at most 16384; eval, bench-padding: 16384; predict: 16384 on a GPU, "
          "2048 on the CPU)");
ABSL_FLAG(std::string, batching, "packed",
          "train: batching strategy: packed, varlen, buckets, padded, or any bench-padding name");
ABSL_FLAG(std::string, truncation, "head_tail",
          "Truncation of long single texts: head, tail or head_tail (first k + last tokens)");
ABSL_FLAG(std::string, pair_truncation, "longest_first",
          "Truncation of text pairs: longest_first, only_first or only_second");
ABSL_FLAG(double, head_fraction, 0.25, "head_tail: share of the token budget kept from the start");
ABSL_FLAG(std::string, text_field, "text", "Text column (TSV/CSV header) or JSONL key");
ABSL_FLAG(std::string, text_pair_field, "text_pair", "Second-text column or JSONL key, if any");
ABSL_FLAG(std::string, label_field, "label", "Label column (TSV/CSV header) or JSONL key");
ABSL_FLAG(
    std::string, pooling, "",
    "Embed with this pooling of the last layer's token vectors, whatever the directory's head "
    "(TEI's names: cls, mean, max, mean_sqrt_len, weightedmean, last-token); empty: the "
    "pooling of a sentence-transformers directory (1_Pooling/config.json)");

namespace padless::cli {

int64_t MaxTokensFromFlag() {
  return absl::GetFlag(FLAGS_max_tokens).value_or(train::kMaxDefaultTokensPerBatch);
}

}  // namespace padless::cli
