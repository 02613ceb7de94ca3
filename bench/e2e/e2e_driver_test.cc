// Unit tests of the end-to-end driver's host-side pieces: configuration expansion, the planner
// budget of every strategy, the FLOP count, the anchors' JSON-line contract and the reports.
#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "anchors.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "padless/batching/planner.h"
#include "report.h"
#include "run_config.h"

namespace padless::bench::e2e {
namespace {

using ::testing::HasSubstr;

TEST(ExpandConfigsTest, DefaultGpuSubsetIsBf16TimesPoliciesPlusTwoFp32) {
  absl::StatusOr<std::vector<RunConfig>> c =
      ExpandConfigs("all", "bf16", "none,all", "pad_to_max,packed_varlen");
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->size(), 14u);
  EXPECT_EQ((*c)[0].Name(), "pad_to_max/bf16/ckpt_none");
  EXPECT_EQ((*c)[6].Name(), "pad_to_max/bf16/ckpt_all");
  EXPECT_EQ((*c)[12].Name(), "pad_to_max/fp32/ckpt_none");
  EXPECT_EQ((*c)[13].Name(), "packed_varlen/fp32/ckpt_none");
}

// Selective policies for the memory-against-throughput plot; spellings of one policy run once.
TEST(ExpandConfigsTest, SelectivePoliciesAreCanonical) {
  absl::StatusOr<std::vector<RunConfig>> c =
      ExpandConfigs("packed_varlen", "bf16", "none, ffn, attn, every:1, all, every:3", "");
  ASSERT_TRUE(c.ok()) << c.status();
  std::vector<std::string> names;
  for (const RunConfig& r : *c) names.push_back(r.Name());
  EXPECT_THAT(names,
              ::testing::ElementsAre("packed_varlen/bf16/ckpt_none", "packed_varlen/bf16/ckpt_ffn",
                                     "packed_varlen/bf16/ckpt_attn", "packed_varlen/bf16/ckpt_all",
                                     "packed_varlen/bf16/ckpt_every:3"));
  EXPECT_FALSE((*c)[0].checkpointed());
  EXPECT_TRUE((*c)[1].checkpointed());
}

TEST(ExpandConfigsTest, GenericLayerBaselinesFollow) {
  absl::StatusOr<std::vector<RunConfig>> c =
      ExpandConfigs("packed_varlen", "bf16", "none,all", "", "none, every:1");
  ASSERT_TRUE(c.ok()) << c.status();
  std::vector<std::string> names;
  for (const RunConfig& r : *c) names.push_back(r.Name());
  EXPECT_THAT(names,
              ::testing::ElementsAre("packed_varlen/bf16/ckpt_none", "packed_varlen/bf16/ckpt_all",
                                     "packed_varlen/bf16/ckpt_none/generic_layers",
                                     "packed_varlen/bf16/ckpt_all/generic_layers"));
  c = ExpandConfigs("packed_varlen", "bf16", "none", "", "every:0");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("--generic_layers_checkpoint"));
}

TEST(ExpandConfigsTest, FullMatrixHasNoDuplicates) {
  absl::StatusOr<std::vector<RunConfig>> c =
      ExpandConfigs("all", "fp32,bf16", "none,all", "pad_to_max,packed_varlen");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->size(), 24u);
}

TEST(ExpandConfigsTest, Fp8OnlyForTheLayoutWhoseLayersRunIt) {
  absl::StatusOr<std::vector<RunConfig>> c =
      ExpandConfigs("packed_varlen,token_budget_buckets", "bf16,fp8", "none,all", "");
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->size(), 6u);
  for (const RunConfig& r : *c) {
    if (r.precision == Precision::kFp8) EXPECT_EQ(r.strategy, Strategy::kPackedVarlen) << r.Name();
  }
  EXPECT_FALSE(ExpandConfigs("token_budget_buckets", "fp8", "none", "").ok());
}

TEST(ExpandConfigsTest, ErrorsNameTheFlagAndItem) {
  absl::StatusOr<std::vector<RunConfig>> c = ExpandConfigs("pad_to_max,bogus", "bf16", "none", "");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("--strategies"));
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("bogus"));
  c = ExpandConfigs("all", "fp16", "none", "");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("--precisions"));
  c = ExpandConfigs("all", "bf16", "every:0", "");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("--checkpoint"));
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("every:0"));
  EXPECT_FALSE(ExpandConfigs("", "bf16", "none", "").ok());
}

// Every strategy stays within the same budget of token slots per step, and covers every example.
TEST(PlannerOptionsForTest, EveryStrategyRespectsTheBudget) {
  std::mt19937 rng(7);
  std::lognormal_distribution<double> len(5.5, 0.7);
  std::vector<int64_t> lengths(3000);
  for (int64_t& l : lengths) l = std::clamp<int64_t>(static_cast<int64_t>(len(rng)), 3, 512);
  for (Strategy s : AllStrategies()) {
    SCOPED_TRACE(StrategyName(s));
    batching::Planner planner(PlannerOptionsFor(s, 16384, 512, 1234));
    absl::StatusOr<std::vector<batching::BatchSpec>> plan = planner.Plan(lengths, 0);
    ASSERT_TRUE(plan.ok()) << plan.status();
    int64_t sequences = 0;
    for (const batching::BatchSpec& b : *plan) {
      EXPECT_LE(b.token_slots(), 16384);
      sequences += b.num_sequences();
    }
    // Padded strategies drop the last partial batch (as the anchors do).
    EXPECT_GT(sequences, static_cast<int64_t>(lengths.size()) - 32);
    EXPECT_LE(sequences, static_cast<int64_t>(lengths.size()));
    if (s == Strategy::kPadToMax) {
      for (const batching::BatchSpec& b : *plan) EXPECT_EQ(b.token_slots(), 16384);
    }
    if (s == Strategy::kPackedVarlen) {
      EXPECT_EQ((*plan)[0].layout, batching::Layout::kVarlen);
    }
    if (s == Strategy::kPackedDense) {
      EXPECT_EQ((*plan)[0].layout, batching::Layout::kPacked);
    }
  }
}

TEST(TrainingFlopsTest, CountsRealTokensWithTheirOwnLength) {
  batching::BatchSpec spec;
  spec.layout = batching::Layout::kPacked;
  spec.length = 512;
  spec.rows = {{{0, 0, 100, 0}, {1, 0, 300, 0}}, {{2, 0, 7, 0}}};
  const ModelShape shape = ModelShape::Of(models::EncoderConfig::Base());
  const double p = 12.0 * (4 * 768 * 768 + 2 * 768 * 3072);
  double expected = 0;
  for (double l : {100.0, 300.0, 7.0}) expected += l * (2 * p + 12 * 4 * l * 768);
  EXPECT_DOUBLE_EQ(TrainingFlops({spec}, shape), 3 * expected);
  EXPECT_EQ(TrainingFlops({}, shape), 0);
}

TEST(TrainingFlopsTest, PrunedLayersCountTheirOwnWidths) {
  // Layer 0 keeps 8 of 12 heads and 1024 FFN neurons; layer 1 is whole.
  const models::EncoderConfig c =
      models::EncoderConfig::Base().layers(2).pruned_heads({{0, 1, 2, 3}, {}}).layer_ffn(
          {1024, 3072});
  const ModelShape shape = ModelShape::Of(c);
  EXPECT_EQ(shape.attention_width, 512 + 768);
  EXPECT_EQ(shape.MatmulParams(), 4 * 768 * 512 + 2 * 768 * 1024 + 4 * 768 * 768 + 2 * 768 * 3072);
  EXPECT_DOUBLE_EQ(ForwardFlops(10, shape), 10.0 * (2.0 * shape.MatmulParams() + 4 * 10 * 1280));
}

TEST(TrainingFlopsTest, ModernBertCountsGegluAndWindows) {
  // Layers 0 and 3 global, 1 and 2 with a +-2 window; GeGLU's in-projection is 2 x 16 rows.
  const models::EncoderConfig c = models::EncoderConfig::ModernBertBase()
                                      .hidden(32)
                                      .heads(2)
                                      .ffn(16)
                                      .layers(4)
                                      .local_attention(4);
  const ModelShape shape = ModelShape::Of(c);
  EXPECT_EQ(shape.MatmulParams(), 4 * (4 * 32 * 32 + 3 * 32 * 16));
  EXPECT_EQ(shape.attention_width, 2 * 32);
  EXPECT_EQ(shape.windowed_attention_width, 2 * 32);
  EXPECT_EQ(shape.half_window, 2);
  // A 6-token sequence: queries 0..5 see 3, 4, 5, 5, 4, 3 keys through the window (24), 6 each
  // globally (36); a 2-token one sees every key either way.
  EXPECT_DOUBLE_EQ(ForwardFlops(6, shape),
                   6.0 * 2 * shape.MatmulParams() + 4.0 * 36 * 64 + 4.0 * 24 * 64);
  EXPECT_DOUBLE_EQ(ForwardFlops(2, shape), 2.0 * 2 * shape.MatmulParams() + 4.0 * 4 * 128);
}

constexpr char kAnchorLine[] =
    R"({"impl": "plain_pytorch", "strategy": "packed_varlen", "checkpoint": false, )"
    R"("real_tokens_per_s": 488000.0, "padding_efficiency": 1.0, "step_ms": 30.5, )"
    R"("tflops": 260.0, "matmul_tflops": 771.0, "mfu": 0.337, "peak_allocated_bytes": 7516192768, )"
    R"("peak_reserved_bytes": 8589934592, "static_bytes": 1073741824, "torch": "2.11.0", "gpu": "H200"})";

TEST(ParseAnchorJsonLinesTest, ReadsEveryField) {
  absl::StatusOr<std::vector<AnchorRow>> rows =
      ParseAnchorJsonLines(std::string(kAnchorLine) + "\n\n", "a.jsonl");
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->size(), 1u);
  const AnchorRow& r = (*rows)[0];
  EXPECT_EQ(r.Name(), "plain_pytorch:packed_varlen/ckpt_none");
  EXPECT_DOUBLE_EQ(r.real_tokens_per_s, 488000.0);
  EXPECT_DOUBLE_EQ(r.mfu, 0.337);
  EXPECT_EQ(r.activation_bytes(), 7516192768 - 1073741824);
  EXPECT_EQ(r.gpu, "H200");
}

TEST(ParseAnchorJsonLinesTest, ErrorsNameFileAndLine) {
  absl::StatusOr<std::vector<AnchorRow>> rows =
      ParseAnchorJsonLines(std::string(kAnchorLine) + "\n{not json\n", "a.jsonl");
  ASSERT_FALSE(rows.ok());
  EXPECT_THAT(std::string(rows.status().message()), HasSubstr("a.jsonl:2"));
  rows = ParseAnchorJsonLines(R"({"impl": "x"})", "b.jsonl");
  ASSERT_FALSE(rows.ok());
  EXPECT_THAT(std::string(rows.status().message()), HasSubstr("b.jsonl:1"));
}

TEST(ShellQuoteTest, QuotesSingleQuotes) {
  EXPECT_EQ(ShellQuote("a b"), "'a b'");
  EXPECT_EQ(ShellQuote("it's"), "'it'\\''s'");
}

ReportInput SampleReport() {
  ReportInput in;
  in.command = "padless_bench_e2e --steps 50";
  in.gpu_name = "NVIDIA H200";
  in.device = "cuda:0";
  in.matmul_tflops = 771;
  in.anchors_requested = true;
  RunResult fast;
  fast.config = RunConfig{Strategy::kPackedVarlen, Precision::kBf16, "none"};
  fast.backend = "varlen_flash";
  fast.steps = 50;
  fast.real_tokens = 50 * 16000;
  fast.token_slots = 50 * 16000;
  fast.seconds = 1.6;  // 500k tokens/s
  fast.flops = 771e12 * 0.4 * 1.6;
  fast.peak_allocated_bytes = 8LL << 30;
  fast.static_bytes = 2LL << 30;
  RunResult ckpt = fast;
  ckpt.config.checkpoint = "all";
  ckpt.seconds = 2.0;  // 400k tokens/s
  ckpt.peak_allocated_bytes = 3LL << 30;
  in.runs = {fast, ckpt};
  AnchorRun run;
  run.command = "python3 torch_packed.py";
  run.rows = *ParseAnchorJsonLines(kAnchorLine, "x");
  in.anchors = {run};
  in.csv_link = "report/e2e_results.csv";
  in.throughput_svg_link = "report/t.svg";
  in.memory_svg_link = "report/m.svg";
  return in;
}

TEST(ReportTest, CsvHasOneRowPerConfigurationAndAnchorWithRatios) {
  const std::string csv = RenderCsv(SampleReport());
  std::vector<std::string> lines = absl::StrSplit(csv, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 4u);  // header, 2 runs, 1 anchor
  const std::vector<std::string> header = absl::StrSplit(lines[0], ',');
  const std::vector<std::string> first = absl::StrSplit(lines[1], ',');
  ASSERT_EQ(first.size(), header.size());
  EXPECT_EQ(first[1], "packed_varlen/bf16/ckpt_none");
  EXPECT_EQ(first[9], "500000.0");
  EXPECT_EQ(first[18], "0.4000");  // MFU
  EXPECT_EQ(first[21], "1.0246");  // 500k / 488k
  const std::vector<std::string> second = absl::StrSplit(lines[2], ',');
  EXPECT_EQ(second[21], "");  // no checkpointed anchor ran
  EXPECT_TRUE(absl::StartsWith(lines[3], "anchor,plain_pytorch:packed_varlen/ckpt_none,"));
}

TEST(ReportTest, MarkdownStatesHeadlineRatiosAndTradeoff) {
  const std::string md = RenderMarkdown(SampleReport());
  EXPECT_THAT(md, HasSubstr("`padless_bench_e2e --steps 50`"));
  EXPECT_THAT(md, HasSubstr("**packed_varlen/bf16/ckpt_none**"));
  EXPECT_THAT(md, HasSubstr("1.02x the plain-PyTorch packed peer"));
  EXPECT_THAT(md, HasSubstr("met; stretch not met"));
  EXPECT_THAT(md, HasSubstr("MFU 40.0%"));
  EXPECT_THAT(md, HasSubstr("500.0k -> 400.0k | 20.0% | 6.00 -> 1.00"));
  EXPECT_THAT(md, HasSubstr("(report/t.svg)"));
}

TEST(ReportTest, SvgsDrawEveryPoint) {
  const ReportInput in = SampleReport();
  const std::string bars = RenderThroughputSvg(in);
  EXPECT_TRUE(absl::StartsWith(bars, "<svg"));
  EXPECT_TRUE(absl::EndsWith(bars, "</svg>\n"));
  EXPECT_THAT(bars, HasSubstr("padless packed_varlen/bf16/ckpt_all"));
  EXPECT_THAT(bars, HasSubstr("PyTorch packed ref 488.0k"));
  const std::string scatter = RenderMemorySvg(in);
  // One circle per non-checkpointed point (2) plus one legend circle per strategy (6) and the
  // anchors' legend entry; one square for the checkpointed run.
  size_t circles = 0;
  for (size_t p = scatter.find("<circle"); p != std::string::npos;
       p = scatter.find("<circle", p + 1)) {
    ++circles;
  }
  EXPECT_EQ(circles, 2u + 6u + 1u);
  EXPECT_THAT(scatter, HasSubstr("width=\"10\" height=\"10\""));
  EXPECT_THAT(scatter, ::testing::Not(HasSubstr("<polygon")));
}

TEST(ReportTest, SelectivePolicyIsADiamondWithItsNameAndATradeoffRow) {
  ReportInput in = SampleReport();
  RunResult ffn = in.runs[0];
  ffn.config.checkpoint = "ffn";
  ffn.seconds = 1.78;  // 449.4k tokens/s
  ffn.peak_allocated_bytes = 4LL << 30;
  in.runs.push_back(ffn);
  const std::string scatter = RenderMemorySvg(in);
  EXPECT_THAT(scatter, HasSubstr("<polygon"));
  EXPECT_THAT(scatter, HasSubstr(">packed_varlen ckpt ffn</text>"));
  const std::string md = RenderMarkdown(in);
  EXPECT_THAT(md, HasSubstr("| ffn | 500.0k -> 449.4k | 10.1% | 6.00 -> 2.00 |"));
  EXPECT_THAT(md, HasSubstr("| all | 500.0k -> 400.0k | 20.0% | 6.00 -> 1.00 |"));
  const std::vector<std::string> lines = absl::StrSplit(RenderCsv(in), '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 5u);
  const std::vector<std::string> row = absl::StrSplit(lines[3], ',');
  EXPECT_EQ(row[4], "ffn");
}

}  // namespace
}  // namespace padless::bench::e2e
