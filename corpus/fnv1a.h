// Private: FNV-1a 64, a stable hash for cache checksums and fingerprints. Stable across runs,
// builds and machines, unlike absl::Hash, which is what an on-disk cache needs.
#ifndef PADLESS_CORPUS_FNV1A_H_
#define PADLESS_CORPUS_FNV1A_H_

#include <cstddef>
#include <cstdint>

namespace padless::corpus::internal {

class Fnv1a {
 public:
  void Update(const void* data, size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    uint64_t h = hash_;
    for (size_t i = 0; i < n; ++i) {
      h ^= p[i];
      h *= 1099511628211ull;
    }
    hash_ = h;
  }
  template <typename T>
  void UpdateValue(const T& value) {
    Update(&value, sizeof(value));
  }
  uint64_t value() const { return hash_; }

 private:
  uint64_t hash_ = 1469598103934665603ull;
};

}  // namespace padless::corpus::internal

#endif  // PADLESS_CORPUS_FNV1A_H_
