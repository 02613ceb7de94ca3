// The cuDNN frontend graphs of cudnn_sdpa.h: built once per key and thread, run on the current
// stream. The only file that includes the frontend (CMake gives it its headers, out of unity
// batches).
//
// The frontend is header-only; compiled with NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING it calls cuDNN
// through the handle `cudnn_frontend::cudnn_dlhandle`, which we point at the libcudnn that
// LibTorch has loaded (RTLD_NOLOAD: never a second copy; see cublaslt_api.h for why we do not
// link such libraries). The JSON serialization it can carry is left out
// (CUDNN_FRONTEND_SKIP_JSON_LIB).
#define NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING
#define CUDNN_FRONTEND_SKIP_JSON_LIB
#include "cudnn_sdpa.h"

#include <ATen/cuda/CUDAContext.h>
#include <ATen/cudnn/Handle.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/util/Exception.h>
#include <cudnn_frontend.h>
#include <dlfcn.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace cudnn_frontend {
void* cudnn_dlhandle = nullptr;  // declared by cudnn_frontend_shim.h; set by LoadCudnn
}  // namespace cudnn_frontend

namespace padless::cuda::internal {
namespace {

namespace fe = cudnn_frontend;
using Graph = fe::graph::Graph;
using TensorAttr = std::shared_ptr<fe::graph::Tensor_attributes>;

// The libcudnn of the major version our headers describe, as LibTorch loaded it; nullptr if absent.
void* LoadCudnn() {
  static void* const lib = [] {
    const std::string soname = "libcudnn.so." + std::to_string(CUDNN_MAJOR);
    return dlopen(soname.c_str(), RTLD_NOW | RTLD_NOLOAD);
  }();
  return lib;
}

void RequireCudnn() {
  static std::once_flag once;
  std::call_once(once, [] { fe::cudnn_dlhandle = LoadCudnn(); });
  TORCH_CHECK(fe::cudnn_dlhandle != nullptr, "cuDNN attention: libcudnn.so.", CUDNN_MAJOR,
              " is not loaded in this process (LibTorch's CUDA library should have loaded it)");
}

void Check(fe::error_t status, const char* step) {
  TORCH_CHECK(status.is_good(), "cuDNN attention: ", step, " failed: ", status.get_message());
}

enum Uid : int64_t {
  kQ = 1,
  kK,
  kV,
  kO,
  kStats,
  kDO,
  kDQ,
  kDK,
  kDV,
  kSeqLenQ,
  kSeqLenKv,
  kQOffsets,
  kKvOffsets,
  kQOutOffsets,
  kStatsOffsets,
  kSeed,
  kOffset,
};

TensorAttr IndexTensor(Graph& g, Uid uid, const char* name, int64_t n,
                       fe::DataType_t type = fe::DataType_t::INT32) {
  return g.tensor(fe::graph::Tensor_attributes()
                      .set_uid(uid)
                      .set_name(name)
                      .set_dim({n, 1, 1, 1})
                      .set_stride({1, 1, 1, 1})
                      .set_data_type(type));
}

// [batch, heads, seqlen, head_dim] over packed token rows `row_stride` elements apart.
void SetTokenLayout(fe::graph::Tensor_attributes& t, const SdpaGraphKey& key, int64_t seqlen,
                    int64_t row_stride, const TensorAttr& ragged_offsets) {
  t.set_dim({key.batch, key.heads, seqlen, key.head_dim})
      .set_stride({seqlen * row_stride, key.head_dim, row_stride, 1})
      .set_ragged_offset(ragged_offsets);
}

TensorAttr TokenInput(Graph& g, Uid uid, const char* name, const SdpaGraphKey& key, int64_t seqlen,
                      int64_t row_stride, const TensorAttr& ragged_offsets) {
  fe::graph::Tensor_attributes t;
  t.set_uid(uid).set_name(name);
  SetTokenLayout(t, key, seqlen, row_stride, ragged_offsets);
  return g.tensor(t);
}

void MarkTokenOutput(const TensorAttr& t, Uid uid, const SdpaGraphKey& key, int64_t seqlen,
                     int64_t row_stride, const TensorAttr& ragged_offsets) {
  t->set_output(true).set_uid(uid);
  SetTokenLayout(*t, key, seqlen, row_stride, ragged_offsets);
}

// fp32 [tokens, heads] statistics as cuDNN's [batch, heads, seqlen, 1].
void SetStatsLayout(fe::graph::Tensor_attributes& t, const SdpaGraphKey& key,
                    const TensorAttr& ragged_offsets) {
  t.set_uid(kStats)
      .set_data_type(fe::DataType_t::FLOAT)
      .set_dim({key.batch, key.heads, key.seqlen_q, 1})
      .set_stride({key.seqlen_q * key.heads, 1, key.heads, 1})
      .set_ragged_offset(ragged_offsets);
}

// The data types and the index tensors of a graph (the statistics' only where the graph has
// them: a tensor no node reads fails validation).
struct Common {
  TensorAttr seq_len_q, seq_len_kv, q_offsets, kv_offsets, q_out_offsets, stats_offsets, seed,
      offset;
};

Common AddCommon(Graph& g, const SdpaGraphKey& key) {
  g.set_io_data_type(fe::DataType_t::BFLOAT16)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  Common c;
  c.seq_len_q = IndexTensor(g, kSeqLenQ, "seq_len_q", key.batch);
  c.seq_len_kv = IndexTensor(g, kSeqLenKv, "seq_len_kv", key.batch);
  c.q_offsets = IndexTensor(g, kQOffsets, "q_offsets", key.batch + 1);
  c.kv_offsets = IndexTensor(g, kKvOffsets, "kv_offsets", key.batch + 1);
  c.q_out_offsets = IndexTensor(g, kQOutOffsets, "q_out_offsets", key.batch + 1);
  if (key.backward || key.stats) {
    c.stats_offsets = IndexTensor(g, kStatsOffsets, "stats_offsets", key.batch + 1);
  }
  if (key.dropout_p > 0.f) {
    c.seed = IndexTensor(g, kSeed, "seed", 1, fe::DataType_t::INT64);
    c.offset = IndexTensor(g, kOffset, "offset", 1, fe::DataType_t::INT64);
  }
  return c;
}

// The forward's cuDNN implementation. COMPOSITE (the fused flash-attention engine that every
// dropout forward before cuDNN 9.22 and every backward uses) unless
// PADLESS_CUDNN_SDPA_FORWARD=auto, which lets the frontend pick: from cuDNN 9.15 on it picks the
// newer UNIFIED engine for forwards without dropout (sdpa_support_surface.h), and such a forward
// died with "illegal instruction" on the IMDB shape (65230 tokens, 244 sequences) on cuDNN 9.19.
fe::AttentionImplementation_t ForwardImplementation() {
  static const bool automatic = [] {
    const char* v = std::getenv("PADLESS_CUDNN_SDPA_FORWARD");
    return v != nullptr && std::string(v) == "auto";
  }();
  return automatic ? fe::AttentionImplementation_t::AUTO : fe::AttentionImplementation_t::COMPOSITE;
}

float AttnScale(const SdpaGraphKey& key) {
  return static_cast<float>(1.0 / std::sqrt(static_cast<double>(key.head_dim)));
}

std::shared_ptr<Graph> ForwardGraph(const SdpaGraphKey& key) {
  auto g = std::make_shared<Graph>();
  const Common c = AddCommon(*g, key);
  const TensorAttr q = TokenInput(*g, kQ, "q", key, key.seqlen_q, key.q_row_stride, c.q_offsets);
  const TensorAttr k = TokenInput(*g, kK, "k", key, key.seqlen_kv, key.kv_row_stride, c.kv_offsets);
  const TensorAttr v = TokenInput(*g, kV, "v", key, key.seqlen_kv, key.kv_row_stride, c.kv_offsets);
  auto options = fe::graph::SDPA_attributes()
                     .set_name("padless_varlen_sdpa")
                     .set_implementation(ForwardImplementation())
                     .set_generate_stats(key.stats)
                     .set_attn_scale(AttnScale(key))
                     .set_padding_mask(true)
                     .set_seq_len_q(c.seq_len_q)
                     .set_seq_len_kv(c.seq_len_kv);
  if (key.dropout_p > 0.f) options.set_dropout(key.dropout_p, c.seed, c.offset);
  auto [o, stats] = g->sdpa(q, k, v, options);
  MarkTokenOutput(o, kO, key, key.seqlen_q, key.heads * key.head_dim, c.q_out_offsets);
  if (key.stats) {
    stats->set_output(true);
    SetStatsLayout(*stats, key, c.stats_offsets);
  }
  return g;
}

std::shared_ptr<Graph> BackwardGraph(const SdpaGraphKey& key) {
  auto g = std::make_shared<Graph>();
  const Common c = AddCommon(*g, key);
  const int64_t out_stride = key.heads * key.head_dim;
  const TensorAttr q = TokenInput(*g, kQ, "q", key, key.seqlen_q, key.q_row_stride, c.q_offsets);
  const TensorAttr k = TokenInput(*g, kK, "k", key, key.seqlen_kv, key.kv_row_stride, c.kv_offsets);
  const TensorAttr v = TokenInput(*g, kV, "v", key, key.seqlen_kv, key.kv_row_stride, c.kv_offsets);
  const TensorAttr o = TokenInput(*g, kO, "o", key, key.seqlen_q, out_stride, c.q_out_offsets);
  const TensorAttr d_o = TokenInput(*g, kDO, "d_o", key, key.seqlen_q, out_stride, c.q_out_offsets);
  fe::graph::Tensor_attributes stats_attr;
  stats_attr.set_name("stats");
  SetStatsLayout(stats_attr, key, c.stats_offsets);
  const TensorAttr stats = g->tensor(stats_attr);
  auto options = fe::graph::SDPA_backward_attributes()
                     .set_name("padless_varlen_sdpa_backward")
                     .set_attn_scale(AttnScale(key))
                     .set_padding_mask(true)
                     .set_seq_len_q(c.seq_len_q)
                     .set_seq_len_kv(c.seq_len_kv);
  if (key.tokens_q > 0 && key.tokens_kv > 0) {
    options.set_max_total_seq_len_q(key.tokens_q).set_max_total_seq_len_kv(key.tokens_kv);
  }
  if (key.dropout_p > 0.f) options.set_dropout(key.dropout_p, c.seed, c.offset);
  auto [dq, dk, dv] = g->sdpa_backward(q, k, v, o, d_o, stats, options);
  // Each gradient in its input's layout: cuDNN's dQ accumulator takes dq's strides and ragged
  // offsets (see cudnn_sdpa.h).
  MarkTokenOutput(dq, kDQ, key, key.seqlen_q, key.q_row_stride, c.q_offsets);
  MarkTokenOutput(dk, kDK, key, key.seqlen_kv, key.kv_row_stride, c.kv_offsets);
  MarkTokenOutput(dv, kDV, key, key.seqlen_kv, key.kv_row_stride, c.kv_offsets);
  return g;
}

struct KeyHash {
  size_t operator()(const SdpaGraphKey& k) const {
    size_t h = 0;
    const auto mix = [&h](int64_t v) {
      h ^= std::hash<int64_t>()(v) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    };
    int32_t p_bits = 0;
    std::memcpy(&p_bits, &k.dropout_p, sizeof(p_bits));
    for (int64_t v : {int64_t{k.device}, int64_t{k.backward}, int64_t{k.stats}, int64_t{p_bits},
                      k.batch, k.heads, k.head_dim, k.seqlen_q, k.seqlen_kv, k.q_row_stride,
                      k.kv_row_stride, k.tokens_q, k.tokens_kv}) {
      mix(v);
    }
    return h;
  }
};

struct BuiltGraph {
  std::shared_ptr<Graph> graph;
  int64_t workspace_bytes = 0;
};

BuiltGraph Build(const SdpaGraphKey& key, cudnnHandle_t handle) {
  BuiltGraph b;
  b.graph = key.backward ? BackwardGraph(key) : ForwardGraph(key);
  Check(b.graph->build(handle, {fe::HeurMode_t::A}),
        key.backward ? "backward graph" : "forward graph");
  Check(b.graph->get_workspace_size(b.workspace_bytes), "get_workspace_size");
  return b;
}

const BuiltGraph& FindOrBuild(const SdpaGraphKey& key, cudnnHandle_t handle) {
  thread_local std::unordered_map<SdpaGraphKey, BuiltGraph, KeyHash> cache;
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, Build(key, handle)).first;
  return it->second;
}

std::unordered_map<int64_t, void*> VariantPack(const SdpaGraphKey& key, const SdpaPointers& p) {
  const auto in = [](const void* ptr) { return const_cast<void*>(ptr); };
  std::unordered_map<int64_t, void*> pack = {{kQ, in(p.q)},
                                             {kK, in(p.k)},
                                             {kV, in(p.v)},
                                             {kO, p.out},
                                             {kSeqLenQ, in(p.seq_len_q)},
                                             {kSeqLenKv, in(p.seq_len_kv)},
                                             {kQOffsets, in(p.q_offsets)},
                                             {kKvOffsets, in(p.kv_offsets)},
                                             {kQOutOffsets, in(p.q_out_offsets)}};
  if (key.dropout_p > 0.f) {
    pack[kSeed] = in(p.seed);
    pack[kOffset] = in(p.offset);
  }
  if (key.stats || key.backward) {
    pack[kStats] = p.stats;
    pack[kStatsOffsets] = in(p.stats_offsets);
  }
  if (key.backward) {
    pack[kDO] = in(p.d_out);
    pack[kDQ] = p.dq;
    pack[kDK] = p.dk;
    pack[kDV] = p.dv;
  }
  return pack;
}

}  // namespace

bool BackwardUsesRaggedWorkspace() {
  static const bool ragged = [] {
    const char* v = std::getenv("PADLESS_CUDNN_SDPA_RAGGED_WORKSPACE");
    return v != nullptr && std::string(v) == "1";
  }();
  return ragged;
}

int LoadedCudnnVersion() {
  RequireCudnn();
  return static_cast<int>(fe::detail::get_backend_version());
}

void RunCudnnSdpa(const SdpaGraphKey& key, const SdpaPointers& p) {
  RequireCudnn();
  // LibTorch's per-thread handle of the current device, bound to the current stream.
  cudnnHandle_t handle = at::native::getCudnnHandle();
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  TORCH_CHECK(fe::detail::set_stream(handle, stream) == CUDNN_STATUS_SUCCESS,
              "cuDNN attention: cudnnSetStream failed");
  const BuiltGraph& built = FindOrBuild(key, handle);
  const c10::DataPtr workspace =
      c10::cuda::CUDACachingAllocator::get()->allocate(built.workspace_bytes);
  std::unordered_map<int64_t, void*> pack = VariantPack(key, p);
  Check(built.graph->execute(handle, pack, workspace.get()), "execute");
}

}  // namespace padless::cuda::internal
