#include "padless/cuda/memory/memory_profile.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_split.h"

namespace padless::cuda {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

int Count(const std::string& haystack, const std::string& needle) {
  int n = 0;
  for (size_t pos = haystack.find(needle); pos != std::string::npos;
       pos = haystack.find(needle, pos + 1)) {
    ++n;
  }
  return n;
}

std::vector<MemoryProfilePoint> Points() {
  std::vector<MemoryProfilePoint> out;
  const MemoryModel linear(1e9, 3e5, 0), quadratic(1e9, 3e5, 300);
  for (int64_t len : {64, 128, 256, 512, 1024, 2048}) {
    for (int64_t batch : {2, 8}) {
      out.push_back({"bf16/varlen", batch, len, 900000000, 0,
                     static_cast<int64_t>(linear.Predict(batch, len)),
                     static_cast<int64_t>(linear.Predict(batch, len) * 1.25), false});
      out.push_back({"fp32/dense", batch, len, 900000000, 0,
                     static_cast<int64_t>(quadratic.Predict(batch, len)),
                     static_cast<int64_t>(quadratic.Predict(batch, len) * 1.1), len == 2048});
    }
  }
  return out;
}

TEST(MemoryProfileTest, CsvHasOneLinePerPoint) {
  std::vector<MemoryProfilePoint> points = Points();
  points[0].config = "a,b";
  points[1].gradient_bytes = 1000;
  const std::string csv = MemoryProfileCsv(points);
  const std::vector<std::string> lines = absl::StrSplit(csv, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), points.size() + 1);
  EXPECT_EQ(lines[0],
            "config,batch,seq_len,tokens,baseline_bytes,gradient_bytes,peak_allocated_bytes,"
            "peak_reserved_bytes,activation_bytes,oom");
  EXPECT_THAT(lines[1], testing::StartsWith("\"a,b\",2,64,128,900000000,0,"));
  const MemoryProfilePoint& p = points[1];
  EXPECT_EQ(lines[2], absl::StrCat("fp32/dense,2,64,128,900000000,1000,", p.peak_allocated_bytes,
                                   ",", p.peak_reserved_bytes, ",",
                                   p.peak_allocated_bytes - 900000000 - 1000, ",0"));
}

TEST(MemoryProfileTest, SvgDrawsOneLinePerConfigAndBatch) {
  const std::string svg = MemoryProfileSvg(Points(), "BERT <tiny>");
  EXPECT_THAT(svg, testing::StartsWith("<svg"));
  EXPECT_THAT(svg, HasSubstr("BERT &lt;tiny&gt;"));
  EXPECT_EQ(Count(svg, "<polyline"), 4);
  EXPECT_THAT(svg, HasSubstr(">bf16/varlen b=8</text>"));
  EXPECT_THAT(svg, HasSubstr(">fp32/dense b=2</text>"));
  // 6 lengths on the linear config lines, 5 on the dense ones (the OOM points are dropped).
  EXPECT_EQ(Count(svg, "<circle"), 2 * 6 + 2 * 5);
  EXPECT_THAT(svg, HasSubstr(">2048</text>"));  // log2 ticks at powers of two
  EXPECT_THAT(svg, HasSubstr("</svg>"));
  EXPECT_THAT(MemoryProfileSvg({}, "empty"), HasSubstr("no measurements"));
}

TEST(MemoryProfileTest, FitsEachConfigOnHeldOutLengths) {
  std::vector<std::string> skipped;
  std::vector<MemoryProfilePoint> points = Points();
  points.push_back({"lonely", 1, 256, 0, 0, 100, 100, false});
  const std::vector<ConfigFit> fits = FitPerConfig(points, {256}, &skipped);
  ASSERT_EQ(fits.size(), 2u);
  EXPECT_EQ(fits[0].config, "bf16/varlen");
  EXPECT_EQ(fits[1].config, "fp32/dense");
  EXPECT_EQ(fits[0].report.held_out.size(), 2u);
  EXPECT_LT(fits[0].report.max_relative_error, 1e-6);
  EXPECT_LT(fits[1].report.max_relative_error, 1e-6);
  EXPECT_NEAR(fits[1].report.model.per_token_seq_bytes(), 300, 1);
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_THAT(skipped[0], HasSubstr("lonely"));
  EXPECT_THAT(skipped[0], Not(HasSubstr("bf16")));
}

}  // namespace
}  // namespace padless::cuda
