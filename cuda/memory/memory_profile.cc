#include "padless/cuda/memory/memory_profile.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "padless/base/svg.h"
#include "padless/base/text_output.h"

namespace padless::cuda {
namespace {

using base::CsvField;
using base::XmlEscape;

constexpr double kGiB = 1073741824.0;

// A qualitative palette that stays distinguishable for up to 8 lines, then dashes repeat it.
constexpr const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                   "#ff7f0e", "#17becf", "#8c564b", "#e377c2"};

}  // namespace

std::string MemoryProfileCsv(absl::Span<const MemoryProfilePoint> points) {
  std::string out =
      "config,batch,seq_len,tokens,baseline_bytes,gradient_bytes,peak_allocated_bytes,"
      "peak_reserved_bytes,activation_bytes,oom\n";
  for (const MemoryProfilePoint& p : points) {
    absl::StrAppend(&out, CsvField(p.config), ",", p.batch, ",", p.seq_len, ",",
                    p.batch * p.seq_len, ",", p.baseline_bytes, ",", p.gradient_bytes, ",",
                    p.peak_allocated_bytes, ",", p.peak_reserved_bytes, ",",
                    p.peak_allocated_bytes - p.baseline_bytes - p.gradient_bytes, ",",
                    p.oom ? 1 : 0, "\n");
  }
  return out;
}

std::string MemoryProfileSvg(absl::Span<const MemoryProfilePoint> points,
                             const std::string& title) {
  // Lines keyed by (config, batch) in first-seen order.
  std::vector<std::pair<std::string, std::vector<const MemoryProfilePoint*>>> lines;
  std::map<std::string, size_t> index;
  double min_len = 1e300, max_len = 0, max_gib = 0;
  for (const MemoryProfilePoint& p : points) {
    if (p.oom || p.seq_len <= 0) continue;
    const std::string key = absl::StrCat(p.config, " b=", p.batch);
    auto [it, inserted] = index.emplace(key, lines.size());
    if (inserted) lines.push_back({key, {}});
    lines[it->second].second.push_back(&p);
    min_len = std::min(min_len, static_cast<double>(p.seq_len));
    max_len = std::max(max_len, static_cast<double>(p.seq_len));
    max_gib = std::max(max_gib, p.peak_allocated_bytes / kGiB);
  }
  const int width = 960, plot_h = 480, left = 70, right = 20, top = 40, bottom = 50;
  const int legend_rows = static_cast<int>((lines.size() + 1) / 2);
  const int height = top + plot_h + bottom + 18 * legend_rows + 10;
  const int plot_w = width - left - right;
  std::string svg = base::SvgHeader(width, height, 12);
  absl::StrAppendFormat(&svg, "<text x=\"%d\" y=\"22\" font-size=\"15\">%s</text>\n", left,
                        XmlEscape(title));
  if (lines.empty()) {
    absl::StrAppend(&svg, "<text x=\"", left, "\" y=\"", top + 20,
                    "\">no measurements (all points ran out of memory)</text>\n</svg>\n");
    return svg;
  }
  const double lx0 = std::log2(min_len), lx1 = std::max(std::log2(max_len), lx0 + 1);
  // Round the y range up to a step of 1, 2 or 5 x 10^k GiB.
  const double raw_step = std::max(max_gib, 1e-6) / 5;
  const double mag = std::pow(10.0, std::floor(std::log10(raw_step)));
  const double step = raw_step <= mag       ? mag
                      : raw_step <= 2 * mag ? 2 * mag
                      : raw_step <= 5 * mag ? 5 * mag
                                            : 10 * mag;
  const double y_max = step * std::ceil(max_gib / step);
  auto px = [&](double len) { return left + plot_w * (std::log2(len) - lx0) / (lx1 - lx0); };
  auto py = [&](double gib) { return top + plot_h * (1.0 - gib / y_max); };
  // Axes, grid and ticks.
  for (double y = 0; y <= y_max + step / 2; y += step) {
    absl::StrAppendFormat(&svg,
                          "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                          "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n",
                          left, py(y), left + plot_w, py(y), left - 6, py(y) + 4, y);
  }
  for (double l = std::exp2(std::ceil(lx0)); l <= max_len * 1.001; l *= 2) {
    absl::StrAppendFormat(&svg,
                          "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#ddd\"/>"
                          "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%g</text>\n",
                          px(l), top, px(l), top + plot_h, px(l), top + plot_h + 16, l);
  }
  absl::StrAppendFormat(
      &svg,
      "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"black\"/>\n"
      "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">sequence length (tokens, log scale)</text>\n"
      "<text x=\"16\" y=\"%d\" transform=\"rotate(-90 16 %d)\" text-anchor=\"middle\">peak "
      "allocated (GiB)</text>\n",
      left, top, plot_w, plot_h, left + plot_w / 2, top + plot_h + 36, top + plot_h / 2,
      top + plot_h / 2);
  for (size_t i = 0; i < lines.size(); ++i) {
    auto pts = lines[i].second;
    std::sort(pts.begin(), pts.end(),
              [](const auto* a, const auto* b) { return a->seq_len < b->seq_len; });
    const char* color = kColors[i % 8];
    const char* dash = (i / 8) % 2 == 1 ? " stroke-dasharray=\"6 3\"" : "";
    std::string coords;
    for (const auto* p : pts) {
      absl::StrAppendFormat(&coords, "%.1f,%.1f ", px(p->seq_len),
                            py(p->peak_allocated_bytes / kGiB));
    }
    absl::StrAppendFormat(&svg,
                          "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s "
                          "points=\"%s\"/>\n",
                          color, dash, coords);
    for (const auto* p : pts) {
      absl::StrAppendFormat(&svg, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n",
                            px(p->seq_len), py(p->peak_allocated_bytes / kGiB), color);
    }
    const int lx = left + static_cast<int>(i % 2) * (plot_w / 2);
    const int ly = top + plot_h + bottom + 18 * static_cast<int>(i / 2);
    absl::StrAppendFormat(&svg,
                          "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" "
                          "stroke-width=\"2\"%s/><text x=\"%d\" y=\"%d\">%s</text>\n",
                          lx, ly, lx + 24, ly, color, dash, lx + 30, ly + 4,
                          XmlEscape(lines[i].first));
  }
  absl::StrAppend(&svg, "</svg>\n");
  return svg;
}

std::vector<ConfigFit> FitPerConfig(absl::Span<const MemoryProfilePoint> points,
                                    absl::Span<const int64_t> held_out_lengths,
                                    std::vector<std::string>* skipped) {
  std::vector<std::pair<std::string, std::vector<MemorySample>>> groups;
  std::map<std::string, size_t> index;
  for (const MemoryProfilePoint& p : points) {
    if (p.oom) continue;
    auto [it, inserted] = index.emplace(p.config, groups.size());
    if (inserted) groups.push_back({p.config, {}});
    groups[it->second].second.push_back({p.batch, p.seq_len, p.peak_allocated_bytes});
  }
  std::vector<ConfigFit> fits;
  for (const auto& [config, samples] : groups) {
    absl::StatusOr<HeldOutReport> report =
        FitWithHeldOutLengths(samples, held_out_lengths, /*quadratic=*/true);
    if (!report.ok()) {
      if (skipped != nullptr) {
        skipped->push_back(absl::StrCat(config, ": ", report.status().message()));
      }
      continue;
    }
    fits.push_back({config, *std::move(report)});
  }
  return fits;
}

}  // namespace padless::cuda
