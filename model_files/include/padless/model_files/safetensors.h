// safetensors files (https://github.com/huggingface/safetensors): an 8-byte little-endian header
// length, a JSON header {name: {dtype, shape, data_offsets}, "__metadata__": {str: str}}, then
// the tensor bytes. Loading runs no pickle and trusts no length: the header length is bounded
// (kMaxSafetensorsHeader) and checked against the file size, and every tensor's byte span is
// checked to lie inside the data section, to overlap no other tensor and to equal
// shape x element size, before any tensor is handed out.
//
// The reader maps the file (mmap, private copy-on-write: no read of the whole file, and writing
// into a returned view never touches the file). Tensors come out as views over the mapping that
// keep it alive, or as copies. The header may name every dtype of the format (so that, e.g., an
// I64 `position_ids` buffer of a Hugging Face checkpoint can be skipped); Tensor() hands out F32,
// F16 and BF16 only. Errors name the file and the tensor.
#ifndef PADLESS_MODEL_FILES_SAFETENSORS_H_
#define PADLESS_MODEL_FILES_SAFETENSORS_H_

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace padless::model_files {

// Upper bound on the JSON header (the format's own reader uses 100 MB).
inline constexpr uint64_t kMaxSafetensorsHeader = 100ull << 20;

class SafetensorsFile {
 public:
  struct Entry {
    std::string dtype;  // as the file names it: "F32", "BF16", "I64", ...
    std::vector<int64_t> shape;
    uint64_t begin = 0, end = 0;  // byte offsets into the data section
  };

  // Maps and validates `path`. NotFound for a missing file; InvalidArgument (naming the file and,
  // where there is one, the tensor) for everything malformed.
  static absl::StatusOr<SafetensorsFile> Open(const std::string& path);

  const std::string& path() const { return path_; }
  const std::map<std::string, Entry>& entries() const { return entries_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  bool Contains(const std::string& name) const { return entries_.count(name) > 0; }

  // The tensor `name` on the CPU in its stored dtype: a view over the mapping (kept alive by the
  // tensor), or a copy with `copy` (also when the bytes are not aligned for the dtype).
  absl::StatusOr<at::Tensor> Tensor(const std::string& name, bool copy = false) const;

 private:
  struct Mapping;
  std::string path_;
  std::shared_ptr<Mapping> mapping_;
  uint64_t data_start_ = 0;  // file offset of the data section
  std::map<std::string, Entry> entries_;
  std::map<std::string, std::string> metadata_;
};

// Writes `tensors` (F32, F16 or BF16; any device, any strides) in the given order, with the
// optional metadata, atomically (base::AtomicFileWriter). Duplicate names are an error.
absl::Status WriteSafetensors(const std::string& path,
                              const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                              const std::map<std::string, std::string>& metadata = {});

}  // namespace padless::model_files

#endif  // PADLESS_MODEL_FILES_SAFETENSORS_H_
