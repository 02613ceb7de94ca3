// Fuzzes the safetensors reader (models/safetensors.h) with whole files: the 8-byte header
// length, the JSON header and the data section all come from the fuzzer.
// Invariants: errors name the file; every accepted entry lies inside the data section with a
// span equal to shape x element size; every float tensor reads (as a view and as a copy, equal
// to each other) and writes back to a file that reads the same.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "fuzz_util.h"
#include "padless/model_files/safetensors.h"

namespace padless::model_files {
namespace {

// The bytes of `t` (bitwise comparison: NaN payloads compare unequal as floats).
at::Tensor Bytes(const at::Tensor& t) { return t.reshape({-1}).view(at::kByte); }

void CheckFloatTensors(const SafetensorsFile& file) {
  std::vector<std::pair<std::string, at::Tensor>> floats;
  for (const auto& [name, e] : file.entries()) {
    absl::StatusOr<at::Tensor> view = file.Tensor(name);
    if (!view.ok()) {
      FUZZ_CHECK(absl::StrContains(view.status().message(), name),
                 std::string(view.status().message()));
      continue;
    }
    FUZZ_CHECK(view->sizes().vec() == e.shape, absl::StrCat("tensor ", name, " shape"));
    FUZZ_CHECK(static_cast<uint64_t>(view->nbytes()) == e.end - e.begin, name);
    absl::StatusOr<at::Tensor> copy = file.Tensor(name, /*copy=*/true);
    FUZZ_CHECK(copy.ok(), std::string(copy.status().message()));
    FUZZ_CHECK(Bytes(*view).equal(Bytes(*copy)),
               absl::StrCat("view and copy of ", name, " differ"));
    floats.emplace_back(name, *copy);
  }
  const std::string again = fuzz::ScratchDir() + "/again.safetensors";
  absl::Status s = WriteSafetensors(again, floats, file.metadata());
  FUZZ_CHECK(s.ok(), std::string(s.message()));
  absl::StatusOr<SafetensorsFile> round = SafetensorsFile::Open(again);
  FUZZ_CHECK(round.ok(), std::string(round.status().message()));
  FUZZ_CHECK(round->metadata() == file.metadata(), "metadata does not round-trip");
  for (const auto& [name, t] : floats) {
    absl::StatusOr<at::Tensor> back = round->Tensor(name);
    FUZZ_CHECK(back.ok() && Bytes(*back).equal(Bytes(t)),
               absl::StrCat("tensor ", name, " does not round-trip"));
  }
}

}  // namespace
}  // namespace padless::model_files

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  at::set_num_threads(1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace padless::model_files;  // NOLINT: a fuzz entry point
  const std::string path = padless::fuzz::WriteScratchFile(
      "in.safetensors", absl::string_view(reinterpret_cast<const char*>(data), size));
  absl::StatusOr<SafetensorsFile> file = SafetensorsFile::Open(path);
  if (!file.ok()) {
    FUZZ_CHECK(absl::StrContains(file.status().message(), path),
               std::string(file.status().message()));
    return 0;
  }
  const uint64_t data_size = size - 8 -
                             (size >= 8 ? data[0] | (uint64_t{data[1]} << 8) |
                                              (uint64_t{data[2]} << 16) | (uint64_t{data[3]} << 24)
                                        : 0);
  for (const auto& [name, e] : file->entries()) {
    FUZZ_CHECK(e.begin <= e.end && e.end <= data_size,
               absl::StrCat("entry ", name, " out of range"));
  }
  CheckFloatTensors(*file);
  return 0;
}
