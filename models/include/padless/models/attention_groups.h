// Varlen attention as a few padded attention calls instead of one per sequence: the batch's
// sequences, sorted by length, are cut into runs ("length groups"); each group is padded to its
// longest sequence and attended in one SDPA call with a key mask. Used where no varlen kernel
// exists (the CPU): there one SDPA call per sequence spent more time in per-call overhead and
// thread fork/join than in attention itself on short texts.
//
// PlanLengthGroups is the pure, deterministic plan; PaddedGroups holds the index tensors that
// carry it out, built once per batch and shared by every layer (AttentionContext::groups).
#ifndef PADLESS_MODELS_ATTENTION_GROUPS_H_
#define PADLESS_MODELS_ATTENTION_GROUPS_H_

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace padless::models {

// One group: sequences (indices into the batch) of lengths at most `length`, shortest first.
struct LengthGroup {
  std::vector<int64_t> sequences;
  int64_t length = 0;
};

// The fixed cost of one attention call, in query-key pairs (a group of n sequences padded to L
// costs n * L * L pairs): about what a 32-token sequence's attention costs on a CPU core, so a
// group is split only when splitting saves more padding than one more call costs.
inline constexpr int64_t kGroupCallPairs = 1024;

// Partitions the non-empty sequences of `lengths`, sorted by length (ties by index), into
// contiguous runs minimizing  sum over groups of (call_pairs + size * longest^2)  exactly (a
// dynamic program, O(m^2) for m non-empty sequences). Empty sequences are in no group. Groups come
// shortest first. call_pairs >= 0.
std::vector<LengthGroup> PlanLengthGroups(const std::vector<int64_t>& lengths,
                                          int64_t call_pairs = kGroupCallPairs);

// The index tensors of a plan over a varlen batch of T tokens, whose sequence i holds rows
// [offsets[i], offsets[i+1]). Padded slots: group g's sequence r, position t is slot
// first_slot + r * length + t.
struct PaddedGroups {
  struct Group {
    int64_t first_slot = 0;  // the group's first padded slot
    int64_t first_rank = 0;  // its first sequence's place in `order`
    int64_t size = 0;        // sequences
    int64_t length = 0;      // padded length
    at::Tensor key_mask;  // bool [size, 1, 1, length], true on real keys; undefined when unpadded
  };
  std::vector<Group> groups;
  at::Tensor gather;  // int64 [slots]: the row each slot reads (a pad reads its sequence's last)
  at::Tensor token_slot;  // int64 [T]: the slot that holds each row
  at::Tensor order;       // int64 [m]: the non-empty sequences, group by group
  int64_t sequences = 0;  // n, empty ones included

  bool empty() const { return !gather.defined(); }
};

// offsets: n + 1 non-decreasing host offsets from 0 (AttentionContext::host_offsets). The tensors
// are made on `device`.
PaddedGroups BuildPaddedGroups(const std::vector<int64_t>& offsets, const at::Device& device,
                               int64_t call_pairs = kGroupCallPairs);

}  // namespace padless::models

#endif  // PADLESS_MODELS_ATTENTION_GROUPS_H_
