// Long texts are windowed by one mechanism (tokenize/truncation.h's WindowStarts and PlanSingle)
// whether the tokenizer does it (Tokenizer::EncodeWindows, as inference does) or the planner does
// it on an already tokenized corpus (OverLong::kSplit, as evaluation does): the same windows, each
// [CLS] slice [SEP], and the same truncations.
#include <cstdint>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "padless/batching/collator.h"
#include "padless/batching/planner.h"
#include "padless/corpus/tokenized_corpus.h"
#include "padless/tokenize/tokenizer.h"
#include "tiny_wordpiece.h"

namespace padless::batching {
namespace {

using tokenize::Tokenizer;

Tokenizer TinyTokenizer() {
  const std::string path =
      tokenize::testing::WriteTemp("windows_tokenizer.json", tokenize::testing::TinyWordPieceJson().dump());
  absl::StatusOr<Tokenizer> t = Tokenizer::Load(path);
  EXPECT_TRUE(t.ok()) << t.status();
  return *std::move(t);
}

// A text of `words` words from the tiny vocabulary (one token each but "unaffable": three).
std::string LongText(int words) {
  const std::vector<std::string> vocab = {"hello", "world", "unaffable", "cafe", "a", "!"};
  std::string text;
  for (int i = 0; i < words; ++i) text += vocab[(i * 7 + 3) % vocab.size()] + " ";
  return text;
}

// Every sequence of a varlen batch of the planner's pieces, in example order.
std::vector<std::vector<int32_t>> PlannedSequences(const corpus::TokenizedCorpus& corpus,
                                                   const PlannerOptions& options) {
  const Planner planner(options);
  absl::StatusOr<std::vector<Placement>> pieces = planner.Pieces(corpus.Lengths());
  EXPECT_TRUE(pieces.ok()) << pieces.status();
  BatchSpec spec;
  spec.layout = Layout::kVarlen;
  spec.rows = {*pieces};
  for (const Placement& p : *pieces) spec.length += p.length;
  absl::StatusOr<Batch> batch = Collator().Collate(corpus, spec);
  EXPECT_TRUE(batch.ok()) << batch.status();
  const at::Tensor ids = batch->input_ids.to(at::kInt).contiguous();
  const at::Tensor cu = batch->cu_seqlens.contiguous();
  std::vector<std::vector<int32_t>> out;
  for (int64_t s = 0; s + 1 < cu.size(0); ++s) {
    const int32_t* data = ids.data_ptr<int32_t>();
    out.emplace_back(data + cu[s].item<int32_t>(), data + cu[s + 1].item<int32_t>());
  }
  return out;
}

TEST(WindowsTest, PlannerWindowsEqualTokenizerWindowsAndEachStartsWithCls) {
  const Tokenizer tokenizer = TinyTokenizer();
  const std::string text = LongText(45);
  tokenize::EncodeOptions whole;
  whole.max_length = 0;  // no truncation: the planner windows the whole example
  absl::StatusOr<tokenize::Encoding> encoded = tokenizer.Encode(text, whole);
  ASSERT_TRUE(encoded.ok()) << encoded.status();
  corpus::TokenizedCorpus corpus;
  corpus.Add(encoded->ids, {}, 0);
  for (int64_t max_len : {3, 8, 16, 60}) {
    for (int64_t stride : {0, 1, 5}) {
      if (stride >= max_len - 2) continue;
      absl::StatusOr<std::vector<tokenize::Encoding>> want =
          tokenizer.EncodeWindows(text, max_len, stride);
      ASSERT_TRUE(want.ok()) << want.status();
      const std::vector<std::vector<int32_t>> got = PlannedSequences(
          corpus, PlannerOptions().max_len(max_len).over_long(OverLong::kSplit).window_stride(stride));
      ASSERT_EQ(got.size(), want->size()) << "max_len " << max_len << " stride " << stride;
      for (size_t w = 0; w < got.size(); ++w) {
        EXPECT_EQ(got[w], (*want)[w].ids) << "window " << w << " max_len " << max_len;
        EXPECT_EQ(got[w].front(), tokenizer.special_ids().cls);
        EXPECT_EQ(got[w].back(), tokenizer.special_ids().sep);
        EXPECT_LE(static_cast<int64_t>(got[w].size()), max_len);
      }
    }
  }
}

TEST(WindowsTest, PlannerTruncationEqualsTokenizerTruncation) {
  const Tokenizer tokenizer = TinyTokenizer();
  const std::string text = LongText(40);
  tokenize::EncodeOptions whole;
  whole.max_length = 0;
  corpus::TokenizedCorpus corpus;
  corpus.Add(tokenizer.Encode(text, whole)->ids, {}, 0);
  for (tokenize::Truncation t : {tokenize::Truncation::kHead, tokenize::Truncation::kTail,
                                 tokenize::Truncation::kHeadTail}) {
    for (int64_t max_len : {3, 9, 20}) {
      tokenize::EncodeOptions cut;
      cut.max_length = max_len;
      cut.truncation = t;
      absl::StatusOr<tokenize::Encoding> want = tokenizer.Encode(text, cut);
      ASSERT_TRUE(want.ok()) << want.status();
      const std::vector<std::vector<int32_t>> got =
          PlannedSequences(corpus, PlannerOptions().max_len(max_len).truncation(t));
      ASSERT_EQ(got.size(), 1u);
      EXPECT_EQ(got[0], want->ids) << tokenize::TruncationName(t) << " max_len " << max_len;
    }
  }
}

TEST(WindowsTest, StrideOutsideTheWindowIsAnError) {
  for (int64_t stride : {-1, 6, 7}) {
    const Planner p(PlannerOptions().max_len(8).over_long(OverLong::kSplit).window_stride(stride));
    EXPECT_EQ(p.Pieces({20}).status().code(), absl::StatusCode::kInvalidArgument) << stride;
  }
  EXPECT_EQ(Planner(PlannerOptions().max_len(2)).Pieces({20}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace padless::batching
