#include "batch_factory.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace padless::models::testing {

using batching::Batch;
using batching::Layout;

namespace {

at::Tensor Longs(const std::vector<int64_t>& v) { return at::tensor(v, at::kLong); }

at::Tensor CuSeqlens(const Sequences& s) {
  std::vector<int32_t> cu = {0};
  for (const auto& t : s.tokens) cu.push_back(cu.back() + static_cast<int32_t>(t.size()));
  return at::tensor(cu, at::kInt);
}

int64_t Longest(const Sequences& s) {
  int64_t m = 0;
  for (const auto& t : s.tokens) m = std::max<int64_t>(m, t.size());
  return m;
}

}  // namespace

Sequences RandomSequences(uint64_t seed, int64_t n, int64_t min_len, int64_t max_len, int64_t vocab,
                          int64_t classes) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> len(min_len, max_len);
  std::uniform_int_distribution<int64_t> tok(1, vocab - 1);
  std::uniform_int_distribution<int64_t> lab(0, classes - 1);
  Sequences s;
  for (int64_t i = 0; i < n; ++i) {
    std::vector<int64_t> t(len(rng));
    for (int64_t& x : t) x = tok(rng);
    s.tokens.push_back(std::move(t));
    s.labels.push_back(lab(rng));
  }
  return s;
}

Batch MakePadded(const Sequences& s) {
  const int64_t n = s.tokens.size();
  const int64_t l = Longest(s);
  at::Tensor ids = at::zeros({n, l}, at::kLong);
  at::Tensor mask = at::zeros({n, l}, at::kBool);
  at::Tensor pos = at::zeros({n, l}, at::kLong);
  std::vector<int64_t> loc;
  Batch b;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t len = s.tokens[i].size();
    ids[i].narrow(0, 0, len).copy_(Longs(s.tokens[i]));
    mask[i].narrow(0, 0, len).fill_(true);
    pos[i].narrow(0, 0, len).copy_(at::arange(len, at::kLong));
    loc.insert(loc.end(), {i, 0});
    b.real_tokens += len;
  }
  b.layout = Layout::kPadded;
  b.input_ids = ids;
  b.attention_mask = mask;
  b.position_ids = pos;
  b.sequence_location = Longs(loc).view({n, 2});
  b.labels = Longs(s.labels);
  b.num_sequences = n;
  b.padded_tokens = n * l - b.real_tokens;
  b.max_seqlen = l;
  return b;
}

Batch MakePacked(const Sequences& s, int64_t row_length) {
  std::vector<std::vector<int64_t>> rows;  // sequence indices per row
  int64_t used = row_length;
  for (int64_t i = 0; i < static_cast<int64_t>(s.tokens.size()); ++i) {
    const int64_t len = s.tokens[i].size();
    if (used + len > row_length) {
      rows.emplace_back();
      used = 0;
    }
    rows.back().push_back(i);
    used += len;
  }
  const int64_t r = rows.size();
  at::Tensor ids = at::zeros({r, row_length}, at::kLong);
  at::Tensor mask = at::zeros({r, row_length}, at::kBool);
  at::Tensor pos = at::zeros({r, row_length}, at::kLong);
  at::Tensor seg = at::full({r, row_length}, -1, at::kLong);
  std::vector<int64_t> token_index, loc;
  Batch b;
  for (int64_t row = 0; row < r; ++row) {
    int64_t offset = 0;
    for (int64_t i : rows[row]) {
      const int64_t len = s.tokens[i].size();
      ids[row].narrow(0, offset, len).copy_(Longs(s.tokens[i]));
      mask[row].narrow(0, offset, len).fill_(true);
      pos[row].narrow(0, offset, len).copy_(at::arange(len, at::kLong));
      seg[row].narrow(0, offset, len).fill_(i);
      for (int64_t k = 0; k < len; ++k) token_index.push_back(row * row_length + offset + k);
      loc.insert(loc.end(), {row, offset});
      offset += len;
    }
  }
  b.layout = Layout::kPacked;
  b.input_ids = ids;
  b.attention_mask = mask;
  b.position_ids = pos;
  b.segment_ids = seg;
  b.cu_seqlens = CuSeqlens(s);
  b.max_seqlen = Longest(s);
  b.token_index = Longs(token_index);
  b.sequence_location = Longs(loc).view({-1, 2});
  b.labels = Longs(s.labels);
  b.num_sequences = s.tokens.size();
  b.real_tokens = token_index.size();
  b.padded_tokens = r * row_length - b.real_tokens;
  return b;
}

Batch MakeVarlen(const Sequences& s) {
  std::vector<int64_t> ids, pos, seg;
  for (size_t i = 0; i < s.tokens.size(); ++i) {
    for (size_t k = 0; k < s.tokens[i].size(); ++k) {
      ids.push_back(s.tokens[i][k]);
      pos.push_back(k);
      seg.push_back(i);
    }
  }
  Batch b;
  b.layout = Layout::kVarlen;
  b.input_ids = Longs(ids);
  b.position_ids = Longs(pos);
  b.segment_ids = Longs(seg);
  b.cu_seqlens = CuSeqlens(s);
  b.max_seqlen = Longest(s);
  b.labels = Longs(s.labels);
  b.num_sequences = s.tokens.size();
  b.real_tokens = ids.size();
  return b;
}

Batch ToDevice(const Batch& b, const at::Device& device) {
  Batch out = b;
  for (at::Tensor* t : {&out.input_ids, &out.attention_mask, &out.position_ids, &out.token_type_ids,
                        &out.segment_ids, &out.cu_seqlens, &out.token_index, &out.sequence_location,
                        &out.labels, &out.example_ids}) {
    if (t->defined()) *t = t->to(device);
  }
  return out;
}

StepResult RunStep(EncoderClassifier& model, const Batch& b) {
  model->zero_grad();
  StepResult r;
  r.logits = model->forward(b);
  r.loss = ClassificationLoss(r.logits, b.labels);
  r.loss.backward();
  for (const auto& p : model->named_parameters()) {
    r.grads.emplace_back(p.key(),
                         p.value().grad().defined() ? p.value().grad().clone() : at::Tensor());
  }
  return r;
}

double MaxDiff(const at::Tensor& a, const at::Tensor& b) {
  return (a.to(at::kDouble) - b.to(at::kDouble)).abs().max().item<double>();
}

void ExpectSameStep(const StepResult& a, const StepResult& b, double tol) {
  ASSERT_EQ(a.logits.sizes(), b.logits.sizes());
  EXPECT_LE(MaxDiff(a.logits, b.logits), tol);
  EXPECT_LE(MaxDiff(a.loss, b.loss), tol);
  ASSERT_EQ(a.grads.size(), b.grads.size());
  for (size_t i = 0; i < a.grads.size(); ++i) {
    ASSERT_TRUE(a.grads[i].second.defined()) << a.grads[i].first;
    ASSERT_TRUE(b.grads[i].second.defined()) << b.grads[i].first;
    EXPECT_LE(MaxDiff(a.grads[i].second, b.grads[i].second), tol) << a.grads[i].first;
  }
}

}  // namespace padless::models::testing
