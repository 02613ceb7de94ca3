#include "padless/models/attention_groups.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <limits>

namespace padless::models {

std::vector<LengthGroup> PlanLengthGroups(const std::vector<int64_t>& lengths, int64_t call_pairs) {
  TORCH_CHECK(call_pairs >= 0, "PlanLengthGroups: call_pairs must be >= 0");
  std::vector<int64_t> sorted;
  for (size_t i = 0; i < lengths.size(); ++i) {
    TORCH_CHECK(lengths[i] >= 0, "PlanLengthGroups: sequence ", i, " has a negative length");
    if (lengths[i] > 0) sorted.push_back(static_cast<int64_t>(i));
  }
  std::stable_sort(sorted.begin(), sorted.end(),
                   [&](int64_t a, int64_t b) { return lengths[a] < lengths[b]; });
  // best[j]: the least cost of the first j sorted sequences; start[j]: where its last group starts.
  // A group's cost depends only on its size and its last (longest) member.
  const size_t m = sorted.size();
  std::vector<int64_t> best(m + 1, std::numeric_limits<int64_t>::max());
  std::vector<size_t> start(m + 1, 0);
  best[0] = 0;
  for (size_t j = 1; j <= m; ++j) {
    const int64_t longest = lengths[sorted[j - 1]];
    for (size_t i = 0; i < j; ++i) {
      const int64_t cost = best[i] + call_pairs + static_cast<int64_t>(j - i) * longest * longest;
      if (cost < best[j]) {
        best[j] = cost;
        start[j] = i;
      }
    }
  }
  std::vector<LengthGroup> groups;
  for (size_t j = m; j > 0; j = start[j]) {
    LengthGroup g;
    g.sequences.assign(sorted.begin() + start[j], sorted.begin() + j);
    g.length = lengths[sorted[j - 1]];
    groups.push_back(std::move(g));
  }
  std::reverse(groups.begin(), groups.end());
  return groups;
}

namespace {

at::Tensor LongTensor(const std::vector<int64_t>& v, const at::Device& device) {
  return at::tensor(v, at::TensorOptions().dtype(at::kLong)).to(device);
}

}  // namespace

PaddedGroups BuildPaddedGroups(const std::vector<int64_t>& offsets, const at::Device& device,
                               int64_t call_pairs) {
  TORCH_CHECK(!offsets.empty() && offsets.front() == 0,
              "BuildPaddedGroups: offsets must start at 0");
  std::vector<int64_t> lengths(offsets.size() - 1);
  for (size_t i = 0; i < lengths.size(); ++i) lengths[i] = offsets[i + 1] - offsets[i];
  PaddedGroups out;
  out.sequences = static_cast<int64_t>(lengths.size());
  const std::vector<LengthGroup> plan = PlanLengthGroups(lengths, call_pairs);
  if (plan.empty()) return out;
  std::vector<int64_t> gather, order;
  std::vector<int64_t> token_slot(offsets.back());
  for (const LengthGroup& g : plan) {
    PaddedGroups::Group group;
    group.first_slot = static_cast<int64_t>(gather.size());
    group.first_rank = static_cast<int64_t>(order.size());
    group.size = static_cast<int64_t>(g.sequences.size());
    group.length = g.length;
    std::vector<int64_t> group_lengths;
    for (const int64_t s : g.sequences) {
      const int64_t len = lengths[s];
      group_lengths.push_back(len);
      for (int64_t t = 0; t < g.length; ++t) {
        if (t < len) token_slot[offsets[s] + t] = static_cast<int64_t>(gather.size());
        gather.push_back(offsets[s] + std::min(t, len - 1));
      }
      order.push_back(s);
    }
    // Sorted shortest first: the group is padded unless its first is as long as its longest.
    if (group_lengths.front() < g.length) {
      const at::Tensor pos = at::arange(g.length, at::kLong);
      group.key_mask = (pos.unsqueeze(0) < LongTensor(group_lengths, at::kCPU).unsqueeze(1))
                           .view({group.size, 1, 1, g.length})
                           .to(device);
    }
    out.groups.push_back(std::move(group));
  }
  out.gather = LongTensor(gather, device);
  out.token_slot = LongTensor(token_slot, device);
  out.order = LongTensor(order, device);
  return out;
}

}  // namespace padless::models
