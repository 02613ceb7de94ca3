#include "padless/batching/padding_report.h"

#include <algorithm>
#include <chrono>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "padless/batching/collator.h"
#include "padless/batching/padding_stats.h"
#include "padless/batching/strategy_registry.h"
#include "padless/base/svg.h"
#include "padless/base/text_output.h"

namespace padless::batching {
namespace {

using base::XmlEscape;

double MsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

}  // namespace

std::vector<NamedStrategy> StandardStrategies(int64_t max_len, int64_t batch_size,
                                              int64_t max_tokens, uint64_t seed) {
  const StrategySizes sizes{max_len, batch_size, max_tokens, seed};
  std::vector<NamedStrategy> out;
  for (const std::string& name : StandardStrategyNames()) {
    out.push_back({name, *LookupStrategy(name, sizes)});  // a registered name always resolves
  }
  return out;
}

absl::StatusOr<std::vector<StrategyRow>> ComparePaddingStrategies(
    const corpus::TokenizedCorpus& corpus, const std::vector<NamedStrategy>& strategies) {
  const std::vector<int64_t> lengths = corpus.Lengths();
  const Collator collator;
  std::vector<StrategyRow> rows;
  for (const NamedStrategy& s : strategies) {
    auto start = std::chrono::steady_clock::now();
    absl::StatusOr<std::vector<BatchSpec>> plan = Planner(s.options).Plan(lengths, 0);
    const double plan_ms = MsSince(start);
    if (!plan.ok()) {
      return absl::Status(plan.status().code(),
                          absl::StrCat("strategy ", s.name, ": ", plan.status().message()));
    }
    start = std::chrono::steady_clock::now();
    for (const BatchSpec& spec : *plan) {
      absl::StatusOr<Batch> b = collator.Collate(corpus, spec);
      if (!b.ok()) {
        return absl::Status(b.status().code(),
                            absl::StrCat("strategy ", s.name, ": ", b.status().message()));
      }
    }
    const double collate_ms = MsSince(start);
    const PaddingStats stats = ComputePaddingStats(*plan);
    rows.push_back({s.name, stats.padding_efficiency, stats.batches, stats.distinct_shapes,
                    stats.tokens_per_batch_p50, stats.tokens_per_batch_p99, plan_ms, collate_ms,
                    stats.real_tokens});
  }
  return rows;
}

std::string FormatTable(const std::vector<StrategyRow>& rows) {
  std::string out =
      absl::StrFormat("%-26s %10s %8s %7s %8s %8s %9s %11s\n", "strategy", "efficiency", "batches",
                      "shapes", "tok_p50", "tok_p99", "plan_ms", "collate_ms");
  for (const StrategyRow& r : rows) {
    absl::StrAppendFormat(&out, "%-26s %10.4f %8d %7d %8d %8d %9.2f %11.2f\n", r.strategy,
                          r.padding_efficiency, r.batches, r.distinct_shapes,
                          r.tokens_per_batch_p50, r.tokens_per_batch_p99, r.plan_ms, r.collate_ms);
  }
  return out;
}

std::string FormatCsv(const std::vector<StrategyRow>& rows) {
  std::string out =
      "strategy,padding_efficiency,batches,distinct_shapes,tokens_per_batch_p50,"
      "tokens_per_batch_p99,plan_ms,collate_ms\n";
  for (const StrategyRow& r : rows) {
    absl::StrAppendFormat(&out, "%s,%.6f,%d,%d,%d,%d,%.3f,%.3f\n", r.strategy, r.padding_efficiency,
                          r.batches, r.distinct_shapes, r.tokens_per_batch_p50,
                          r.tokens_per_batch_p99, r.plan_ms, r.collate_ms);
  }
  return out;
}

std::string FormatSvg(const std::vector<StrategyRow>& rows, const std::string& title) {
  constexpr int kLabelWidth = 210, kBarWidth = 460, kRowHeight = 26, kTop = 50;
  const int height = kTop + static_cast<int>(rows.size()) * kRowHeight + 40;
  const int width = kLabelWidth + kBarWidth + 90;
  std::string out = base::SvgHeader(width, height, 13);
  absl::StrAppendFormat(&out,
                        "<text x=\"%d\" y=\"24\" font-size=\"16\" font-weight=\"bold\">%s</text>\n",
                        10, XmlEscape(title));
  for (int tick = 0; tick <= 100; tick += 25) {
    const int x = kLabelWidth + kBarWidth * tick / 100;
    absl::StrAppendFormat(
        &out,
        "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#ddd\"/>\n"
        "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" fill=\"#666\">%d%%</text>\n",
        x, kTop - 6, x, height - 30, x, height - 14, tick);
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    const StrategyRow& r = rows[i];
    const int y = kTop + static_cast<int>(i) * kRowHeight;
    const double eff = std::min(std::max(r.padding_efficiency, 0.0), 1.0);
    const char* color = eff >= 0.99  ? "#2a9d8f"
                        : eff >= 0.9 ? "#8ab17d"
                        : eff >= 0.7 ? "#e9c46a"
                                     : "#e76f51";
    absl::StrAppendFormat(&out,
                          "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>\n"
                          "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"/>\n"
                          "<text x=\"%.1f\" y=\"%d\">%.1f%%</text>\n",
                          kLabelWidth - 8, y + 17, XmlEscape(r.strategy), kLabelWidth, y + 4,
                          kBarWidth * eff, kRowHeight - 8, color, kLabelWidth + kBarWidth * eff + 6,
                          y + 17, 100 * eff);
  }
  out += "</svg>\n";
  return out;
}

}  // namespace padless::batching
