// The pieces of the GPU varlen-attention backend tests (cuDNN's, FA3's): packed sequences, q/k/v
// as the layer has them, gradients through autograd, and a float64 reference one sequence at a
// time.
#ifndef PADLESS_TESTS_MODELS_VARLEN_ATTENTION_TEST_UTIL_H_
#define PADLESS_TESTS_MODELS_VARLEN_ATTENTION_TEST_UTIL_H_

#include <ATen/ATen.h>
#include <torch/csrc/autograd/autograd.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "batch_factory.h"
#include "gpu_test_util.h"
#include "padless/models/attention.h"
#include "padless/models/autocast.h"
#include "padless/models/encoder.h"

namespace padless::models::testing {

constexpr int64_t kHeads = 4;
constexpr int64_t kHeadDim = 64;

inline at::Tensor CuSeqlens(const std::vector<int64_t>& lengths) {
  std::vector<int32_t> cu = {0};
  for (int64_t l : lengths) cu.push_back(cu.back() + static_cast<int32_t>(l));
  return at::tensor(cu, at::kInt).to(at::kCUDA);
}

inline AttentionContext Context(const std::vector<int64_t>& lengths, AttentionBackend backend) {
  AttentionContext ctx;
  ctx.backend = backend;
  ctx.cu_seqlens = CuSeqlens(lengths);
  ctx.max_seqlen = std::max<int64_t>(1, *std::max_element(lengths.begin(), lengths.end()));
  return ctx;
}

inline int64_t Total(const std::vector<int64_t>& lengths) {
  int64_t t = 0;
  for (int64_t l : lengths) t += l;
  return t;
}

// q, k, v as the layer has them: the thirds of one [T, 3, heads, head_dim] projection (rows 3 x
// heads x head_dim apart), bf16.
inline std::vector<at::Tensor> RandomQkv(int64_t tokens, uint64_t seed) {
  at::manual_seed(seed);
  const at::Tensor qkv = at::randn({tokens, 3, kHeads, kHeadDim}, at::kCUDA).to(at::kBFloat16);
  return qkv.unbind(1);
}

struct AttentionResult {
  at::Tensor out, dq, dk, dv;  // float64
};

inline AttentionResult WithGrads(
    const std::vector<at::Tensor>& qkv, const at::Tensor& d_out,
    const std::function<at::Tensor(const std::vector<at::Tensor>&)>& attend) {
  std::vector<at::Tensor> in;
  for (const at::Tensor& t : qkv) in.push_back(t.detach().requires_grad_(true));
  const at::Tensor out = attend(in);
  const std::vector<at::Tensor> g =
      torch::autograd::grad({out}, in, {d_out.to(out.scalar_type()).view(out.sizes())});
  return {out.detach().to(at::kDouble).view({-1, kHeads, kHeadDim}), g[0].to(at::kDouble),
          g[1].to(at::kDouble), g[2].to(at::kDouble)};
}

// Float64 attention, one sequence at a time (empty sequences have no rows); with window >= 0,
// query i sees keys i - window .. i + window of its sequence.
inline AttentionResult Reference(const std::vector<at::Tensor>& qkv, const at::Tensor& d_out,
                                 const std::vector<int64_t>& lengths, int64_t window = -1) {
  std::vector<at::Tensor> q64;
  for (const at::Tensor& t : qkv) q64.push_back(t.to(at::kDouble));
  return WithGrads(q64, d_out.to(at::kDouble), [&](const std::vector<at::Tensor>& in) {
    std::vector<at::Tensor> outs;
    int64_t start = 0;
    for (int64_t len : lengths) {
      if (len == 0) continue;
      const auto heads_first = [&](const at::Tensor& t) {
        return t.narrow(0, start, len).transpose(0, 1).unsqueeze(0);
      };
      std::optional<at::Tensor> band;
      if (window >= 0) {
        const at::Tensor i =
            at::arange(len, at::TensorOptions().dtype(at::kLong).device(at::kCUDA));
        band = (i.unsqueeze(1) - i.unsqueeze(0)).abs() <= window;
      }
      outs.push_back(at::scaled_dot_product_attention(heads_first(in[0]), heads_first(in[1]),
                                                      heads_first(in[2]), band)
                         .squeeze(0)
                         .transpose(0, 1));
      start += len;
    }
    return at::cat(outs, 0);
  });
}

inline AttentionResult ThroughAttend(const std::vector<at::Tensor>& qkv, const at::Tensor& d_out,
                                     const AttentionContext& ctx) {
  return WithGrads(qkv, d_out, [&](const std::vector<at::Tensor>& in) {
    return Attend(in[0], in[1], in[2], ctx, /*dropout_p=*/0.0);
  });
}

inline double LargestDifference(const at::Tensor& a, const at::Tensor& b) {
  return (a - b).abs().max().item<double>();
}

// A backend's output and gradients (`got`) against the float64 reference: within 3e-2 of it
// (gradients relative to the largest reference gradient) and no worse than twice FA2's own error
// plus a bf16 step, so that a wrong kernel cannot pass while FA2 is accurate; and not vanished.
inline void ExpectMatchesFlashAndReference(const AttentionResult& got, const AttentionResult& flash,
                                           const AttentionResult& ref, const std::string& what) {
  const std::vector<std::pair<const char*, at::Tensor AttentionResult::*>> parts = {
      {"out", &AttentionResult::out},
      {"dq", &AttentionResult::dq},
      {"dk", &AttentionResult::dk},
      {"dv", &AttentionResult::dv}};
  for (const auto& [name, part] : parts) {
    const at::Tensor want = (ref.*part).reshape((got.*part).sizes());
    // A window of 0 leaves one key per query: its softmax is 1 and dq, dk are exactly zero.
    const double scale =
        name == std::string("out") ? 1.0 : std::max(1e-3, want.abs().max().item<double>());
    const double got_err = LargestDifference(got.*part, want);
    const double flash_err = LargestDifference((flash.*part).reshape(want.sizes()), want);
    EXPECT_LE(got_err, 3e-2 * scale) << what << " " << name << " (FA2's error " << flash_err << ")";
    EXPECT_LE(got_err, 2 * flash_err + 8e-3 * scale) << what << " " << name;
    if (want.abs().max().item<double>() > 1e-3) {
      EXPECT_GT((got.*part).abs().max().item<double>(), 0.1 * scale)
          << what << " " << name << " vanished";
    }
  }
}

// AttendFirstTokens with `backend` (one [CLS] query per sequence, as the inference engine's last
// layer asks) equals the rows of the full attention; an empty sequence's row is zeros.
inline void ExpectFirstTokensMatchFullRows(AttentionBackend backend) {
  const std::vector<int64_t> lengths = {3, 0, 77, 1, 200};
  const std::vector<at::Tensor> qkv = RandomQkv(Total(lengths), 2);
  const AttentionContext ctx = Context(lengths, backend);
  const at::Tensor full = Attend(qkv[0], qkv[1], qkv[2], ctx, 0.0);
  const at::Tensor first_rows =
      ctx.cu_seqlens.narrow(0, 0, 5).to(at::kLong).clamp_max(Total(lengths) - 1);
  const at::Tensor first =
      AttendFirstTokens(qkv[0].index_select(0, first_rows), qkv[1], qkv[2], ctx);
  for (int64_t i : {0, 2, 3, 4}) {
    EXPECT_LE(LargestDifference(first[i].to(at::kFloat),
                                full[first_rows[i].item<int64_t>()].to(at::kFloat)),
              1e-2)
        << i;
  }
  EXPECT_EQ(first[1].abs().max().item<float>(), 0.f);  // the empty sequence
}

// One training step of a model of `config` (bf16 autocast, varlen batch of 1 to 300 tokens) with
// `backend` against kVarlenFlash: logits and every parameter's gradient within 5e-2 of the
// largest entry. `fused`: the fused encoder layers (the backend's kernels called by the layer).
inline void ExpectTrainingStepMatchesFlash(const EncoderConfig& config, bool fused,
                                           AttentionBackend backend, const std::string& what) {
  at::manual_seed(41);
  EncoderClassifier model(config);
  model->to(at::Device(at::kCUDA));
  model->train();
  ChangeRuntime(model, [&](ModelRuntime& r) { r.fused_layers = fused; });
  const batching::Batch b =
      ToDevice(MakeVarlen(RandomSequences(5, 24, 1, 300, 1000, 2)), at::Device(at::kCUDA));
  AutocastGuard autocast(at::kCUDA, AmpMode::kBf16);
  auto run = [&](AttentionBackend chosen) {
    ChangeRuntime(model, [&](ModelRuntime& r) { r.attention = chosen; });
    model->zero_grad(/*set_to_none=*/true);
    const at::Tensor logits = model->forward(b);
    ClassificationLoss(logits, b.labels).backward();
    std::vector<at::Tensor> r = {logits.detach().to(at::kFloat)};
    for (const at::Tensor& p : model->parameters()) r.push_back(p.grad().to(at::kFloat));
    return r;
  };
  const std::vector<at::Tensor> flash = run(AttentionBackend::kVarlenFlash);
  const std::vector<at::Tensor> other = run(backend);
  ASSERT_EQ(flash.size(), other.size());
  for (size_t i = 0; i < flash.size(); ++i) {
    const double scale = std::max(1e-3, flash[i].abs().max().item<double>());
    EXPECT_LE(LargestDifference(flash[i], other[i]), 5e-2 * scale) << what << ", tensor " << i;
  }
}

}  // namespace padless::models::testing

#endif  // PADLESS_TESTS_MODELS_VARLEN_ATTENTION_TEST_UTIL_H_
