#include "layer_test_util.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>

#include <algorithm>

namespace padless::models::testing {

std::vector<at::Tensor> RandomLayerWeights(at::ScalarType dtype) {
  EncoderLayer layer(EncoderConfig().hidden(kHidden).heads(kHeads).ffn(64), 0);
  std::vector<at::Tensor> w;
  for (const at::Tensor& t : layer->weights()) {
    w.push_back((t.to(dtype) + at::randn_like(t, dtype) * 0.2).detach().requires_grad_(true));
  }
  return w;
}

AttentionContext ReferenceContext(const std::vector<int64_t>& lengths) {
  AttentionContext ctx;
  ctx.backend = AttentionBackend::kVarlenReference;
  ctx.host_offsets = {0};
  for (int64_t n : lengths) {
    ctx.host_offsets.push_back(ctx.host_offsets.back() + n);
    ctx.max_seqlen = std::max(ctx.max_seqlen, n);
  }
  ctx.cu_seqlens = at::tensor(ctx.host_offsets, at::kInt);
  return ctx;
}

LayerRun RunLayer(bool fused, FusedSaving saving, const at::Tensor& x0,
                  const std::vector<at::Tensor>& w, const LayerSpec& spec,
                  const AttentionContext& ctx, const at::Tensor& probe,
                  const std::vector<at::Tensor>* compute, const FusedLayerFp8& fp8) {
  const at::Tensor x = x0.detach().requires_grad_(true);
  LayerRun r;
  r.out = fused ? FusedEncoderLayerForward(x, w, spec, ctx, saving, compute, fp8)
                : EncoderLayerForward(x, w, spec, ctx);
  std::vector<at::Tensor> wrt = {x};
  for (const at::Tensor& t : w) {
    if (t.requires_grad()) wrt.push_back(t);
  }
  std::vector<at::Tensor> g = torch::autograd::grad({(r.out * probe).sum()}, wrt);
  size_t next = 0;
  r.grads.push_back(g[next++]);
  for (const at::Tensor& t : w) r.grads.push_back(t.requires_grad() ? g[next++] : at::Tensor());
  r.out = r.out.detach();
  return r;
}

void ExpectClose(const LayerRun& want, const LayerRun& got, double tol) {
  EXPECT_LE((want.out - got.out).abs().max().item<double>(), tol);
  ASSERT_EQ(want.grads.size(), got.grads.size());
  for (size_t i = 0; i < want.grads.size(); ++i) {
    ASSERT_EQ(want.grads[i].defined(), got.grads[i].defined()) << "gradient " << i;
    if (!want.grads[i].defined()) continue;
    ASSERT_EQ(got.grads[i].sizes(), want.grads[i].sizes()) << "gradient " << i;
    const double scale = std::max(1.0, want.grads[i].abs().max().item<double>());
    EXPECT_LE((want.grads[i] - got.grads[i]).abs().max().item<double>(), tol * scale)
        << "gradient " << i;
  }
}

double Relative(const at::Tensor& want, const at::Tensor& got) {
  return ((want.to(at::kFloat) - got.to(at::kFloat)).norm() /
          want.to(at::kFloat).norm().clamp_min(1e-12))
      .item<double>();
}

}  // namespace padless::models::testing
