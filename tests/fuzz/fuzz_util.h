// Helpers shared by padless's libFuzzer targets: an invariant check that aborts (so both libFuzzer
// and the corpus-replay tests report it as a crash), a reader that turns the fuzzer's bytes into
// options and payload, and a per-process scratch directory for loaders that only take paths.
// LLVM's FuzzedDataProvider would do the byte reading, but it ships with clang only, and the
// replay build must compile with gcc on machines without clang.
#ifndef PADLESS_TESTS_FUZZ_FUZZ_UTIL_H_
#define PADLESS_TESTS_FUZZ_FUZZ_UTIL_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace padless::fuzz {

// Prints "file:line: invariant failed: what (detail)" and aborts.
[[noreturn]] void Fail(const char* file, int line, const char* what, const std::string& detail);

}  // namespace padless::fuzz

// FUZZ_CHECK(cond, detail): `detail` (a std::string expression) is only evaluated on failure.
#define FUZZ_CHECK(cond, detail)                                             \
  do {                                                                       \
    if (!(cond)) ::padless::fuzz::Fail(__FILE__, __LINE__, #cond, (detail)); \
  } while (0)

namespace padless::fuzz {

// Reads option values from the front of the input; what is left is the payload. Reading past the
// end yields zeros, so every input is valid and short inputs still reach the code under test.
class FuzzInput {
 public:
  FuzzInput(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  uint8_t Byte() { return pos_ < size_ ? data_[pos_++] : 0; }
  bool Bool() { return (Byte() & 1) != 0; }
  // Little-endian, `bytes` of them (1..8).
  uint64_t Bits(int bytes);
  // A value in [lo, hi] read from as many bytes as the range needs.
  int64_t Range(int64_t lo, int64_t hi);
  // One of n choices (n >= 1).
  int Pick(int n) { return static_cast<int>(Range(0, n - 1)); }

  // Up to `n` payload bytes.
  absl::string_view Take(size_t n);
  absl::string_view Rest() { return Take(size_ - pos_); }
  size_t remaining() const { return size_ - pos_; }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

// A directory created once per process (mkdtemp under $TMPDIR or /tmp) and removed at exit; the
// file loaders under test take paths, so inputs are written there.
const std::string& ScratchDir();
// Writes `content` to ScratchDir()/name and returns the path.
std::string WriteScratchFile(const std::string& name, absl::string_view content);
// The whole file, or "<unreadable>".
std::string ReadWholeFile(const std::string& path);

}  // namespace padless::fuzz

#endif  // PADLESS_TESTS_FUZZ_FUZZ_UTIL_H_
