#include "rank_rng.h"

#include <ATen/ATen.h>

#include <cstdint>
#include <cstring>

namespace padless::train::internal {
namespace {

int64_t Words(const at::Tensor& bytes) { return bytes.defined() ? (bytes.numel() + 7) / 8 : 0; }

// `bytes` (uint8) into `out` from word `at` on.
void Pack(const at::Tensor& bytes, std::vector<int64_t>& out, int64_t at) {
  if (!bytes.defined()) return;
  const at::Tensor b = bytes.contiguous();
  std::memcpy(out.data() + at, b.data_ptr<uint8_t>(), b.numel());
}

at::Tensor Unpack(const std::vector<int64_t>& in, int64_t at, const at::Tensor& like) {
  if (!like.defined()) return at::Tensor();
  at::Tensor bytes = at::empty_like(like, at::TensorOptions().dtype(at::kByte));
  std::memcpy(bytes.data_ptr<uint8_t>(), in.data() + at, like.numel());
  return bytes;
}

}  // namespace

absl::StatusOr<std::vector<models::internal::RngState>> GatherRankRng(const distributed::DataParallel& dp,
                                                    const c10::Device& device) {
  const models::internal::RngState mine = models::internal::CaptureRng(device);
  if (!dp.enabled()) return std::vector<models::internal::RngState>{mine};
  // Each rank writes its slot of a zeroed vector; the sum is then every slot (integers, exact).
  // The states have the same size on every rank (the same generators).
  const int64_t cpu_words = Words(mine.cpu), slot = cpu_words + Words(mine.cuda);
  std::vector<int64_t> all(slot * dp.world_size(), 0);
  Pack(mine.cpu, all, slot * dp.rank());
  Pack(mine.cuda, all, slot * dp.rank() + cpu_words);
  absl::StatusOr<std::vector<int64_t>> summed = dp.group->AllReduceSumHost(std::move(all));
  if (!summed.ok()) return summed.status();
  std::vector<models::internal::RngState> out(dp.world_size());
  for (int r = 0; r < dp.world_size(); ++r) {
    out[r].cpu = Unpack(*summed, slot * r, mine.cpu);
    out[r].cuda = Unpack(*summed, slot * r + cpu_words, mine.cuda);
  }
  return out;
}

}  // namespace padless::train::internal
