#include "report.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "padless/base/atomic_file_writer.h"
#include "padless/base/svg.h"
#include "padless/base/text_output.h"

namespace padless::bench::e2e {
namespace {

using base::CsvField;
using base::XmlEscape;

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

double GiB(int64_t bytes) { return static_cast<double>(bytes) / kGiB; }

std::vector<AnchorRow> AnchorRows(const ReportInput& in) {
  std::vector<AnchorRow> rows;
  for (const AnchorRun& run : in.anchors) rows.insert(rows.end(), run.rows.begin(), run.rows.end());
  return rows;
}

// The plain-PyTorch packed peer with the same checkpointing, if it ran.
std::optional<AnchorRow> PlainPeer(const std::vector<AnchorRow>& rows, bool checkpoint) {
  for (const AnchorRow& r : rows) {
    if (r.impl == "plain_pytorch" && r.checkpoint == checkpoint) return r;
  }
  return std::nullopt;
}

// Hugging Face on its best padding strategy, with the same checkpointing.
std::optional<AnchorRow> HfBest(const std::vector<AnchorRow>& rows, bool checkpoint) {
  std::optional<AnchorRow> best;
  for (const AnchorRow& r : rows) {
    if (r.impl != "hf_transformers" || r.checkpoint != checkpoint) continue;
    if (!best || r.real_tokens_per_s > best->real_tokens_per_s) best = r;
  }
  return best;
}

std::optional<double> Ratio(double value, const std::optional<AnchorRow>& peer) {
  if (!peer || !(peer->real_tokens_per_s > 0)) return std::nullopt;
  return value / peer->real_tokens_per_s;
}

std::string RatioText(const std::optional<double>& r) {
  return r ? absl::StrFormat("%.2fx", *r) : std::string("n/a");
}

std::string Kilo(double tokens_per_s) { return absl::StrFormat("%.1fk", tokens_per_s / 1e3); }

std::string Percent(double share) { return absl::StrFormat("%.1f%%", 100.0 * share); }

// A round tick step (1, 2 or 5 times a power of ten) that splits `range` into about 5 parts.
double NiceStep(double range) {
  if (!(range > 0)) return 1;
  const double raw = range / 5;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (raw <= m * mag) return m * mag;
  }
  return 10 * mag;
}

const RunResult* BestRun(const std::vector<RunResult>& runs) {
  const RunResult* best = nullptr;
  for (const RunResult& r : runs) {
    if (!best || r.tokens_per_second() > best->tokens_per_second()) best = &r;
  }
  return best;
}

const char* StrategyColor(Strategy s) {
  switch (s) {
    case Strategy::kPadToMax:
      return "#d62728";
    case Strategy::kPadLongest:
      return "#ff7f0e";
    case Strategy::kHfGroupByLength:
      return "#bcbd22";
    case Strategy::kTokenBudgetBuckets:
      return "#2ca02c";
    case Strategy::kPackedDense:
      return "#17becf";
    case Strategy::kPackedVarlen:
      return "#1f77b4";
  }
  return "#000000";
}

}  // namespace

double Mfu(const RunResult& r, double matmul_tflops) {
  return matmul_tflops > 0 ? r.tflops() / matmul_tflops : 0;
}

std::string RenderCsv(const ReportInput& in) {
  const std::vector<AnchorRow> anchors = AnchorRows(in);
  std::string out =
      "kind,name,strategy,precision,checkpoint,backend,steps,real_tokens,token_slots,"
      "real_tokens_per_s,padding_efficiency,step_ms,data_wait_share,peak_allocated_bytes,"
      "peak_reserved_bytes,static_bytes,activation_bytes,tflops,mfu,matmul_tflops,mean_loss,"
      "vs_plain_pytorch,vs_hf_best,distinct_shapes\n";
  auto ratio_field = [](const std::optional<double>& r) {
    return r ? absl::StrFormat("%.4f", *r) : std::string();
  };
  for (const RunResult& r : in.runs) {
    const double tps = r.tokens_per_second();
    absl::StrAppend(
        &out,
        absl::StrJoin({std::string("padless"),
                       CsvField(r.config.Name()),
                       StrategyName(r.config.strategy),
                       PrecisionName(r.config.precision),
                       CsvField(r.config.checkpoint),
                       CsvField(r.backend),
                       absl::StrCat(r.steps),
                       absl::StrCat(r.real_tokens),
                       absl::StrCat(r.token_slots),
                       absl::StrFormat("%.1f", tps),
                       absl::StrFormat("%.4f", r.padding_efficiency()),
                       absl::StrFormat("%.3f", r.step_ms()),
                       absl::StrFormat("%.4f", r.data_wait_share()),
                       absl::StrCat(r.peak_allocated_bytes),
                       absl::StrCat(r.peak_reserved_bytes),
                       absl::StrCat(r.static_bytes),
                       absl::StrCat(r.activation_bytes()),
                       absl::StrFormat("%.2f", r.tflops()),
                       absl::StrFormat("%.4f", Mfu(r, in.matmul_tflops)),
                       absl::StrFormat("%.1f", in.matmul_tflops),
                       absl::StrFormat("%.5f", r.mean_loss),
                       ratio_field(Ratio(tps, PlainPeer(anchors, r.config.checkpointed()))),
                       ratio_field(Ratio(tps, HfBest(anchors, r.config.checkpointed()))),
                       absl::StrCat(r.distinct_shapes)},
                      ","),
        "\n");
  }
  for (const AnchorRow& a : anchors) {
    absl::StrAppend(&out,
                    absl::StrJoin({std::string("anchor"),
                                   CsvField(a.Name()),
                                   CsvField(a.strategy),
                                   std::string("bf16"),
                                   std::string(a.checkpoint ? "all" : "none"),
                                   std::string(),
                                   std::string(),
                                   std::string(),
                                   std::string(),
                                   absl::StrFormat("%.1f", a.real_tokens_per_s),
                                   absl::StrFormat("%.4f", a.padding_efficiency),
                                   absl::StrFormat("%.3f", a.step_ms),
                                   std::string(),
                                   absl::StrCat(a.peak_allocated_bytes),
                                   absl::StrCat(a.peak_reserved_bytes),
                                   absl::StrCat(a.static_bytes),
                                   absl::StrCat(a.activation_bytes()),
                                   absl::StrFormat("%.2f", a.tflops),
                                   absl::StrFormat("%.4f", a.mfu),
                                   absl::StrFormat("%.1f", a.matmul_tflops),
                                   std::string(),
                                   std::string(),
                                   std::string(),
                                   std::string()},
                                  ","),
                    "\n");
  }
  return out;
}

std::string RenderThroughputSvg(const ReportInput& in) {
  struct Bar {
    std::string label;
    double value;
    std::string color;
  };
  std::vector<Bar> bars;
  for (const RunResult& r : in.runs) {
    std::string color = r.config.precision == Precision::kFp32
                            ? "#ff7f0e"
                            : (r.config.checkpointed() ? "#9ecae1" : "#1f77b4");
    bars.push_back({"padless " + r.config.Name(), r.tokens_per_second(), color});
  }
  for (const AnchorRow& a : AnchorRows(in)) {
    bars.push_back({a.Name(), a.real_tokens_per_s, a.checkpoint ? "#c7c7c7" : "#7f7f7f"});
  }
  const bool refs = in.matmul_tflops > 0;  // reference figures are H200 numbers
  double max_value = 1;
  for (const Bar& b : bars) max_value = std::max(max_value, b.value);
  if (refs) max_value = std::max(max_value, kRefTorchPackedTokensPerSecond);
  const double step = NiceStep(max_value);
  const double axis_max = std::ceil(max_value * 1.05 / step) * step;
  const int left = 330, width = 520, right = 90, top = 50, row = 22;
  const int height = top + static_cast<int>(bars.size()) * row + 50;
  const int total_width = left + width + right;
  auto x_of = [&](double v) { return left + width * v / axis_max; };

  std::string svg = base::SvgHeader(total_width, height, 12);
  absl::StrAppendFormat(&svg,
                        "<text x=\"%d\" y=\"22\" font-size=\"15\" font-weight=\"bold\">Real "
                        "tokens/s per configuration (%s, budget %d token slots/step)</text>\n",
                        10, XmlEscape(in.gpu_name), in.run_options.budget);
  const int axis_y = top + static_cast<int>(bars.size()) * row + 4;
  for (double t = 0; t <= axis_max + step / 2; t += step) {
    const double x = x_of(t);
    absl::StrAppendFormat(&svg,
                          "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#e0e0e0\"/>\n"
                          "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n",
                          x, top - 4, x, axis_y, x, axis_y + 16, Kilo(t));
  }
  absl::StrAppendFormat(&svg,
                        "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">real tokens/s</text>\n",
                        left + width / 2, axis_y + 34);
  for (size_t i = 0; i < bars.size(); ++i) {
    const int y = top + static_cast<int>(i) * row;
    const double w = x_of(bars[i].value) - left;
    absl::StrAppendFormat(&svg,
                          "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>\n"
                          "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"/>\n"
                          "<text x=\"%.1f\" y=\"%d\">%s</text>\n",
                          left - 6, y + 15, XmlEscape(bars[i].label), left, y + 3, std::max(0.0, w),
                          row - 6, bars[i].color, left + w + 4, y + 15, Kilo(bars[i].value));
  }
  if (refs) {
    for (const auto& [value, name] :
         {std::pair<double, const char*>{kRefHfTokensPerSecond, "HF ref"},
          {kRefTorchPackedTokensPerSecond, "PyTorch packed ref"}}) {
      const double x = x_of(value);
      absl::StrAppendFormat(&svg,
                            "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#444\" "
                            "stroke-dasharray=\"4,3\"/>\n<text x=\"%.1f\" y=\"%d\" "
                            "text-anchor=\"middle\" font-size=\"10\">%s %s</text>\n",
                            x, top - 4, x, axis_y, x, top - 8, name, Kilo(value));
    }
  }
  svg += "</svg>\n";
  return svg;
}

std::string RenderMemorySvg(const ReportInput& in) {
  struct Point {
    std::string label;
    double gib;
    double tps;
    std::string color;
    std::string checkpoint;  // a policy text; "all" for the anchors' per-layer checkpointing
    bool anchor;
  };
  std::vector<Point> points;
  for (const RunResult& r : in.runs) {
    // Selective policies are told apart by name; none and all by the marker.
    const bool selective = r.config.checkpointed() && r.config.checkpoint != "all";
    points.push_back({absl::StrCat(StrategyName(r.config.strategy),
                                   r.config.precision == Precision::kFp32 ? " fp32" : "",
                                   selective ? " ckpt " + r.config.checkpoint : ""),
                      GiB(r.activation_bytes()), r.tokens_per_second(),
                      StrategyColor(r.config.strategy), r.config.checkpoint, false});
  }
  for (const AnchorRow& a : AnchorRows(in)) {
    points.push_back({absl::StrCat(a.impl == "hf_transformers" ? "HF " : "PyTorch ", a.strategy),
                      GiB(a.activation_bytes()), a.real_tokens_per_s, "#000000",
                      a.checkpoint ? "all" : "none", true});
  }
  double max_gib = 0.1, max_tps = 1;
  for (const Point& p : points) {
    max_gib = std::max(max_gib, p.gib);
    max_tps = std::max(max_tps, p.tps);
  }
  const double xs = NiceStep(max_gib), ys = NiceStep(max_tps);
  const double x_max = std::ceil(max_gib * 1.08 / xs) * xs;
  const double y_max = std::ceil(max_tps * 1.08 / ys) * ys;
  const int left = 80, top = 50, width = 620, height = 420, legend = 230;
  auto x_of = [&](double v) { return left + width * std::max(0.0, v) / x_max; };
  auto y_of = [&](double v) { return top + height - height * v / y_max; };
  std::string svg = base::SvgHeader(left + width + legend, top + height + 60, 12);
  svg +=
      "<text x=\"10\" y=\"22\" font-size=\"15\" font-weight=\"bold\">Activation memory vs "
      "throughput: checkpointing none (circles) / all (squares) / selective (diamonds)</text>\n";
  for (double t = 0; t <= x_max + xs / 2; t += xs) {
    absl::StrAppendFormat(&svg,
                          "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#e0e0e0\"/>\n"
                          "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%g</text>\n",
                          x_of(t), top, x_of(t), top + height, x_of(t), top + height + 16, t);
  }
  for (double t = 0; t <= y_max + ys / 2; t += ys) {
    absl::StrAppendFormat(&svg,
                          "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#e0e0e0\"/>\n"
                          "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
                          left, y_of(t), left + width, y_of(t), left - 6, y_of(t) + 4, Kilo(t));
  }
  absl::StrAppendFormat(
      &svg,
      "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">activation memory (GiB): peak allocated "
      "minus weights, grads and optimizer state</text>\n<text x=\"16\" y=\"%d\" "
      "transform=\"rotate(-90 16 %d)\" text-anchor=\"middle\">real tokens/s</text>\n",
      left + width / 2, top + height + 40, top + height / 2, top + height / 2);
  for (const Point& p : points) {
    const double x = x_of(p.gib), y = y_of(p.tps);
    const std::string fill = p.anchor ? "none" : p.color;
    if (p.checkpoint == "all") {
      absl::StrAppendFormat(&svg,
                            "<rect x=\"%.1f\" y=\"%.1f\" width=\"10\" height=\"10\" fill=\"%s\" "
                            "stroke=\"%s\" stroke-width=\"1.5\"/>\n",
                            x - 5, y - 5, fill, p.color);
    } else if (p.checkpoint != "none") {
      absl::StrAppendFormat(&svg,
                            "<polygon points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f\" "
                            "fill=\"%s\" stroke=\"%s\" stroke-width=\"1.5\"/>\n",
                            x, y - 7, x + 7, y, x, y + 7, x - 7, y, fill, p.color);
    } else {
      absl::StrAppendFormat(&svg,
                            "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"5.5\" fill=\"%s\" stroke=\"%s\" "
                            "stroke-width=\"1.5\"/>\n",
                            x, y, fill, p.color);
    }
    absl::StrAppendFormat(&svg, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\">%s</text>\n", x + 8,
                          y - 6, XmlEscape(p.label));
  }
  int ly = top + 10;
  for (Strategy s : AllStrategies()) {
    absl::StrAppendFormat(&svg,
                          "<circle cx=\"%d\" cy=\"%d\" r=\"5\" fill=\"%s\"/>\n<text x=\"%d\" "
                          "y=\"%d\">padless %s</text>\n",
                          left + width + 20, ly, StrategyColor(s), left + width + 32, ly + 4,
                          StrategyName(s));
    ly += 18;
  }
  absl::StrAppendFormat(&svg,
                        "<circle cx=\"%d\" cy=\"%d\" r=\"5\" fill=\"none\" stroke=\"#000\"/>\n"
                        "<text x=\"%d\" y=\"%d\">Python anchors (hollow)</text>\n",
                        left + width + 20, ly, left + width + 32, ly + 4);
  svg += "</svg>\n";
  return svg;
}

namespace {

// RESULTS.md's title and the facts of the run: command, date, device, model, data, timing.
std::string MarkdownPreamble(const ReportInput& in) {
  const RunOptions& o = in.run_options;
  std::string md = "# padless end-to-end throughput and memory\n\n";
  absl::StrAppend(&md,
                  "Generated by `padless_bench_e2e` (bench/e2e/); do not edit by hand, rerun the "
                  "command instead.",
                  in.smoke ? " **Smoke run (CPU, tiny model): the numbers mean nothing.**" : "",
                  "\n\n");
  absl::StrAppend(&md, "- Command: `", in.command, "`\n");
  absl::StrAppend(&md, "- Date (UTC): ", in.date_utc, "\n");
  absl::StrAppend(&md, "- Device: ", in.gpu_name, " (", in.device, "); LibTorch ", in.torch_version,
                  "; Python anchors: torch ",
                  in.python_torch_version.empty() ? "n/a" : in.python_torch_version, "\n");
  absl::StrAppend(&md, "- Model: preset `", o.preset, "`, vocabulary ", o.vocab_size, ", ",
                  o.num_labels, " labels, max length ", o.max_len, "; budget ", o.budget,
                  " token slots per step (b = ", o.budget / std::max<int64_t>(1, o.max_len), " x ",
                  o.max_len, " padded, max_tokens ", o.budget, " for buckets and packing); ",
                  o.warmup_steps, " warmup + ", o.steps, " timed steps per configuration\n");
  if (!in.runs.empty()) absl::StrAppend(&md, "- Optimizer: ", in.runs.front().optimizer, "\n");
  absl::StrAppend(&md, "- Dense SDPA (padded and packed_dense): ",
                  o.sdpa_cudnn ? "cuDNN attention allowed (--sdpa_cudnn, LibTorch's own default)"
                               : "cuDNN attention off (padless's default; --sdpa_cudnn allows it)",
                  "\n");
  absl::StrAppend(&md, "- Data: ", in.data_summary, "\n");
  if (in.matmul_tflops > 0) {
    absl::StrAppendFormat(&md,
                          "- Dense bf16 matmul (8192^3, CUDA events), the MFU denominator: %.0f "
                          "TFLOP/s\n",
                          in.matmul_tflops);
  } else {
    absl::StrAppend(&md, "- Dense bf16 matmul rate: not measured (", in.matmul_note,
                    "); MFU is not reported\n");
  }
  md +=
      "- Timing: the device is synchronized before and after the timed steps; the loss is "
      "accumulated on the device and read once. MFU counts 3 x (2 x matmul parameters + "
      "4 L H per layer) FLOPs per real token, L the sequence's own length.\n\n";
  return md;
}

// The headline's data-wait line: the configuration that waited longest for the loader.
std::string WorstDataWaitLine(const std::vector<RunResult>& runs) {
  double worst_wait = 0;
  std::string worst_name;
  for (const RunResult& r : runs) {
    if (r.data_wait_share() >= worst_wait) {
      worst_wait = r.data_wait_share();
      worst_name = r.config.Name();
    }
  }
  return absl::StrCat(
      "- Data wait (host time blocked in Loader::Next over the timed wall "
      "time), worst configuration: ",
      Percent(worst_wait), " (", worst_name,
      "; target <= 2%: ", worst_wait <= 0.02 ? "met" : "NOT met", ").\n");
}

// The best configuration against the anchors of this run and the reference figures, and the
// worst data wait.
std::string MarkdownHeadline(const ReportInput& in, const std::vector<AnchorRow>& anchors) {
  std::string md = "## Headline\n\n";
  const RunResult* best = BestRun(in.runs);
  if (best == nullptr) return md + "No configuration completed.\n\n\n";
  const double tps = best->tokens_per_second();
  const std::optional<double> vs_plain = Ratio(tps, PlainPeer(anchors, false));
  const std::optional<double> vs_hf = Ratio(tps, HfBest(anchors, false));
  absl::StrAppend(&md, "- Best padless configuration: **", best->config.Name(), "** (",
                  best->backend, "): **", Kilo(tps), " real tokens/s**");
  if (in.matmul_tflops > 0) absl::StrAppend(&md, ", MFU ", Percent(Mfu(*best, in.matmul_tflops)));
  md += ".\n";
  absl::StrAppend(&md, "- Against the anchors of this run: ", RatioText(vs_plain),
                  " the plain-PyTorch packed peer (target >= 1.0x, stretch >= 1.3x: ",
                  vs_plain ? (*vs_plain >= 1.3   ? "both met"
                              : *vs_plain >= 1.0 ? "met; stretch not met"
                                                 : "NOT met")
                           : "not measured",
                  "), ", RatioText(vs_hf), " Hugging Face on its best strategy (target >= 2.3x: ",
                  vs_hf ? (*vs_hf >= 2.3 ? "met" : "NOT met") : "not measured", ").\n");
  if (!in.smoke) {
    absl::StrAppendFormat(&md,
                          "- Against the reference figures (earlier H200 runs): %.2fx HF's 207k, "
                          "%.2fx plain PyTorch's 488k",
                          tps / kRefHfTokensPerSecond, tps / kRefTorchPackedTokensPerSecond);
    if (in.matmul_tflops > 0) {
      absl::StrAppendFormat(&md, "; MFU %s vs the peer's 34%%",
                            Percent(Mfu(*best, in.matmul_tflops)));
    }
    md += ".\n";
  }
  return absl::StrCat(md, WorstDataWaitLine(in.runs), "\n");
}

// One table row per padless configuration, and the configurations that failed.
std::string MarkdownConfigurations(const ReportInput& in, const std::vector<AnchorRow>& anchors) {
  std::string md = "## padless configurations\n\n";
  md +=
      "| configuration | attention | real tok/s | padding eff. | shapes | step ms | data wait | "
      "peak "
      "alloc GiB | peak reserved GiB | activations GiB | TFLOP/s | MFU | vs plain PyTorch | "
      "vs HF best | mean loss |\n";
  md += "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const RunResult& r : in.runs) {
    const double tps = r.tokens_per_second();
    absl::StrAppendFormat(
        &md,
        "| %s | %s | %s | %s | %d | %.1f | %s | %.2f | %.2f | %.2f | %.1f | %s | %s | %s | %.4f "
        "|\n",
        r.config.Name(), r.backend, Kilo(tps), Percent(r.padding_efficiency()), r.distinct_shapes,
        r.step_ms(), Percent(r.data_wait_share()), GiB(r.peak_allocated_bytes),
        GiB(r.peak_reserved_bytes), GiB(r.activation_bytes()), r.tflops(),
        in.matmul_tflops > 0 ? Percent(Mfu(r, in.matmul_tflops)) : std::string("n/a"),
        RatioText(Ratio(tps, PlainPeer(anchors, r.config.checkpointed()))),
        RatioText(Ratio(tps, HfBest(anchors, r.config.checkpointed()))), r.mean_loss);
  }
  md +=
      "\n`shapes`: distinct batch tensor shapes among the timed steps. Dense SDPA on cuDNN builds "
      "a plan for every new shape, so strategies with many shapes pay for it in a short run "
      "(padless keeps dense attention off cuDNN unless --sdpa_cudnn). ";
  md +=
      "Ratios compare with the anchor of the same checkpointing policy. Static memory "
      "(weights + gradients + AdamW state) is measured before the first timed step; "
      "activations = peak allocated - static.\n\n";
  if (!in.run_failures.empty()) {
    md += "**Failed configurations:**\n\n";
    for (const std::string& f : in.run_failures) absl::StrAppend(&md, "- ", f, "\n");
    md += "\n";
  }
  return md;
}

// One table row per anchor row, then the command of every script run (and why it failed).
std::string MarkdownAnchors(const ReportInput& in, const std::vector<AnchorRow>& anchors) {
  std::string md = "## Python anchors (same run)\n\n";
  if (!in.anchors_requested) return md + "Not run (--anchors=false or smoke mode).\n\n";
  md +=
      "| anchor | real tok/s | padding eff. | step ms | peak alloc GiB | activations GiB | "
      "TFLOP/s | MFU |\n|---|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const AnchorRow& a : anchors) {
    absl::StrAppendFormat(&md, "| %s | %s | %s | %.1f | %.2f | %.2f | %.1f | %s |\n", a.Name(),
                          Kilo(a.real_tokens_per_s), Percent(a.padding_efficiency), a.step_ms,
                          GiB(a.peak_allocated_bytes), GiB(a.activation_bytes()), a.tflops,
                          Percent(a.mfu));
  }
  md += "\nCommands:\n\n";
  for (const AnchorRun& run : in.anchors) {
    absl::StrAppend(&md, "- `", run.command, "`", run.error.empty() ? "" : " **FAILED**", "\n");
    if (!run.error.empty()) absl::StrAppend(&md, "\n```\n", run.error, "\n```\n\n");
  }
  return md + "\n";
}

// The trade-off rows of the padless configurations: each checkpointed run against the run
// without checkpointing that differs from it only in the policy.
std::string PadlessTradeoffRows(const std::vector<RunResult>& runs) {
  std::string md;
  for (const RunResult& a : runs) {
    if (a.config.checkpointed()) continue;
    for (const RunResult& b : runs) {
      if (!b.config.checkpointed() || b.config.strategy != a.config.strategy ||
          b.config.precision != a.config.precision ||
          b.config.generic_layers != a.config.generic_layers) {
        continue;
      }
      const double loss = 1 - b.tokens_per_second() / std::max(1e-9, a.tokens_per_second());
      absl::StrAppendFormat(&md, "| padless %s/%s%s | %s | %s -> %s | %s | %.2f -> %.2f |\n",
                            StrategyName(a.config.strategy), PrecisionName(a.config.precision),
                            a.config.generic_layers ? "/generic_layers" : "", b.config.checkpoint,
                            Kilo(a.tokens_per_second()), Kilo(b.tokens_per_second()), Percent(loss),
                            GiB(a.activation_bytes()), GiB(b.activation_bytes()));
    }
  }
  return md;
}

// The same for the anchors: each checkpointed anchor row against its peer without.
std::string AnchorTradeoffRows(const std::vector<AnchorRow>& anchors) {
  std::string md;
  for (const AnchorRow& a : anchors) {
    if (a.checkpoint) continue;
    for (const AnchorRow& b : anchors) {
      if (!b.checkpoint || b.impl != a.impl || b.strategy != a.strategy) continue;
      const double loss = 1 - b.real_tokens_per_s / std::max(1e-9, a.real_tokens_per_s);
      absl::StrAppendFormat(&md, "| %s:%s | all | %s -> %s | %s | %.2f -> %.2f |\n", a.impl,
                            a.strategy, Kilo(a.real_tokens_per_s), Kilo(b.real_tokens_per_s),
                            Percent(loss), GiB(a.activation_bytes()), GiB(b.activation_bytes()));
    }
  }
  return md;
}

std::string MarkdownCheckpointTradeoff(const ReportInput& in,
                                       const std::vector<AnchorRow>& anchors) {
  std::string md = "## Checkpointing: throughput lost for activation memory saved\n\n";
  md +=
      "| configuration | policy | real tok/s none -> policy | throughput lost | activations "
      "GiB none -> policy |\n|---|---|---:|---:|---:|\n";
  const std::string rows = PadlessTradeoffRows(in.runs) + AnchorTradeoffRows(anchors);
  md += rows.empty() ? "| (no configuration ran with and without checkpointing) | | | | |\n" : rows;
  md +=
      "\nTarget: lose <= 20% of the throughput without checkpointing (PyTorch and HF lose "
      "about 35%).\n\n";
  return md;
}

std::string MarkdownOutputs(const ReportInput& in) {
  std::string md = "## Outputs\n\n";
  absl::StrAppend(&md, "- CSV: [", in.csv_link, "](", in.csv_link, ")\n");
  absl::StrAppend(&md, "\n![real tokens/s per configuration](", in.throughput_svg_link, ")\n");
  absl::StrAppend(&md, "\n![activation memory vs throughput](", in.memory_svg_link, ")\n");
  md +=
      "\nMemory against sequence length comes from `padless profile-memory` (not this "
      "driver).\n";
  return md;
}

}  // namespace

std::string RenderMarkdown(const ReportInput& in) {
  const std::vector<AnchorRow> anchors = AnchorRows(in);
  return absl::StrCat(MarkdownPreamble(in), MarkdownHeadline(in, anchors),
                      MarkdownConfigurations(in, anchors), MarkdownAnchors(in, anchors),
                      MarkdownCheckpointTradeoff(in, anchors), MarkdownOutputs(in));
}

absl::Status WriteCsv(const std::string& path, const ReportInput& in) {
  return base::WriteFileAtomically(path, RenderCsv(in));
}
absl::Status WriteThroughputSvg(const std::string& path, const ReportInput& in) {
  return base::WriteFileAtomically(path, RenderThroughputSvg(in));
}
absl::Status WriteMemorySvg(const std::string& path, const ReportInput& in) {
  return base::WriteFileAtomically(path, RenderMemorySvg(in));
}
absl::Status WriteMarkdown(const std::string& path, const ReportInput& in) {
  return base::WriteFileAtomically(path, RenderMarkdown(in));
}

}  // namespace padless::bench::e2e
