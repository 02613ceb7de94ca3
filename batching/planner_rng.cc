#include "planner_rng.h"

namespace padless::batching::internal {

Rng StreamRng(uint64_t seed, int64_t epoch, uint64_t stream) {
  Rng mix(seed ^ (0xD1B54A32D192ED03ULL * (static_cast<uint64_t>(epoch) + 1)) ^
          (0x8CB92BA72F3D8DD7ULL * (stream + 1)));
  return Rng(mix.Next());
}

}  // namespace padless::batching::internal
