#include "bench_data.h"

#include <chrono>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "padless/base/atomic_file_writer.h"
#include "padless/base/directory.h"
#include "padless/base/file_kind.h"
#include "padless/base/path_names.h"
#include "padless/corpus/batch_encoder.h"
#include "padless/corpus/corpus_cache.h"
#include "padless/corpus/corpus_reader.h"
#include "padless/corpus/label_map.h"
#include "padless/tokenize/tokenizer.h"

namespace padless::bench::e2e {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

absl::StatusOr<BenchData> PrepareData(const DataOptions& options) {
  if (absl::Status made = base::MakeDirectories(options.cache_dir); !made.ok()) {
    return absl::InternalError(
        absl::StrCat("cannot create cache dir ", options.cache_dir, ": ", made.message()));
  }
  auto start = std::chrono::steady_clock::now();
  corpus::ReaderOptions reader;
  absl::StatusOr<corpus::RawCorpus> raw = corpus::ReadCorpus(options.data_path, reader);
  if (!raw.ok()) return raw.status();
  if (options.max_rows > 0 && static_cast<int64_t>(raw->examples.size()) > options.max_rows) {
    raw->examples.resize(static_cast<size_t>(options.max_rows));
  }
  BenchData out;
  out.read_summary = raw->report.Summary();

  // The tokenizer depends on the data file, the rows used and the vocabulary size; the name says
  // all three so that a different choice trains a new model instead of reusing a stale one.
  const std::string stem = base::PathStem(options.data_path);
  out.tokenizer_path = absl::StrCat(options.cache_dir, "/", stem, "_unigram", options.vocab_size,
                                    "_rows", raw->examples.size(), ".model");
  absl::StatusOr<tokenize::Tokenizer> tokenizer = absl::UnknownError("unset");
  if (base::KindOfPath(out.tokenizer_path) != base::FileKind::kMissing) {
    tokenizer = tokenize::Tokenizer::Load(out.tokenizer_path);
    if (!tokenizer.ok()) return tokenizer.status();
    out.tokenizer_from_cache = true;
  } else {
    std::vector<std::string> texts;
    texts.reserve(raw->examples.size());
    for (const corpus::Example& e : raw->examples) texts.push_back(e.text);
    tokenize::TrainOptions train;
    train.model_type = "unigram";
    train.vocab_size = options.vocab_size;
    train.num_threads = options.threads;
    tokenizer = tokenize::Tokenizer::TrainFromSentences(texts, train);
    if (!tokenizer.ok()) {
      return absl::Status(tokenizer.status().code(),
                          absl::StrCat("training the tokenizer on ", options.data_path, ": ",
                                       tokenizer.status().message()));
    }
    if (absl::Status s = tokenizer->Save(out.tokenizer_path); !s.ok()) return s;
  }
  out.vocab_size = tokenizer->vocab_size();
  out.pad_id = tokenizer->special_ids().pad;
  out.tokenizer_seconds = SecondsSince(start);

  start = std::chrono::steady_clock::now();
  std::vector<std::string> labels;
  labels.reserve(raw->examples.size());
  for (const corpus::Example& e : raw->examples) labels.push_back(e.label);
  const corpus::LabelMap label_map = corpus::LabelMap::FromLabels(labels);
  out.num_labels = label_map.size();

  corpus::BatchEncodeOptions encode;
  encode.encode.max_length = options.max_len;
  encode.encode.truncation = tokenize::Truncation::kHeadTail;
  encode.num_threads = options.threads;
  const std::string description =
      absl::StrCat(corpus::DescribeOptions(encode.encode), " rows=", raw->examples.size());
  absl::StatusOr<uint64_t> fingerprint =
      corpus::CacheFingerprint({options.data_path}, *tokenizer, description);
  if (!fingerprint.ok()) return fingerprint.status();
  const std::string cache_path =
      absl::StrCat(options.cache_dir, "/", stem, "_unigram", options.vocab_size, "_len",
                   options.max_len, ".corpus");
  absl::StatusOr<corpus::CachedCorpus> cached = corpus::LoadOrBuildCorpus(
      cache_path, *fingerprint, [&]() -> absl::StatusOr<corpus::TokenizedCorpus> {
        return corpus::EncodeCorpus(*tokenizer, *raw, label_map, encode);
      });
  if (!cached.ok()) return cached.status();
  out.corpus = std::move(cached->corpus);
  out.corpus_from_cache = cached->from_cache;
  out.encode_seconds = SecondsSince(start);
  if (out.corpus.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(options.data_path, ": no examples"));
  }
  return out;
}

absl::Status WriteLengths(const corpus::TokenizedCorpus& corpus, const std::string& path) {
  std::string text;
  for (size_t i = 0; i < corpus.size(); ++i) absl::StrAppend(&text, corpus.length(i), "\n");
  return base::WriteFileAtomically(path, text);
}

}  // namespace padless::bench::e2e
