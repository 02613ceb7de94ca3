// padless tokenize stats: prints the token-length distribution of a corpus (special tokens
// included, before truncation) and the share a --max-len would cut, and writes its histogram as
// CSV and as an SVG chart. The work is in padless_corpus (length_stats.h); this file maps flags
// onto it and prints.
#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli_util.h"
#include "common_flags.h"
#include "flag_spelling.h"
#include "padless/base/atomic_file_writer.h"
#include "padless/base/svg.h"
#include "padless/corpus/corpus_reader.h"
#include "padless/corpus/label_map.h"
#include "padless/corpus/length_stats.h"
#include "padless/corpus/tokenized_corpus.h"
#include "padless/tokenize/tokenizer.h"
#include "tokenize_actions.h"
#include "tokenize_data.h"

ABSL_FLAG(int64_t, bin_width, 16, "tokenize stats: histogram bin width in tokens");

namespace padless::cli {
namespace {

namespace tok = ::padless::tokenize;

// --model and --data, loaded and read after the flags are checked.
absl::StatusOr<TokenizerAndCorpus> LoadTokenizerAndData() {
  absl::StatusOr<tok::Tokenizer> tokenizer = LoadTokenizer();
  if (!tokenizer.ok()) return tokenizer.status();
  absl::StatusOr<corpus::RawCorpus> corpus = ReadData(absl::GetFlag(FLAGS_data));
  if (!corpus.ok()) return corpus.status();
  return TokenizerAndCorpus{*std::move(tokenizer), *std::move(corpus)};
}

absl::Status WriteHistogramCsv(const std::string& path,
                               const std::vector<corpus::HistogramBin>& bins) {
  std::string csv = "lower,upper,count\n";
  for (const corpus::HistogramBin& b : bins) {
    absl::StrAppend(&csv, b.lower, ",", b.upper, ",", b.count, "\n");
  }
  return base::WriteFileAtomically(path, csv);
}

// A bar chart of the histogram with the --max-len limit marked: enough to see the tail a limit
// cuts off, without a plotting dependency.
absl::Status WriteHistogramSvg(const std::string& path,
                               const std::vector<corpus::HistogramBin>& bins,
                               const corpus::LengthStats& stats, int64_t limit) {
  constexpr double kWidth = 800, kHeight = 400, kLeft = 60, kBottom = 40, kTop = 30;
  const double plot_w = kWidth - kLeft - 20, plot_h = kHeight - kBottom - kTop;
  int64_t peak = 1;
  for (const corpus::HistogramBin& b : bins) peak = std::max(peak, b.count);
  const double x_max = bins.empty() ? 1.0 : static_cast<double>(bins.back().upper);
  auto x = [&](double v) { return kLeft + plot_w * v / x_max; };
  std::string svg = base::SvgHeader(static_cast<int>(kWidth), static_cast<int>(kHeight), 12,
                                      /*white_background=*/false);
  absl::StrAppendFormat(&svg,
                        "<text x=\"%.0f\" y=\"18\">token lengths: n=%d mean=%.1f p50=%d p90=%d "
                        "p99=%d max=%d</text>\n",
                        kLeft, stats.count, stats.mean, stats.p50, stats.p90, stats.p99, stats.max);
  for (const corpus::HistogramBin& b : bins) {
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

}  // namespace

absl::Status TokenizeStats(const std::vector<std::string>& rest) {
  if (!rest.empty()) return UsageError(absl::StrCat("unexpected argument '", rest[0], "'"));
  const int64_t bin_width = absl::GetFlag(FLAGS_bin_width);
  if (bin_width <= 0) {
    return UsageError(absl::StrCat(FlagAsWritten("bin_width"), " must be >= 1, got ", bin_width));
  }
  absl::StatusOr<TokenizerAndCorpus> loaded = LoadTokenizerAndData();
  if (!loaded.ok()) return loaded.status();
  // Lengths before truncation (special tokens included): what a limit would cut.
  tok::EncodeOptions untruncated;
  untruncated.max_length = 0;
  absl::StatusOr<corpus::TokenizedCorpus> corpus =
      EncodeLoaded(*loaded, corpus::LabelMap::FromCorpus(loaded->corpus), untruncated);
  if (!corpus.ok()) return corpus.status();
  const std::vector<int64_t> lengths = corpus->Lengths();
  const int64_t limit = absl::GetFlag(FLAGS_max_len);
  const corpus::LengthStats s = corpus::ComputeLengthStats(lengths, limit);
  PrintReaderSummary(loaded->corpus.report);
  absl::PrintF("count: %d\ntokens: %d\nmean: %.1f\nmin: %d\np50: %d\np90: %d\np99: %d\nmax: %d\n",
               s.count, s.total, s.mean, s.min, s.p50, s.p90, s.p99, s.max);
  if (limit > 0) {
    absl::PrintF("over_max_len: %d of %d (%.2f%% over %d tokens)\n", s.over_limit, s.count,
                 100.0 * s.over_limit_share, limit);
  }
  const std::vector<corpus::HistogramBin> bins = corpus::LengthHistogram(lengths, bin_width);
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

}  // namespace padless::cli
