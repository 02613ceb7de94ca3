// padless tokenize encode: encodes a labeled corpus with a tokenizer into the TokenizedCorpus
// cache (loaded when it is valid, else rebuilt), or writes each example's ids as a line of text.
// The work is in padless_corpus (EncodeCorpus, LoadOrBuildCorpus); this file maps flags onto it
// and prints.
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli_util.h"
#include "common_flags.h"
#include "data_flags.h"
#include "padless/base/atomic_file_writer.h"
#include "padless/corpus/corpus_cache.h"
#include "padless/corpus/corpus_reader.h"
#include "padless/corpus/label_map.h"
#include "padless/corpus/length_stats.h"
#include "padless/corpus/tokenized_corpus.h"
#include "padless/tokenize/tokenizer.h"
#include "tokenize_actions.h"
#include "tokenize_data.h"

ABSL_FLAG(std::string, ids_out, "",
          "tokenize encode: write each example's ids (special tokens included, after --max-len "
          "truncation: give a large --max-len to compare untruncated ids) to this file, one line "
          "per example, space-separated");

namespace padless::cli {
namespace {

namespace tok = ::padless::tokenize;

// The label map saved next to the model, if there is one.
absl::StatusOr<std::optional<corpus::LabelMap>> ModelLabels() {
  const std::string path = corpus::LabelMap::PathForModel(absl::GetFlag(FLAGS_model));
  if (!std::ifstream(path)) return std::optional<corpus::LabelMap>();
  absl::StatusOr<corpus::LabelMap> map = corpus::LabelMap::Load(path);
  if (!map.ok()) return map.status();
  return std::optional<corpus::LabelMap>(*std::move(map));
}

// The cache key: data file, model, and every option that changes the encoded corpus, label
// names included (the same text with other label ids is other data).
absl::StatusOr<uint64_t> EncodeFingerprint(const tok::Tokenizer& tokenizer,
                                           const tok::EncodeOptions& encode,
                                           const corpus::LabelMap& labels) {
  std::string description =
      absl::StrCat(corpus::DescribeOptions(encode), " format=", absl::GetFlag(FLAGS_format),
                   " text_field=", absl::GetFlag(FLAGS_text_field),
                   " text_pair_field=", absl::GetFlag(FLAGS_text_pair_field),
                   " label_field=", absl::GetFlag(FLAGS_label_field),
                   " skip_bad_rows=", absl::GetFlag(FLAGS_skip_bad_rows), " labels");
  for (const std::string& name : labels.names()) absl::StrAppend(&description, "|", name);
  return corpus::CacheFingerprint({absl::GetFlag(FLAGS_data)}, tokenizer, description);
}

void PrintCorpusSummary(const corpus::TokenizedCorpus& corpus, int64_t classes) {
  const corpus::LengthStats stats = corpus::ComputeLengthStats(corpus.Lengths(), 0);
  absl::PrintF("tokens: %d\nmean_length: %.1f\nmax_length: %d\nclasses: %d\n",
               corpus.total_tokens(), stats.mean, stats.max, classes);
}

// One line per example: its ids separated by spaces, so other tokenizers' output can be diffed.
absl::Status WriteIds(tok::Tokenizer tokenizer, const tok::EncodeOptions& encode,
                      const std::string& path) {
  absl::StatusOr<corpus::ReaderOptions> reader = ReaderOptionsFromFlags(/*require_label=*/false);
  if (!reader.ok()) return UsageError(reader.status().message());
  const std::string data = absl::GetFlag(FLAGS_data);
  absl::StatusOr<corpus::RawCorpus> corpus = corpus::ReadCorpus(data, *reader);
  if (!corpus.ok()) return corpus.status();
  const std::string backend = tokenizer.backend_name();
  const TokenizerAndCorpus loaded{std::move(tokenizer), *std::move(corpus)};
  absl::StatusOr<corpus::TokenizedCorpus> encoded =
      EncodeLoaded(loaded, corpus::LabelMap::FromCorpus(loaded.corpus), encode);
  if (!encoded.ok()) return encoded.status();
  std::string text;
  for (size_t i = 0; i < encoded->size(); ++i) {
    absl::StrAppend(&text, absl::StrJoin(encoded->tokens(i), " "), "\n");
  }
  if (absl::Status s = base::WriteFileAtomically(path, text); !s.ok()) return s;
  PrintReaderSummary(loaded.corpus.report);
  absl::PrintF("tokenizer: %s\nids: %s (%d lines)\n", backend, path, encoded->size());
  return absl::OkStatus();
}

}  // namespace

absl::Status TokenizeEncode(const std::vector<std::string>& rest) {
  if (!rest.empty()) return UsageError(absl::StrCat("unexpected argument '", rest[0], "'"));
  const std::string ids_out = absl::GetFlag(FLAGS_ids_out);
  if (!ids_out.empty() && !absl::GetFlag(FLAGS_out).empty()) {
    return UsageError("--ids-out and --out are separate runs; give one of them");
  }
  absl::StatusOr<tok::Tokenizer> tokenizer = LoadTokenizer();
  if (!tokenizer.ok()) return tokenizer.status();
  absl::StatusOr<tok::EncodeOptions> encode = EncodeFromFlags();
  if (!encode.ok()) return encode.status();
  if (!ids_out.empty()) return WriteIds(*std::move(tokenizer), *encode, ids_out);
  absl::StatusOr<std::optional<corpus::LabelMap>> labels = ModelLabels();
  if (!labels.ok()) return labels.status();
  const std::string out = absl::GetFlag(FLAGS_out);
  // With the model's label map the cache key is known before reading the data, so a valid cache
  // is used without parsing the corpus at all.
  if (!out.empty() && labels->has_value()) {
    absl::StatusOr<uint64_t> fingerprint = EncodeFingerprint(*tokenizer, *encode, **labels);
    if (!fingerprint.ok()) return fingerprint.status();
    // Every block verified: a cache with a corrupt block is rebuilt below, not reused.
    if (absl::StatusOr<corpus::TokenizedCorpus> hit =
            corpus::TokenizedCorpus::Load(out, *fingerprint);
        hit.ok() && hit->VerifyAll().ok()) {
      absl::PrintF("cache: %s (reused)\nexamples: %d\n", out, hit->size());
      PrintCorpusSummary(*hit, (*labels)->size());
      return absl::OkStatus();
    }
  }
  absl::StatusOr<corpus::RawCorpus> data = ReadData(absl::GetFlag(FLAGS_data));
  if (!data.ok()) return data.status();
  if (!labels->has_value()) {
    if (!Quiet()) absl::FPrintF(stderr, "no label map beside the model: label ids from the data\n");
    *labels = corpus::LabelMap::FromCorpus(*data);
  }
  const TokenizerAndCorpus loaded{*std::move(tokenizer), *std::move(data)};
  const auto build = [&] { return EncodeLoaded(loaded, **labels, *encode); };
  corpus::TokenizedCorpus corpus;
  if (out.empty()) {
    absl::StatusOr<corpus::TokenizedCorpus> built = build();
    if (!built.ok()) return built.status();
    corpus = *std::move(built);
  } else {
    absl::StatusOr<uint64_t> fingerprint = EncodeFingerprint(loaded.tokenizer, *encode, **labels);
    if (!fingerprint.ok()) return fingerprint.status();
    absl::StatusOr<corpus::CachedCorpus> cached =
        corpus::LoadOrBuildCorpus(out, *fingerprint, build);
    if (!cached.ok()) return cached.status();
    if (!cached->save_error.empty()) {
      return absl::UnavailableError(absl::StrCat("cannot save ", out, ": ", cached->save_error));
    }
    absl::PrintF("cache: %s (%s)\n", out,
                 cached->from_cache ? "reused" : absl::StrCat("built; ", cached->rebuild_reason));
    corpus = std::move(cached->corpus);
  }
  PrintReaderSummary(loaded.corpus.report);
  PrintCorpusSummary(corpus, (*labels)->size());
  return absl::OkStatus();
}

}  // namespace padless::cli
