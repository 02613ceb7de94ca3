#include "padless/batching/collator.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/full.h>
#include <torch/cuda.h>

#include <vector>

#include "corpus_test_util.h"
#include "gtest/gtest.h"
#include "padless/batching/planner.h"

namespace padless::batching {
namespace {

using testing::RandomCorpus;

// Fills freshly freed heap blocks of the batch's sizes with a poison value, so that a slot the
// collator forgets to write is very likely to hold -7 rather than a plausible value.
void PoisonHeap(const BatchSpec& spec) {
  const int64_t slots = std::max<int64_t>(spec.token_slots(), 1);
  std::vector<at::Tensor> junk;
  for (int i = 0; i < 8; ++i) junk.push_back(at::full({slots}, -7, at::kLong));
  junk.push_back(at::full({slots}, true, at::kBool));
}

// The token the batch must hold at position i of piece p.
int64_t ExpectedToken(const corpus::TokenizedCorpus& c, const Placement& p, int64_t i) {
  const auto tokens = c.tokens(p.example);
  if (i < p.lead) return tokens[i];
  if (i < p.length - p.tail) return tokens[p.start + i - p.lead];
  return tokens[tokens.size() - p.length + i];
}

// Checks every tensor of `b` against `spec`, element by element.
void CheckBatch(const corpus::TokenizedCorpus& c, const BatchSpec& spec, const Batch& b,
                PadSide side) {
  ASSERT_EQ(b.layout, spec.layout);
  const bool varlen = spec.layout == Layout::kVarlen;
  const int64_t n = spec.num_sequences();
  ASSERT_EQ(b.num_sequences, n);
  ASSERT_EQ(b.real_tokens, spec.real_tokens());
  ASSERT_EQ(b.padded_tokens, spec.token_slots() - spec.real_tokens());
  const int64_t width = varlen ? spec.real_tokens() : spec.length;
  const int64_t rows = varlen ? 1 : static_cast<int64_t>(spec.rows.size());
  ASSERT_EQ(b.input_ids.numel(), rows * width);
  ASSERT_EQ(b.cu_seqlens.scalar_type(), at::kInt);
  ASSERT_EQ(b.cu_seqlens.numel(), n + 1);
  const auto ids = b.input_ids.reshape({rows, width});
  const auto pos = b.position_ids.reshape({rows, width});
  const auto ids_a = ids.accessor<int64_t, 2>();
  const auto pos_a = pos.accessor<int64_t, 2>();
  const auto cu = b.cu_seqlens.accessor<int32_t, 1>();
  const auto labels = b.labels.accessor<int64_t, 1>();
  const auto example_ids = b.example_ids.accessor<int64_t, 1>();
  const auto loc = b.sequence_location.accessor<int64_t, 2>();
  // Accessors need defined tensors: stand-ins of the right shape for the optional ones.
  const at::Tensor seg_t = b.segment_ids.defined() ? b.segment_ids.reshape({rows, width})
                                                   : at::empty({rows, width}, at::kLong);
  const at::Tensor types_t = b.token_type_ids.defined() ? b.token_type_ids.reshape({rows, width})
                                                        : at::empty({rows, width}, at::kLong);
  const auto seg_a = seg_t.accessor<int64_t, 2>();
  const auto types_a = types_t.accessor<int64_t, 2>();
  const bool has_seg = b.segment_ids.defined();
  std::vector<std::vector<int>> real(rows, std::vector<int>(width, 0));
  int64_t seq = 0, max_seqlen = 0;
  std::vector<int64_t> token_index;
  ASSERT_EQ(cu[0], 0);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t used = 0;
    for (const Placement& p : spec.rows[r]) used += p.length;
    int64_t col =
        (!varlen && spec.layout == Layout::kPadded && side == PadSide::kLeft) ? width - used : 0;
    for (const Placement& p : spec.rows[r]) {
      ASSERT_EQ(loc[seq][0], varlen ? 0 : r);
      ASSERT_EQ(loc[seq][1], col);
      ASSERT_EQ(labels[seq], c.label(p.example));
      ASSERT_EQ(example_ids[seq], p.example);
      ASSERT_EQ(cu[seq + 1] - cu[seq], p.length) << "cu_seqlens must give each sequence's length";
      for (int64_t i = 0; i < p.length; ++i) {
        ASSERT_EQ(ids_a[r][col + i], ExpectedToken(c, p, i)) << "row " << r << " col " << col + i;
        // cu_seqlens agrees with position ids: positions restart at 0 at every cu_seqlens offset.
        ASSERT_EQ(pos_a[r][col + i], i);
        if (has_seg) {
          ASSERT_EQ(seg_a[r][col + i], seq);
        }
        if (b.token_type_ids.defined()) {
          const auto types = c.type_ids(p.example);
          const int64_t src = i < p.lead                ? i
                              : i < p.length - p.tail ? p.start + i - p.lead
                                                      : static_cast<int64_t>(types.size()) - p.length + i;
          ASSERT_EQ(types_a[r][col + i], types[src]);
        }
        real[r][col + i] = 1;
        token_index.push_back(r * width + col + i);
      }
      max_seqlen = std::max(max_seqlen, p.length);
      col += p.length;
      ++seq;
    }
  }
  ASSERT_EQ(b.max_seqlen, max_seqlen);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < width; ++j) {
      if (real[r][j]) continue;
      ASSERT_EQ(ids_a[r][j], 0) << "padding must hold the pad id";
      ASSERT_EQ(pos_a[r][j], 0);
      if (has_seg) {
        ASSERT_EQ(seg_a[r][j], -1);
      }
    }
  }
  if (!varlen) {
    ASSERT_EQ(b.attention_mask.scalar_type(), at::kBool);
    const auto mask_a = b.attention_mask.accessor<bool, 2>();
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t j = 0; j < width; ++j) ASSERT_EQ(mask_a[r][j], real[r][j] == 1);
    }
    ASSERT_EQ(b.token_index.numel(), static_cast<int64_t>(token_index.size()));
    const auto ti = b.token_index.accessor<int64_t, 1>();
    for (size_t i = 0; i < token_index.size(); ++i) ASSERT_EQ(ti[i], token_index[i]);
  } else {
    EXPECT_FALSE(b.attention_mask.defined());
  }
}

std::vector<PlannerOptions> Strategies() {
  return {
      PlannerOptions().batch_size(6),
      PlannerOptions().batch_size(6).pad_to(PadTo::kMultiple),
      PlannerOptions()
          .sampler(Sampler::kBucketed)
          .num_buckets(4)
          .pad_to(PadTo::kBucketBoundary)
          .batch_size(5),
      PlannerOptions().sampler(Sampler::kTokenBudget).max_tokens(1024),
      PlannerOptions().sampler(Sampler::kPacked).batch_size(3),
      PlannerOptions()
          .sampler(Sampler::kPacked)
          .batch_size(3)
          .over_long(OverLong::kSplit)
          .max_sequences_per_row(3),
      PlannerOptions().sampler(Sampler::kPacked).packed_layout(Layout::kVarlen).max_tokens(700)};
}

TEST(CollatorTest, EveryLayoutMatchesItsSpecElementByElement) {
  for (bool with_types : {false, true}) {
    const corpus::TokenizedCorpus corpus = RandomCorpus(120, 3, 400, with_types);
    for (PadSide side : {PadSide::kRight, PadSide::kLeft}) {
      CollatorOptions co;
      co.pad_side = side;
      const Collator collator(co);
      int config = 0;
      for (PlannerOptions o : Strategies()) {
        // max_len 160 truncates (keeping a tail token) or splits a good share of the examples.
        absl::StatusOr<std::vector<BatchSpec>> plan =
            Planner(o.max_len(160).seed(5)).Plan(corpus.Lengths(), 0);
        ASSERT_TRUE(plan.ok()) << plan.status();
        for (const BatchSpec& spec : *plan) {
          PoisonHeap(spec);
          absl::StatusOr<Batch> b = collator.Collate(corpus, spec);
          ASSERT_TRUE(b.ok()) << b.status();
          SCOPED_TRACE(::testing::Message() << "config " << config << " types " << with_types);
          CheckBatch(corpus, spec, *b, side);
          if (HasFatalFailure()) return;
        }
        ++config;
      }
    }
  }
}

// Reference mask: same sequence, or the diagonal.
void CheckMask(const Batch& b, const at::Tensor& mask) {
  const int64_t rows = b.input_ids.size(0), len = b.input_ids.size(1);
  ASSERT_EQ(mask.sizes(), (std::vector<int64_t>{rows, 1, len, len}));
  ASSERT_EQ(mask.scalar_type(), at::kBool);
  const at::Tensor seg =
      b.layout == Layout::kPacked ? b.segment_ids : b.attention_mask.to(at::kLong).sub(1);
  const auto s = seg.accessor<int64_t, 2>();
  const auto m = mask.accessor<bool, 4>();
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < len; ++i) {
      for (int64_t j = 0; j < len; ++j) {
        const bool expect = i == j || (s[r][i] >= 0 && s[r][i] == s[r][j]);
        ASSERT_EQ(m[r][0][i][j], expect) << "row " << r << " (" << i << ", " << j << ")";
      }
    }
  }
}

TEST(CollatorTest, BlockDiagonalMaskSeparatesPackedSequences) {
  const corpus::TokenizedCorpus corpus = RandomCorpus(60, 9, 100);
  for (PlannerOptions o :
       {PlannerOptions().sampler(Sampler::kPacked).batch_size(2), PlannerOptions().batch_size(3)}) {
    absl::StatusOr<std::vector<BatchSpec>> plan = Planner(o.max_len(64)).Plan(corpus.Lengths(), 0);
    ASSERT_TRUE(plan.ok());
    for (size_t i = 0; i < 4 && i < plan->size(); ++i) {
      absl::StatusOr<Batch> b = Collator().Collate(corpus, (*plan)[i]);
      ASSERT_TRUE(b.ok());
      absl::StatusOr<at::Tensor> mask = BlockDiagonalMask(*b);
      ASSERT_TRUE(mask.ok()) << mask.status();
      CheckMask(*b, *mask);
    }
  }
  // Hand-made packed row [a a b] + 1 pad: blocks {0,1}, {2}, and the pad attends to itself.
  corpus::TokenizedCorpus tiny;
  tiny.Add(std::vector<int32_t>{7, 8}, {}, 0);
  tiny.Add(std::vector<int32_t>{9}, {}, 1);
  BatchSpec spec;
  spec.layout = Layout::kPacked;
  spec.rows = {{{0, 0, 2, 0}, {1, 0, 1, 0}}};
  spec.length = 4;
  absl::StatusOr<Batch> b = Collator().Collate(tiny, spec);
  ASSERT_TRUE(b.ok());
  absl::StatusOr<at::Tensor> mask = BlockDiagonalMask(*b);
  ASSERT_TRUE(mask.ok());
  const std::vector<bool> expect = {1, 1, 0, 0, 1, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
  const at::Tensor flat = mask->reshape({-1});
  for (int i = 0; i < 16; ++i) EXPECT_EQ(flat[i].item<bool>(), expect[i]) << i;
  EXPECT_EQ(b->cu_seqlens[2].item<int32_t>(), 3);
  EXPECT_EQ(b->padded_tokens, 1);
}

TEST(CollatorTest, VarlenHasNoDenseMask) {
  const corpus::TokenizedCorpus corpus = RandomCorpus(10, 1, 50);
  BatchSpec spec;
  spec.layout = Layout::kVarlen;
  spec.rows = {{{0, 0, corpus.length(0), 0}, {1, 0, corpus.length(1), 0}}};
  spec.length = corpus.length(0) + corpus.length(1);
  absl::StatusOr<Batch> b = Collator().Collate(corpus, spec);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->input_ids.dim(), 1);
  EXPECT_EQ(b->padded_tokens, 0);
  EXPECT_FALSE(BlockDiagonalMask(*b).ok());
}

// CollateVarlen: encoded sequences whole and in order; token types only when asked for.
TEST(CollatorTest, CollateVarlenConcatenatesEncodingsInOrder) {
  tokenize::Encoding a, b;
  a.ids = {2, 11, 12, 3};
  b.ids = {2, 21, 3, 31, 3};
  b.type_ids = {0, 0, 0, 1, 1};
  const std::vector<const tokenize::Encoding*> sequences = {&a, &b, &a};
  absl::StatusOr<Batch> plain = Collator().CollateVarlen(sequences, /*with_types=*/false);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->layout, Layout::kVarlen);
  EXPECT_EQ(plain->num_sequences, 3);
  EXPECT_EQ(plain->real_tokens, 13);
  EXPECT_EQ(plain->max_seqlen, 5);
  const std::vector<int64_t> ids = {2, 11, 12, 3, 2, 21, 3, 31, 3, 2, 11, 12, 3};
  EXPECT_EQ(std::vector<int64_t>(plain->input_ids.data_ptr<int64_t>(),
                                 plain->input_ids.data_ptr<int64_t>() + 13),
            ids);
  const std::vector<int32_t> cu = {0, 4, 9, 13};
  EXPECT_EQ(std::vector<int32_t>(plain->cu_seqlens.data_ptr<int32_t>(),
                                 plain->cu_seqlens.data_ptr<int32_t>() + 4),
            cu);
  EXPECT_FALSE(plain->token_type_ids.defined());
  absl::StatusOr<Batch> typed = Collator().CollateVarlen(sequences, /*with_types=*/true);
  ASSERT_TRUE(typed.ok()) << typed.status();
  ASSERT_TRUE(typed->token_type_ids.defined());
  EXPECT_EQ(typed->token_type_ids[7].item<int64_t>(), 1);
  EXPECT_EQ(typed->token_type_ids[0].item<int64_t>(), 0);
}

TEST(CollatorTest, RejectsSpecsThatDoNotFitTheCorpus) {
  const corpus::TokenizedCorpus corpus = RandomCorpus(4, 2, 30);
  const Collator collator;
  auto message = [&](BatchSpec spec) {
    absl::StatusOr<Batch> b = collator.Collate(corpus, spec);
    EXPECT_FALSE(b.ok());
    return std::string(b.status().message());
  };
  BatchSpec spec;
  spec.length = 100;
  spec.rows = {{{9, 0, 1, 0}}};
  EXPECT_NE(message(spec).find("example 9"), std::string::npos);
  spec.rows = {{{0, 0, corpus.length(0) + 1, 0}}};
  EXPECT_NE(message(spec).find("does not fit"), std::string::npos);
  spec.rows = {{{0, 0, corpus.length(0), 0}}};
  spec.length = corpus.length(0) - 1;
  EXPECT_NE(message(spec).find("row 0"), std::string::npos);
  spec.rows = {};
  EXPECT_FALSE(collator.Collate(corpus, spec).ok());
  // The planner's empty batch (no rows, length 0): a batch of 0 sequences, in every layout.
  for (Layout layout : {Layout::kPadded, Layout::kPacked, Layout::kVarlen}) {
    BatchSpec empty;
    empty.layout = layout;
    absl::StatusOr<Batch> b = collator.Collate(corpus, empty);
    ASSERT_TRUE(b.ok()) << b.status();
    EXPECT_EQ(b->num_sequences, 0);
    EXPECT_EQ(b->real_tokens, 0);
    EXPECT_EQ(b->labels.numel(), 0);
  }
  spec.layout = Layout::kPadded;
  spec.length = 100;
  spec.rows = {{{0, 0, 1, 0}, {1, 0, 1, 0}}};
  EXPECT_NE(message(spec).find("not 1"), std::string::npos);
}

TEST(CollatorTest, ToMovesEveryTensor) {
  const corpus::TokenizedCorpus corpus = RandomCorpus(8, 4, 40);
  absl::StatusOr<std::vector<BatchSpec>> plan =
      Planner(PlannerOptions().sampler(Sampler::kPacked).batch_size(2).max_len(64))
          .Plan(corpus.Lengths(), 0);
  ASSERT_TRUE(plan.ok());
  CollatorOptions co;
  co.pin_memory = true;  // ignored without CUDA, honoured with it
  absl::StatusOr<Batch> b = Collator(co).Collate(corpus, (*plan)[0]);
  ASSERT_TRUE(b.ok());
  const Batch same = b->To(at::Device(at::kCPU));
  EXPECT_TRUE(same.input_ids.is_same(b->input_ids));
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  EXPECT_TRUE(b->input_ids.is_pinned());
  const Batch gpu = b->To(at::Device(at::kCUDA, 0));
  for (const at::Tensor* t :
       {&gpu.input_ids, &gpu.attention_mask, &gpu.position_ids, &gpu.segment_ids, &gpu.cu_seqlens,
        &gpu.token_index, &gpu.sequence_location, &gpu.labels, &gpu.example_ids}) {
    ASSERT_TRUE(t->is_cuda());
  }
  EXPECT_TRUE(gpu.input_ids.cpu().equal(b->input_ids));
  EXPECT_TRUE(gpu.cu_seqlens.cpu().equal(b->cu_seqlens));
  absl::StatusOr<at::Tensor> mask = BlockDiagonalMask(gpu);
  ASSERT_TRUE(mask.ok());
  EXPECT_TRUE(mask->is_cuda());
  EXPECT_TRUE(mask->cpu().equal(*BlockDiagonalMask(*b)));
}

}  // namespace
}  // namespace padless::batching
