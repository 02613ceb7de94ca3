#include "padless/prune/importance_report.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "padless/base/atomic_file_writer.h"
#include "padless/base/svg.h"

namespace padless::prune {

namespace {

double LayerNorm2(const std::vector<double>& scores) {
  double s = 0.0;
  for (double v : scores) s += v * v;
  return std::sqrt(s);
}

void AppendRows(const char* kind, int64_t layer, const std::vector<double>& scores,
                const std::vector<int64_t>& original, std::string* csv) {
  const double norm = LayerNorm2(scores);
  for (size_t u = 0; u < scores.size(); ++u) {
    absl::StrAppendFormat(csv, "%s,%d,%d,%d,%.9g,%.9g\n", kind, layer, u,
                          original.empty() ? static_cast<int64_t>(u) : original[u], scores[u],
                          norm > 0 ? scores[u] / norm : 0.0);
  }
}

// White (least important in the layer) to dark blue (most), by the layer-normalised score.
std::string Shade(double fraction) {
  const int v = static_cast<int>(std::lround(255.0 * (1.0 - std::clamp(fraction, 0.0, 1.0))));
  return absl::StrFormat("rgb(%d,%d,255)", v, v);
}

}  // namespace

std::string ImportanceCsv(const models::EncoderConfig& config, const UnitImportance& importance) {
  std::string csv = "kind,layer,unit,original,importance,normalized\n";
  for (size_t l = 0; l < importance.heads.size(); ++l) {
    AppendRows("head", l, importance.heads[l], config.kept_heads(l), &csv);
  }
  for (size_t l = 0; l < importance.ffn.size(); ++l) {
    AppendRows("ffn", l, importance.ffn[l], {}, &csv);
  }
  return csv;
}

std::string HeadHeatmapSvg(const models::EncoderConfig& config, const UnitImportance& importance) {
  constexpr int kCell = 28, kLeft = 70, kTop = 50;
  const int64_t heads = config.heads();
  const int64_t layers = static_cast<int64_t>(importance.heads.size());
  const int width = kLeft + static_cast<int>(heads) * kCell + 20;
  const int height = kTop + static_cast<int>(layers) * kCell + 40;
  std::string svg = base::SvgHeader(width, height, 11);
  absl::StrAppendFormat(&svg,
                        "<text x=\"%d\" y=\"20\" font-size=\"13\">Head importance (each layer "
                        "scaled to its most important head; grey: pruned)</text>\n",
                        kLeft);
  for (int64_t h = 0; h < heads; ++h) {
    absl::StrAppendFormat(&svg, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">%d</text>\n",
                          kLeft + h * kCell + kCell / 2, kTop - 6, h);
  }
  for (int64_t l = 0; l < layers; ++l) {
    const int y = kTop + static_cast<int>(l) * kCell;
    absl::StrAppendFormat(&svg, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">layer %d</text>\n",
                          kLeft - 6, y + kCell / 2 + 4, l);
    const std::vector<double>& scores = importance.heads[l];
    const double top = scores.empty() ? 0.0 : *std::max_element(scores.begin(), scores.end());
    std::vector<std::string> fill(heads, "#bbbbbb");
    const std::vector<int64_t> original = config.kept_heads(l);
    for (size_t u = 0; u < scores.size() && u < original.size(); ++u) {
      fill[original[u]] = Shade(top > 0 ? scores[u] / top : 0.0);
    }
    for (int64_t h = 0; h < heads; ++h) {
      absl::StrAppendFormat(&svg,
                            "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\" "
                            "stroke=\"#ffffff\"/>\n",
                            kLeft + h * kCell, y, kCell, kCell, fill[h]);
    }
  }
  absl::StrAppendFormat(&svg, "<text x=\"%d\" y=\"%d\">original head index</text>\n", kLeft,
                        height - 12);
  svg += "</svg>\n";
  return svg;
}

absl::Status WriteImportanceReport(const std::string& csv_path, const std::string& svg_path,
                                   const models::EncoderConfig& config,
                                   const UnitImportance& importance) {
  if (absl::Status s = base::WriteFileAtomically(csv_path, ImportanceCsv(config, importance));
      !s.ok()) {
    return s;
  }
  return base::WriteFileAtomically(svg_path, HeadHeatmapSvg(config, importance));
}

}  // namespace padless::prune
