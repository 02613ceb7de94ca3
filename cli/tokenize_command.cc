// padless tokenize train|encode|stats: trains SentencePiece models with padless's fixed special
// tokens, encodes a labeled corpus into the TokenizedCorpus cache, and prints the token-length
// distribution of a corpus. Only flags and printing live here; the work is in padless_tokenize.
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "cli_util.h"
#include "common_flags.h"
#include "data_flags.h"
#include "flag_spelling.h"
#include "padless/base/atomic_file_writer.h"
#include "padless/base/svg.h"
#include "padless/tokenize/batch_encoder.h"
#include "padless/tokenize/corpus_cache.h"
#include "padless/tokenize/corpus_reader.h"
#include "padless/tokenize/label_map.h"
#include "padless/tokenize/length_stats.h"
#include "padless/tokenize/tokenizer.h"
#include "path_checks.h"
#include "subcommand.h"
#include "tokenizer_flag.h"

ABSL_FLAG(std::string, input, "",
          "tokenize train: comma-separated training files; labeled TSV/CSV/JSONL files give their "
          "text columns, any other file is plain text, one sentence per line");
ABSL_FLAG(std::string, model_type, "unigram", "tokenize train: unigram or bpe");
ABSL_FLAG(double, character_coverage, 0.9995,
          "tokenize train: share of characters the vocabulary covers (rest: [UNK])");
ABSL_FLAG(std::string, user_symbols, "",
          "tokenize train: comma-separated symbols that always stay single pieces");
ABSL_FLAG(int64_t, input_sentence_size, 0,
          "tokenize train: sample this many sentences for training (0: all)");
ABSL_FLAG(int64_t, bin_width, 16, "tokenize stats: histogram bin width in tokens");
ABSL_FLAG(std::string, ids_out, "",
          "tokenize encode: write each example's ids (special tokens included, after --max-len "
          "truncation: give a large --max-len to compare untruncated ids) to this file, one line "
          "per example, space-separated");

namespace padless::cli {
namespace {

namespace tok = ::padless::tokenize;

bool Quiet() { return absl::GetFlag(FLAGS_quiet); }

// Progress on stderr: a line redrawn in place on a terminal, only the final count in a log file.
void Progress(const std::string& what, int64_t done, int64_t total) {
  if (Quiet() || total <= 0) return;
  static const bool terminal = isatty(fileno(stderr)) != 0;
  if (!terminal && done != total) return;
  absl::FPrintF(stderr, "%s%s %d/%d (%d%%)%s", terminal ? "\r" : "", what, done, total,
                done * 100 / total, done == total ? "\n" : "");
}

// The shared reader and encode flags (data_flags.h); their errors are usage errors here.
absl::StatusOr<tok::ReaderOptions> ReaderFromFlags() {
  return ReaderOptionsFromFlags(/*require_label=*/true);
}

absl::StatusOr<tok::EncodeOptions> EncodeFromFlags() { return EncodeOptionsFromFlags(); }

absl::StatusOr<int> ThreadsFromFlags() {
  if (absl::Status s = CheckSizeFlags(kThreads); !s.ok()) return s;
  return absl::GetFlag(FLAGS_threads);
}

absl::Status RequireFlag(const std::string& value, absl::string_view name) {
  if (value.empty()) return UsageError(absl::StrCat(FlagAsWritten(name), " is required"));
  return absl::OkStatus();
}

// Reads --data with the flags' reader options and reports skipped rows and repaired text.
absl::StatusOr<tok::RawCorpus> ReadData(const std::string& path) {
  absl::StatusOr<tok::ReaderOptions> options = ReaderFromFlags();
  if (!options.ok()) return options.status();
  absl::StatusOr<tok::RawCorpus> corpus = tok::ReadCorpus(path, *options);
  if (!corpus.ok()) return corpus.status();
  if (!Quiet()) {
    absl::FPrintF(stderr, "read %s: %s\n", path, corpus->report.Summary());
    for (const std::string& message : corpus->report.bad_row_messages) {
      absl::FPrintF(stderr, "  skipped %s\n", message);
    }
  }
  return corpus;
}

// "out/m" and "out/m.model" both name the model out/m.model.
std::string ModelPath(absl::string_view prefix) {
  return absl::EndsWith(prefix, ".model") ? std::string(prefix) : absl::StrCat(prefix, ".model");
}

bool IsLabeledFile(const std::string& path) {
  if (absl::GetFlag(FLAGS_format) != "auto") return true;
  return tok::FormatFromPath(path).ok();
}

bool IsLabeledFileAny(const std::vector<std::string>& files) {
  return std::any_of(files.begin(), files.end(), IsLabeledFile);
}

absl::Status Train(const std::vector<std::string>& rest) {
  if (!rest.empty()) return UsageError(absl::StrCat("unexpected argument '", rest[0], "'"));
  const std::string input = absl::GetFlag(FLAGS_input), out = absl::GetFlag(FLAGS_out);
  if (absl::Status s = RequireFlag(input, "input"); !s.ok()) return s;
  if (absl::Status s = RequireFlag(out, "out"); !s.ok()) return s;
  tok::TrainOptions options;
  options.model_type = absl::GetFlag(FLAGS_model_type);
  if (options.model_type != "unigram" && options.model_type != "bpe") {
    return UsageError(absl::StrCat(FlagAsWritten("model_type"), " must be unigram or bpe, not '",
                                   options.model_type, "'"));
  }
  options.vocab_size = absl::GetFlag(FLAGS_vocab_size);
  if (options.vocab_size <= tok::kNumSpecialTokens) {
    return UsageError(absl::StrCat(FlagAsWritten("vocab_size"), " must be >= ",
                                   tok::kNumSpecialTokens + 1, ", got ", options.vocab_size));
  }
  options.character_coverage = absl::GetFlag(FLAGS_character_coverage);
  if (!(options.character_coverage > 0 && options.character_coverage <= 1)) {
    return UsageError(absl::StrCat(FlagAsWritten("character_coverage"), " must be in (0, 1], got ",
                                   options.character_coverage));
  }
  const std::string symbols = absl::GetFlag(FLAGS_user_symbols);
  if (!symbols.empty()) options.user_defined_symbols = absl::StrSplit(symbols, ',');
  options.input_sentence_size = absl::GetFlag(FLAGS_input_sentence_size);
  absl::StatusOr<int> threads = ThreadsFromFlags();
  if (!threads.ok()) return threads.status();
  options.num_threads = *threads;
  options.verbose = false;

  const std::vector<std::string> files = absl::StrSplit(input, ',', absl::SkipEmpty());
  if (files.empty()) return UsageError(absl::StrCat(FlagAsWritten("input"), " names no file"));
  if (IsLabeledFileAny(files)) {
    if (absl::StatusOr<tok::ReaderOptions> o = ReaderFromFlags(); !o.ok()) return o.status();
  }
  std::vector<PathFlag> paths;
  for (const std::string& file : files) paths.push_back({"input", file, PathUse::kInputTextFile});
  paths.push_back({"out", ModelPath(out), PathUse::kOutputFile});
  if (absl::Status s = CheckPathFlags(paths); !s.ok()) return s;
  const bool any_labeled = IsLabeledFileAny(files);
  absl::StatusOr<tok::Tokenizer> tokenizer = absl::UnknownError("not trained");
  std::vector<std::string> labels;
  int64_t sentences = 0;
  if (!any_labeled) {
    if (!Quiet()) absl::FPrintF(stderr, "training on %d plain text file(s)\n", files.size());
    tokenizer = tok::Tokenizer::TrainFromFiles(files, options);
  } else {
    // Labeled data: train on its text columns, held in memory (plain files are read by lines).
    std::vector<std::string> texts;
    for (const std::string& file : files) {
      if (!IsLabeledFile(file)) {
        std::ifstream in(file);
        if (!in) return absl::NotFoundError(absl::StrCat("cannot open training file ", file));
        for (std::string line; std::getline(in, line);) {
          if (!line.empty()) texts.push_back(std::move(line));
        }
        continue;
      }
      absl::StatusOr<tok::RawCorpus> corpus = ReadData(file);
      if (!corpus.ok()) return corpus.status();
      for (tok::Example& e : corpus->examples) {
        labels.push_back(e.label);
        texts.push_back(std::move(e.text));
        if (e.has_pair && !e.text_pair.empty()) texts.push_back(std::move(e.text_pair));
      }
    }
    sentences = static_cast<int64_t>(texts.size());
    if (!Quiet()) absl::FPrintF(stderr, "training on %d texts\n", sentences);
    tokenizer = tok::Tokenizer::TrainFromSentences(texts, options);
  }
  if (!tokenizer.ok()) return tokenizer.status();
  const std::string model_path = ModelPath(out);
  if (absl::Status s = tokenizer->Save(model_path); !s.ok()) return s;
  absl::PrintF("model: %s\nvocab_size: %d\nmodel_type: %s\n", model_path, tokenizer->vocab_size(),
               options.model_type);
  if (sentences > 0) absl::PrintF("training_texts: %d\n", sentences);
  if (!labels.empty()) {
    const tok::LabelMap map = tok::LabelMap::FromLabels(labels);
    const std::string labels_path = tok::LabelMap::PathForModel(model_path);
    if (absl::Status s = map.Save(labels_path); !s.ok()) return s;
    absl::PrintF("labels: %s (%d classes)\n", labels_path, map.size());
  }
  return absl::OkStatus();
}

struct Loaded {
  tok::Tokenizer tokenizer;
  tok::RawCorpus corpus;
};

// Checks the flags of encode/stats (usage errors before any slow work) and loads --model.
absl::StatusOr<tok::Tokenizer> LoadModel() {
  const std::string model = absl::GetFlag(FLAGS_model), data = absl::GetFlag(FLAGS_data);
  if (absl::Status s = RequireFlag(model, "model"); !s.ok()) return s;
  if (absl::Status s = RequireFlag(data, "data"); !s.ok()) return s;
  if (absl::StatusOr<tok::ReaderOptions> o = ReaderFromFlags(); !o.ok()) return o.status();
  if (absl::StatusOr<tok::EncodeOptions> o = EncodeFromFlags(); !o.ok()) return o.status();
  if (absl::StatusOr<int> t = ThreadsFromFlags(); !t.ok()) return t.status();
  if (absl::Status s = CheckPathFlags({TokenizerPathFlag("model", model),
                                       {"data", data, PathUse::kInputTextFile},
                                       {"out", absl::GetFlag(FLAGS_out), PathUse::kOutputFile},
                                       {"csv", absl::GetFlag(FLAGS_csv), PathUse::kOutputFile},
                                       {"svg", absl::GetFlag(FLAGS_svg), PathUse::kOutputFile}});
      !s.ok()) {
    return s;
  }
  return tok::Tokenizer::Load(model);
}

absl::StatusOr<Loaded> LoadModelAndData() {
  absl::StatusOr<tok::Tokenizer> tokenizer = LoadModel();
  if (!tokenizer.ok()) return tokenizer.status();
  absl::StatusOr<tok::RawCorpus> corpus = ReadData(absl::GetFlag(FLAGS_data));
  if (!corpus.ok()) return corpus.status();
  return Loaded{*std::move(tokenizer), *std::move(corpus)};
}

// The label map saved next to the model, if there is one.
absl::StatusOr<std::optional<tok::LabelMap>> ModelLabels() {
  const std::string path = tok::LabelMap::PathForModel(absl::GetFlag(FLAGS_model));
  if (!std::ifstream(path)) return std::optional<tok::LabelMap>();
  absl::StatusOr<tok::LabelMap> map = tok::LabelMap::Load(path);
  if (!map.ok()) return map.status();
  return std::optional<tok::LabelMap>(*std::move(map));
}

// The cache key: data file, model, and every option that changes the encoded corpus, label
// names included (the same text with other label ids is other data).
absl::StatusOr<uint64_t> EncodeFingerprint(const tok::Tokenizer& tokenizer,
                                           const tok::EncodeOptions& encode,
                                           const tok::LabelMap& labels) {
  std::string description =
      absl::StrCat(tok::DescribeOptions(encode), " format=", absl::GetFlag(FLAGS_format),
                   " text_field=", absl::GetFlag(FLAGS_text_field),
                   " text_pair_field=", absl::GetFlag(FLAGS_text_pair_field),
                   " label_field=", absl::GetFlag(FLAGS_label_field),
                   " skip_bad_rows=", absl::GetFlag(FLAGS_skip_bad_rows), " labels");
  for (const std::string& name : labels.names()) absl::StrAppend(&description, "|", name);
  return tok::CacheFingerprint({absl::GetFlag(FLAGS_data)}, tokenizer, description);
}

absl::StatusOr<tok::TokenizedCorpus> EncodeLoaded(const Loaded& loaded, const tok::LabelMap& labels,
                                                  const tok::EncodeOptions& encode) {
  tok::BatchEncodeOptions options;
  options.encode = encode;
  options.num_threads = absl::GetFlag(FLAGS_threads);
  int64_t last_percent = -1;
  options.progress = [&](int64_t done, int64_t total) {
    const int64_t percent = done * 20 / std::max<int64_t>(total, 1);
    if (percent != last_percent) {
      last_percent = percent;
      Progress("encoding", done, total);
    }
  };
  return tok::EncodeCorpus(loaded.tokenizer, loaded.corpus, labels, options);
}

void PrintReaderSummary(const tok::ReadReport& report) {
  absl::PrintF("examples: %d\nbad_rows_skipped: %d\ninvalid_utf8_rows: %d\n", report.examples,
               report.bad_rows, report.invalid_utf8_rows);
}

void PrintCorpusSummary(const tok::TokenizedCorpus& corpus, int64_t classes) {
  const tok::LengthStats stats = tok::ComputeLengthStats(corpus.Lengths(), 0);
  absl::PrintF("tokens: %d\nmean_length: %.1f\nmax_length: %d\nclasses: %d\n",
               corpus.total_tokens(), stats.mean, stats.max, classes);
}

// One line per example: its ids separated by spaces, so other tokenizers' output can be diffed.
absl::Status WriteIds(tok::Tokenizer tokenizer, const tok::EncodeOptions& encode,
                      const std::string& path) {
  absl::StatusOr<tok::ReaderOptions> reader = ReaderOptionsFromFlags(/*require_label=*/false);
  if (!reader.ok()) return UsageError(reader.status().message());
  const std::string data = absl::GetFlag(FLAGS_data);
  absl::StatusOr<tok::RawCorpus> corpus = tok::ReadCorpus(data, *reader);
  if (!corpus.ok()) return corpus.status();
  const std::string backend = tokenizer.backend_name();
  const Loaded loaded{std::move(tokenizer), *std::move(corpus)};
  absl::StatusOr<tok::TokenizedCorpus> encoded =
      EncodeLoaded(loaded, tok::LabelMap::FromCorpus(loaded.corpus), encode);
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

absl::Status Encode(const std::vector<std::string>& rest) {
  if (!rest.empty()) return UsageError(absl::StrCat("unexpected argument '", rest[0], "'"));
  const std::string ids_out = absl::GetFlag(FLAGS_ids_out);
  if (!ids_out.empty() && !absl::GetFlag(FLAGS_out).empty()) {
    return UsageError("--ids-out and --out are separate runs; give one of them");
  }
  absl::StatusOr<tok::Tokenizer> tokenizer = LoadModel();
  if (!tokenizer.ok()) return tokenizer.status();
  absl::StatusOr<tok::EncodeOptions> encode = EncodeFromFlags();
  if (!encode.ok()) return encode.status();
  if (!ids_out.empty()) return WriteIds(*std::move(tokenizer), *encode, ids_out);
  absl::StatusOr<std::optional<tok::LabelMap>> labels = ModelLabels();
  if (!labels.ok()) return labels.status();
  const std::string out = absl::GetFlag(FLAGS_out);
  // With the model's label map the cache key is known before reading the data, so a valid cache
  // is used without parsing the corpus at all.
  if (!out.empty() && labels->has_value()) {
    absl::StatusOr<uint64_t> fingerprint = EncodeFingerprint(*tokenizer, *encode, **labels);
    if (!fingerprint.ok()) return fingerprint.status();
    // Every block verified: a cache with a corrupt block is rebuilt below, not reused.
    if (absl::StatusOr<tok::TokenizedCorpus> hit = tok::TokenizedCorpus::Load(out, *fingerprint);
        hit.ok() && hit->VerifyAll().ok()) {
      absl::PrintF("cache: %s (reused)\nexamples: %d\n", out, hit->size());
      PrintCorpusSummary(*hit, (*labels)->size());
      return absl::OkStatus();
    }
  }
  absl::StatusOr<tok::RawCorpus> data = ReadData(absl::GetFlag(FLAGS_data));
  if (!data.ok()) return data.status();
  if (!labels->has_value()) {
    if (!Quiet()) absl::FPrintF(stderr, "no label map beside the model: label ids from the data\n");
    *labels = tok::LabelMap::FromCorpus(*data);
  }
  const Loaded loaded{*std::move(tokenizer), *std::move(data)};
  const auto build = [&] { return EncodeLoaded(loaded, **labels, *encode); };
  tok::TokenizedCorpus corpus;
  if (out.empty()) {
    absl::StatusOr<tok::TokenizedCorpus> built = build();
    if (!built.ok()) return built.status();
    corpus = *std::move(built);
  } else {
    absl::StatusOr<uint64_t> fingerprint = EncodeFingerprint(loaded.tokenizer, *encode, **labels);
    if (!fingerprint.ok()) return fingerprint.status();
    absl::StatusOr<tok::CachedCorpus> cached = tok::LoadOrBuildCorpus(out, *fingerprint, build);
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

absl::Status WriteHistogramCsv(const std::string& path,
                               const std::vector<tok::HistogramBin>& bins) {
  std::string csv = "lower,upper,count\n";
  for (const tok::HistogramBin& b : bins) {
    absl::StrAppend(&csv, b.lower, ",", b.upper, ",", b.count, "\n");
  }
  return base::WriteFileAtomically(path, csv);
}

// A bar chart of the histogram with the --max-len limit marked: enough to see the tail a limit
// cuts off, without a plotting dependency.
absl::Status WriteHistogramSvg(const std::string& path, const std::vector<tok::HistogramBin>& bins,
                               const tok::LengthStats& stats, int64_t limit) {
  constexpr double kWidth = 800, kHeight = 400, kLeft = 60, kBottom = 40, kTop = 30;
  const double plot_w = kWidth - kLeft - 20, plot_h = kHeight - kBottom - kTop;
  int64_t peak = 1;
  for (const tok::HistogramBin& b : bins) peak = std::max(peak, b.count);
  const double x_max = bins.empty() ? 1.0 : static_cast<double>(bins.back().upper);
  auto x = [&](double v) { return kLeft + plot_w * v / x_max; };
  std::string svg = base::SvgHeader(static_cast<int>(kWidth), static_cast<int>(kHeight), 12,
                                      /*white_background=*/false);
  absl::StrAppendFormat(&svg,
                        "<text x=\"%.0f\" y=\"18\">token lengths: n=%d mean=%.1f p50=%d p90=%d "
                        "p99=%d max=%d</text>\n",
                        kLeft, stats.count, stats.mean, stats.p50, stats.p90, stats.p99, stats.max);
  for (const tok::HistogramBin& b : bins) {
    const double h = plot_h * static_cast<double>(b.count) / static_cast<double>(peak);
    absl::StrAppendFormat(
        &svg,
        "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" "
        "fill=\"#4c78a8\"><title>%d-%d: %d</title></rect>\n",
        x(static_cast<double>(b.lower)), kTop + plot_h - h,
        std::max(0.5, x(static_cast<double>(b.upper)) - x(static_cast<double>(b.lower)) - 0.5), h,
        b.lower, b.upper - 1, b.count);
  }
  absl::StrAppendFormat(&svg,
                        "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"black\"/>\n"
                        "<text x=\"%.0f\" y=\"%.0f\">0</text>\n"
                        "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">%.0f tokens</text>\n",
                        kLeft, kTop + plot_h, kLeft + plot_w, kTop + plot_h, kLeft,
                        kTop + plot_h + 16, kLeft + plot_w, kTop + plot_h + 16, x_max);
  if (limit > 0 && static_cast<double>(limit) <= x_max) {
    absl::StrAppendFormat(
        &svg,
        "<line x1=\"%.2f\" y1=\"%.0f\" x2=\"%.2f\" y2=\"%.0f\" stroke=\"#e45756\" "
        "stroke-dasharray=\"4\"/>\n<text x=\"%.2f\" y=\"%.0f\" fill=\"#e45756\">"
        "max_len %d: %.1f%% over</text>\n",
        x(static_cast<double>(limit)), kTop, x(static_cast<double>(limit)), kTop + plot_h,
        x(static_cast<double>(limit)) + 4, kTop + 14, limit, 100.0 * stats.over_limit_share);
  }
  svg += "</svg>\n";
  return base::WriteFileAtomically(path, svg);
}

absl::Status Stats(const std::vector<std::string>& rest) {
  if (!rest.empty()) return UsageError(absl::StrCat("unexpected argument '", rest[0], "'"));
  const int64_t bin_width = absl::GetFlag(FLAGS_bin_width);
  if (bin_width <= 0) {
    return UsageError(absl::StrCat(FlagAsWritten("bin_width"), " must be >= 1, got ", bin_width));
  }
  absl::StatusOr<Loaded> loaded = LoadModelAndData();
  if (!loaded.ok()) return loaded.status();
  // Lengths before truncation (special tokens included): what a limit would cut.
  tok::EncodeOptions untruncated;
  untruncated.max_length = 0;
  absl::StatusOr<tok::TokenizedCorpus> corpus =
      EncodeLoaded(*loaded, tok::LabelMap::FromCorpus(loaded->corpus), untruncated);
  if (!corpus.ok()) return corpus.status();
  const std::vector<int64_t> lengths = corpus->Lengths();
  const int64_t limit = absl::GetFlag(FLAGS_max_len);
  const tok::LengthStats s = tok::ComputeLengthStats(lengths, limit);
  PrintReaderSummary(loaded->corpus.report);
  absl::PrintF("count: %d\ntokens: %d\nmean: %.1f\nmin: %d\np50: %d\np90: %d\np99: %d\nmax: %d\n",
               s.count, s.total, s.mean, s.min, s.p50, s.p90, s.p99, s.max);
  if (limit > 0) {
    absl::PrintF("over_max_len: %d of %d (%.2f%% over %d tokens)\n", s.over_limit, s.count,
                 100.0 * s.over_limit_share, limit);
  }
  const std::vector<tok::HistogramBin> bins = tok::LengthHistogram(lengths, bin_width);
  if (const std::string csv = absl::GetFlag(FLAGS_csv); !csv.empty()) {
    if (absl::Status st = WriteHistogramCsv(csv, bins); !st.ok()) return st;
    absl::PrintF("histogram_csv: %s\n", csv);
  }
  if (const std::string svg = absl::GetFlag(FLAGS_svg); !svg.empty()) {
    if (absl::Status st = WriteHistogramSvg(svg, bins, s, limit); !st.ok()) return st;
    absl::PrintF("histogram_svg: %s\n", svg);
  }
  return absl::OkStatus();
}

int RunTokenize(const std::vector<std::string>& args) {
  if (args.empty()) return Usage("tokenize", "missing action: train, encode or stats");
  const std::string action = args[0];
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  absl::Status status;
  if (action == "train") {
    status = Train(rest);
  } else if (action == "encode") {
    status = Encode(rest);
  } else if (action == "stats") {
    status = Stats(rest);
  } else {
    return Usage("tokenize",
                 absl::StrCat("unknown action '", action, "' (expected train, encode or stats)"));
  }
  if (status.ok()) return kExitOk;
  return ReportError(absl::StrCat("tokenize ", action), status);
}

}  // namespace

const Subcommand kTokenizeCommand = {
    "tokenize",
    "train, apply and inspect tokenizers (SentencePiece, Hugging Face WordPiece, byte-level BPE)",
    "usage: padless tokenize train --input FILE[,FILE...] --out PREFIX [--vocab-size N]\n"
    "                              [--model-type unigram|bpe] [--character-coverage C]\n"
    "                              [--user-symbols A,B]\n"
    "       padless tokenize encode --model M.model --data FILE [--out CACHE] [--max-len N]\n"
    "       padless tokenize encode --model M --data FILE --ids-out PATH [--max-len N]\n"
    "       padless tokenize stats --model M.model --data FILE [--max-len N] [--csv PATH]\n"
    "                              [--svg PATH]\n\n"
    "train: trains a SentencePiece model with [PAD]=0 [UNK]=1 [CLS]=2 [SEP]=3 [MASK]=4 and\n"
    "  writes PREFIX.model (plus PREFIX.labels.json when trained on labeled data).\n"
    "encode: encodes a labeled corpus; with --out, loads or (re)builds the token cache there;\n"
    "  with --ids-out, writes each example's ids (special tokens included) as a line of text.\n"
    "--model: a padless .model, a Hugging Face tokenizer.json (WordPiece, or byte-level BPE as\n"
    "  RoBERTa's) or a model directory\n"
    "  (padless, or Hugging Face's with tokenizer.json or XLM-R's sentencepiece.bpe.model).\n"
    "stats: prints the token-length distribution (special tokens included, before truncation).\n"
    "Exit codes: 0 ok, 1 runtime failure (data, model, I/O), 2 usage error.",
    {"input",
     "vocab_size",
     "model_type",
     "character_coverage",
     "user_symbols",
     "input_sentence_size",
     "data",
     "model",
     "out",
     "max_len",
     "truncation",
     "pair_truncation",
     "head_fraction",
     "text_field",
     "text_pair_field",
     "label_field",
     "format",
     "skip_bad_rows",
     "threads",
     "csv",
     "svg",
     "bin_width",
     "ids_out",
     "quiet"},
    RunTokenize};

}  // namespace padless::cli
