#include "layer_call.h"

#include <string>
#include <utility>

namespace padless::models::internal {

void SaveLayerCall(torch::autograd::AutogradContext* actx, const LayerSpec& spec,
                   const AttentionContext& ctx) {
  auto& d = actx->saved_data;
  d["head_dim"] = spec.head_dim;
  d["eps"] = spec.eps;
  d["dropout"] = spec.dropout;
  d["attention_dropout"] = spec.attention_dropout;
  d["pre_ln"] = spec.pre_ln;
  d["lean"] = spec.lean;
  d["activation"] = static_cast<int64_t>(spec.activation);
  d["modernbert"] = spec.modernbert;
  d["window"] = spec.window;
  const std::pair<const char*, const RotaryTable*> tables[] = {{"rotary_global", &ctx.rotary_global},
                                                               {"rotary_local", &ctx.rotary_local}};
  for (const auto& [name, table] : tables) {
    if (!table->defined()) continue;
    d[std::string(name) + "_cos"] = table->cos;
    d[std::string(name) + "_sin"] = table->sin;
  }
  d["backend"] = static_cast<int64_t>(ctx.backend);
  if (ctx.mask.defined()) d["mask"] = ctx.mask;
  if (ctx.cu_seqlens.defined()) d["cu_seqlens"] = ctx.cu_seqlens;
  d["max_seqlen"] = ctx.max_seqlen;
  d["host_offsets"] = ctx.host_offsets;
}

LayerSpec LoadLayerSpec(torch::autograd::AutogradContext* actx) {
  auto& d = actx->saved_data;
  LayerSpec spec;
  spec.head_dim = d["head_dim"].toInt();
  spec.eps = d["eps"].toDouble();
  spec.dropout = d["dropout"].toDouble();
  spec.attention_dropout = d["attention_dropout"].toDouble();
  spec.pre_ln = d["pre_ln"].toBool();
  spec.lean = d["lean"].toBool();
  spec.activation = static_cast<Activation>(d["activation"].toInt());
  spec.modernbert = d["modernbert"].toBool();
  spec.window = d["window"].toInt();
  return spec;
}

AttentionContext LoadAttentionContext(torch::autograd::AutogradContext* actx) {
  auto& d = actx->saved_data;
  AttentionContext ctx;
  ctx.backend = static_cast<AttentionBackend>(d["backend"].toInt());
  if (d.count("mask")) ctx.mask = d["mask"].toTensor();
  if (d.count("cu_seqlens")) ctx.cu_seqlens = d["cu_seqlens"].toTensor();
  ctx.max_seqlen = d["max_seqlen"].toInt();
  ctx.host_offsets = d["host_offsets"].toIntVector();
  for (const auto& [name, table] : {std::pair<std::string, RotaryTable*>{"rotary_global",
                                                                         &ctx.rotary_global},
                                    {"rotary_local", &ctx.rotary_local}}) {
    if (!d.count(name + "_cos")) continue;
    table->cos = d[name + "_cos"].toTensor();
    table->sin = d[name + "_sin"].toTensor();
  }
  // The groups are a pure function of the offsets: planned again rather than saved as tensors.
  if (ctx.backend == AttentionBackend::kVarlenGrouped) {
    ctx.groups = BuildPaddedGroups(ctx.host_offsets, ctx.cu_seqlens.device());
  }
  return ctx;
}

void SaveForwardRng(torch::autograd::AutogradContext* actx, const RngState& rng) {
  actx->saved_data["rng_cpu"] = rng.cpu;
  if (rng.cuda.defined()) actx->saved_data["rng_cuda"] = rng.cuda;
}

RngState LoadForwardRng(torch::autograd::AutogradContext* actx) {
  auto& d = actx->saved_data;
  RngState rng;
  rng.cpu = d["rng_cpu"].toTensor();
  if (d.count("rng_cuda")) rng.cuda = d["rng_cuda"].toTensor();
  return rng;
}

}  // namespace padless::models::internal
