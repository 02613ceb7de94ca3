// cudnn_attention_bench: the varlen attention backends against LibTorch's FlashAttention-2
// (at::_flash_attention_forward/backward, the kVarlenFlash path) on the same tensors: cuDNN's
// fused attention (cuda::CudnnVarlenAttention, kVarlenCudnn; with and without dropout) and
// FlashAttention-3 (cuda::Fa3VarlenAttention, kVarlenFa3; no dropout, also with ModernBERT's
// 64-token window on each side: --window), each where this build has it; forward and backward, on
// IMDB lengths (bench/report/imdb_lengths.txt, capped at 512, 64k tokens a batch), SST-2-like
// lengths (5..45, mean 25) and 8192-token documents; 12 heads of 64, bf16, q/k/v the thirds of one
// [T, 3, heads, 64] projection as in the layer. One JSON line per (shape, dropout, pass, kernel):
// GPU milliseconds (CUDA events, median of --iters after 3 warm-up calls) and TFLOP/s (forward
// 4 sum(L^2) heads 64 flops, backward 2.5 times that); cuDNN's lines also carry its speedup over
// FA2 and, without dropout, its largest difference from FA2's output (FA3's backward lines: from
// FA2's dq, dk, dv).
//   cudnn_attention_bench [--iters N] [--imdb-lengths FILE] [--shapes imdb,sst2,doc8k,meanN]
//                         [--window W]
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#include <torch/cuda.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "padless/cuda/kernels/cudnn_attention.h"
#include "padless/cuda/kernels/fa3_attention.h"

namespace {

constexpr int64_t kHeads = 12;
constexpr int64_t kHeadDim = 64;
constexpr int64_t kBatchTokens = 65536;

struct Shape {
  std::string name;
  std::vector<int64_t> lengths;
};

// Lengths drawn (seeded) from `pool` until the next would pass kBatchTokens.
std::vector<int64_t> FillBatch(const std::vector<int64_t>& pool, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<size_t> pick(0, pool.size() - 1);
  std::vector<int64_t> lengths;
  int64_t total = 0;
  while (true) {
    const int64_t len = pool[pick(rng)];
    if (total + len > kBatchTokens) break;
    lengths.push_back(len);
    total += len;
  }
  return lengths;
}

std::vector<int64_t> ImdbPool(const std::string& path) {
  std::vector<int64_t> pool;
  std::ifstream in(path);
  for (int64_t len; in >> len;) pool.push_back(std::min<int64_t>(std::max<int64_t>(len, 1), 512));
  if (pool.empty()) {  // no file: IMDB's shape approximated (50..512, mean ~280)
    std::fprintf(stderr, "cudnn_attention_bench: %s unreadable; synthetic IMDB lengths\n",
                 path.c_str());
    for (int64_t len = 50; len <= 512; ++len) pool.push_back(len);
  }
  return pool;
}

std::vector<Shape> Shapes(const std::string& imdb_path, const std::string& which) {
  std::vector<Shape> all;
  if (which.find("imdb") != std::string::npos)
    all.push_back({"imdb", FillBatch(ImdbPool(imdb_path), 1)});
  if (which.find("sst2") != std::string::npos) {
    std::vector<int64_t> pool;
    for (int64_t len = 5; len <= 45; ++len) pool.push_back(len);
    all.push_back({"sst2", FillBatch(pool, 2)});
  }
  if (which.find("doc8k") != std::string::npos) all.push_back({"doc8k", FillBatch({8192}, 3)});
  // meanN (e.g. mean64): lengths N/2 to 3N/2, to find where FA3 starts to beat FA2 (kAuto's rule).
  std::istringstream names(which);
  for (std::string name; std::getline(names, name, ',');) {
    if (name.rfind("mean", 0) != 0) continue;
    const int64_t mean = std::atoll(name.c_str() + 4);
    if (mean < 2 || mean > 8192) continue;
    std::vector<int64_t> pool;
    for (int64_t len = mean / 2; len <= mean + mean / 2; ++len) pool.push_back(len);
    all.push_back({name, FillBatch(pool, 4)});
  }
  return all;
}

double MedianMs(const std::function<void()>& fn, int iters) {
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  for (int i = 0; i < 3; ++i) fn();
  std::vector<double> ms;
  for (int i = 0; i < iters; ++i) {
    cudaEventRecord(start, stream);
    fn();
    cudaEventRecord(stop, stream);
    cudaEventSynchronize(stop);
    float t = 0.f;
    cudaEventElapsedTime(&t, start, stop);
    ms.push_back(t);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

struct Inputs {
  at::Tensor q, k, v, d_out, cu;
  int64_t max_seqlen = 0;
  double flops_fwd = 0;
};

Inputs MakeInputs(const Shape& s) {
  Inputs in;
  int64_t tokens = 0;
  std::vector<int32_t> cu = {0};
  for (int64_t len : s.lengths) {
    tokens += len;
    cu.push_back(static_cast<int32_t>(tokens));
    in.max_seqlen = std::max(in.max_seqlen, len);
    in.flops_fwd += 4.0 * static_cast<double>(len) * len * kHeads * kHeadDim;
  }
  const at::Tensor qkv = at::randn({tokens, 3, kHeads, kHeadDim}, at::kCUDA).to(at::kBFloat16);
  const std::vector<at::Tensor> parts = qkv.unbind(1);
  in.q = parts[0];
  in.k = parts[1];
  in.v = parts[2];
  in.d_out = at::randn({tokens, kHeads, kHeadDim}, at::kCUDA).to(at::kBFloat16);
  in.cu = at::tensor(cu, at::kInt).to(at::kCUDA);
  return in;
}

void Print(const Shape& s, const Inputs& in, double p, const char* pass, const char* kernel,
           double ms, double flops, nlohmann::json extra = nlohmann::json::object()) {
  nlohmann::json j = {{"bench", "cudnn_attention"},
                      {"shape", s.name},
                      {"pass", pass},
                      {"kernel", kernel},
                      {"dropout", p},
                      {"tokens", in.q.size(0)},
                      {"sequences", s.lengths.size()},
                      {"max_seqlen", in.max_seqlen},
                      {"heads", kHeads},
                      {"head_dim", kHeadDim},
                      {"ms", ms},
                      {"tflops", flops / (ms * 1e-3) / 1e12}};
  j.update(extra);
  std::printf("%s\n", j.dump().c_str());
  std::fflush(stdout);
}

double MaxDiff(const at::Tensor& a, const at::Tensor& b) {
  return (a.to(at::kFloat) - b.to(at::kFloat)).abs().max().item<double>();
}

// FA3 against FA2 without dropout, both with `window` tokens on each side (-1: global). The FLOP
// counts are the full attention's, so windowed rows compare times, not TFLOP/s.
void RunFa3(const Shape& s, const Inputs& in, int64_t window, int iters) {
  const std::optional<int64_t> w = window >= 0 ? std::optional<int64_t>(window) : std::nullopt;
  const auto fa2_forward = [&] {
    return at::_flash_attention_forward(in.q, in.k, in.v, in.cu, in.cu, in.max_seqlen,
                                        in.max_seqlen, 0.0, false, false, std::nullopt, w, w);
  };
  const auto flash = fa2_forward();
  const auto fa2_backward = [&] {
    return at::_flash_attention_backward(in.d_out, in.q, in.k, in.v, std::get<0>(flash),
                                         std::get<1>(flash), in.cu, in.cu, in.max_seqlen,
                                         in.max_seqlen, 0.0, false, std::get<2>(flash),
                                         std::get<3>(flash), std::nullopt, w, w);
  };
  const auto fa2_grads = fa2_backward();
  const padless::cuda::VarlenSequences seqs{in.cu, in.cu, in.max_seqlen, in.max_seqlen};
  const padless::cuda::AttentionWindow aw{window, window};
  const padless::cuda::Fa3Forward f = padless::cuda::Fa3VarlenAttention(in.q, in.k, in.v, seqs, aw);
  const std::array<at::Tensor, 3> g =
      padless::cuda::Fa3VarlenAttentionBackward(in.d_out, in.q, in.k, in.v, f, seqs, aw);
  const double fa_fwd = MedianMs([&] { fa2_forward(); }, iters);
  const double fa_bwd = MedianMs([&] { fa2_backward(); }, iters);
  const double fa3_fwd =
      MedianMs([&] { padless::cuda::Fa3VarlenAttention(in.q, in.k, in.v, seqs, aw); }, iters);
  const double fa3_bwd = MedianMs(
      [&] { padless::cuda::Fa3VarlenAttentionBackward(in.d_out, in.q, in.k, in.v, f, seqs, aw); },
      iters);
  const nlohmann::json win = {{"window", window}};
  nlohmann::json fwd = {{"window", window},
                        {"speedup_vs_fa2", fa_fwd / fa3_fwd},
                        {"max_abs_diff_vs_fa2", MaxDiff(f.out, std::get<0>(flash))}};
  nlohmann::json bwd = {{"window", window},
                        {"speedup_vs_fa2", fa_bwd / fa3_bwd},
                        {"max_abs_diff_dq_vs_fa2", MaxDiff(g[0], std::get<0>(fa2_grads))},
                        {"max_abs_diff_dk_vs_fa2", MaxDiff(g[1], std::get<1>(fa2_grads))},
                        {"max_abs_diff_dv_vs_fa2", MaxDiff(g[2], std::get<2>(fa2_grads))},
                        {"max_abs_dq_fa2", std::get<0>(fa2_grads).abs().max().item<double>()}};
  if (window >= 0) {  // the windowed FA2 rows, for the same-run ratio
    Print(s, in, 0.0, "fwd", "fa2", fa_fwd, in.flops_fwd, win);
    Print(s, in, 0.0, "bwd", "fa2", fa_bwd, 2.5 * in.flops_fwd, win);
  }
  Print(s, in, 0.0, "fwd", "fa3", fa3_fwd, in.flops_fwd, fwd);
  Print(s, in, 0.0, "bwd", "fa3", fa3_bwd, 2.5 * in.flops_fwd, bwd);
}

void RunShape(const Shape& s, int iters, int64_t window) {
  const Inputs in = MakeInputs(s);
  const padless::cuda::VarlenSequences seqs{in.cu, in.cu, in.max_seqlen, in.max_seqlen};
  for (double p : {0.0, 0.1}) {
    auto flash = at::_flash_attention_forward(in.q, in.k, in.v, in.cu, in.cu, in.max_seqlen,
                                              in.max_seqlen, p, false, false);
    const double fa_fwd = MedianMs(
        [&] {
          at::_flash_attention_forward(in.q, in.k, in.v, in.cu, in.cu, in.max_seqlen, in.max_seqlen,
                                       p, false, false);
        },
        iters);
    const double fa_bwd = MedianMs(
        [&] {
          at::_flash_attention_backward(
              in.d_out, in.q, in.k, in.v, std::get<0>(flash), std::get<1>(flash), in.cu, in.cu,
              in.max_seqlen, in.max_seqlen, p, false, std::get<2>(flash), std::get<3>(flash));
        },
        iters);
    Print(s, in, p, "fwd", "fa2", fa_fwd, in.flops_fwd);
    Print(s, in, p, "bwd", "fa2", fa_bwd, 2.5 * in.flops_fwd);
    if (p == 0.0 && padless::cuda::Fa3AttentionBuilt()) {
      RunFa3(s, in, -1, iters);
      if (window >= 0) RunFa3(s, in, window, iters);
    }
    if (!padless::cuda::CudnnAttentionBuilt()) continue;

    const padless::cuda::CudnnAttentionForward f =
        padless::cuda::CudnnVarlenAttention(in.q, in.k, in.v, seqs, p, /*save_stats=*/true);
    nlohmann::json extra_fwd = nlohmann::json::object();
    if (p == 0.0) {
      extra_fwd["max_abs_diff_vs_fa2"] =
          (f.out.to(at::kFloat) - std::get<0>(flash).to(at::kFloat)).abs().max().item<double>();
    }
    const double cu_fwd = MedianMs(
        [&] { padless::cuda::CudnnVarlenAttention(in.q, in.k, in.v, seqs, p, true); }, iters);
    const double cu_bwd = MedianMs(
        [&] {
          padless::cuda::CudnnVarlenAttentionBackward(in.d_out, in.q, in.k, in.v, f, seqs, p);
        },
        iters);
    extra_fwd["speedup_vs_fa2"] = fa_fwd / cu_fwd;
    Print(s, in, p, "fwd", "cudnn", cu_fwd, in.flops_fwd, extra_fwd);
    Print(s, in, p, "bwd", "cudnn", cu_bwd, 2.5 * in.flops_fwd,
          {{"speedup_vs_fa2", fa_bwd / cu_bwd}});
  }
}

}  // namespace

int main(int argc, char** argv) {
  int iters = 20;
  std::string imdb = std::string(PADLESS_SOURCE_DIR) + "/bench/report/imdb_lengths.txt";
  std::string shapes = "imdb,sst2,doc8k";
  int64_t window = 64;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--iters" && i + 1 < argc) {
      iters = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--imdb-lengths" && i + 1 < argc) {
      imdb = argv[++i];
    } else if (a == "--shapes" && i + 1 < argc) {
      shapes = argv[++i];
    } else if (a == "--window" && i + 1 < argc) {
      window = std::atoll(argv[++i]);
    } else {
      std::fprintf(stderr,
                   "usage: %s [--iters N] [--imdb-lengths FILE] [--shapes imdb,sst2,doc8k,meanN] "
                   "[--window W]\n",
                   argv[0]);
      return 2;
    }
  }
  if (!torch::cuda::is_available()) {
    std::printf("cudnn_attention_bench: no CUDA device; nothing to measure.\n");
    return 0;
  }
  if (!padless::cuda::CudnnAttentionBuilt() && !padless::cuda::Fa3AttentionBuilt()) {
    std::printf(
        "cudnn_attention_bench: built without cuDNN and FA3 attention (PADLESS_CUDNN_ATTENTION, "
        "PADLESS_FA3_ATTENTION).\n");
    return 0;
  }
  at::manual_seed(1234);
  std::printf("%s\n", nlohmann::json({{"bench", "cudnn_attention"},
                                      {"cudnn_version", padless::cuda::CudnnLibraryVersion()},
                                      {"fa3", padless::cuda::Fa3AttentionBuilt()},
                                      {"device", at::cuda::getCurrentDeviceProperties()->name}})
                          .dump()
                          .c_str());
  for (const Shape& s : Shapes(imdb, shapes)) RunShape(s, iters, window);
  return 0;
}
