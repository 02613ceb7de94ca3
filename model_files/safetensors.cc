#include "padless/model_files/safetensors.h"

#include <ATen/ATen.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "padless/base/atomic_file_writer.h"

namespace padless::model_files {

namespace {

using nlohmann::json;

// Element sizes of every dtype the format defines; the header may name any of them.
int64_t DtypeSize(const std::string& dtype) {
  static const std::map<std::string, int64_t> kSizes = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1},
      {"I16", 2},  {"U16", 2}, {"F16", 2}, {"BF16", 2},    {"I32", 4},
      {"U32", 4},  {"F32", 4}, {"F64", 8}, {"I64", 8},     {"U64", 8}};
  auto it = kSizes.find(dtype);
  return it == kSizes.end() ? 0 : it->second;
}

// The dtypes Tensor() hands out (and the writer takes).
bool ToScalarType(const std::string& dtype, at::ScalarType* out) {
  if (dtype == "F32")
    *out = at::kFloat;
  else if (dtype == "F16")
    *out = at::kHalf;
  else if (dtype == "BF16")
    *out = at::kBFloat16;
  else
    return false;
  return true;
}

absl::Status Bad(const std::string& path, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": not a valid safetensors file: ", what));
}

// One tensor's header entry, checked against the data section of `data_size` bytes.
absl::StatusOr<SafetensorsFile::Entry> ParseEntry(const std::string& path, const std::string& name,
                                                  const json& j, uint64_t data_size) {
  const std::string where = absl::StrCat("tensor '", name, "': ");
  if (!j.is_object() || !j.contains("dtype") || !j.contains("shape") ||
      !j.contains("data_offsets")) {
    return Bad(path, where + "needs an object with dtype, shape and data_offsets");
  }
  SafetensorsFile::Entry e;
  if (!j["dtype"].is_string()) return Bad(path, where + "dtype is not a string");
  e.dtype = j["dtype"].get<std::string>();
  const int64_t element = DtypeSize(e.dtype);
  if (element == 0) return Bad(path, where + "unknown dtype '" + e.dtype + "'");
  if (!j["shape"].is_array()) return Bad(path, where + "shape is not an array");
  uint64_t bytes = static_cast<uint64_t>(element);
  for (const json& d : j["shape"]) {
    if (!d.is_number_unsigned()) return Bad(path, where + "shape holds a non-integer or negative");
    const uint64_t n = d.get<uint64_t>();
    if (n > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
        (n != 0 && bytes > std::numeric_limits<uint64_t>::max() / n)) {
      return Bad(path, where + "shape's byte size overflows 64 bits");
    }
    bytes *= n;
    e.shape.push_back(static_cast<int64_t>(n));
  }
  const json& off = j["data_offsets"];
  if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() ||
      !off[1].is_number_unsigned()) {
    return Bad(path, where + "data_offsets must be two non-negative integers");
  }
  e.begin = off[0].get<uint64_t>();
  e.end = off[1].get<uint64_t>();
  if (e.begin > e.end || e.end > data_size) {
    return Bad(path, absl::StrCat(where, "data_offsets [", e.begin, ", ", e.end,
                                  "] lie outside the data section of ", data_size, " bytes"));
  }
  if (e.end - e.begin != bytes) {
    return Bad(path, absl::StrCat(where, "shape x ", e.dtype, " is ", bytes,
                                  " bytes, data_offsets span ", e.end - e.begin));
  }
  return e;
}

absl::Status CheckNoOverlap(const std::string& path,
                            const std::map<std::string, SafetensorsFile::Entry>& entries) {
  std::vector<std::pair<uint64_t, const std::string*>> starts;
  for (const auto& [name, e] : entries) {
    if (e.end > e.begin) starts.emplace_back(e.begin, &name);
  }
  std::sort(starts.begin(), starts.end());
  for (size_t i = 1; i < starts.size(); ++i) {
    const SafetensorsFile::Entry& prev = entries.at(*starts[i - 1].second);
    if (prev.end > starts[i].first) {
      return Bad(path, absl::StrCat("tensors '", *starts[i - 1].second, "' and '",
                                    *starts[i].second, "' overlap"));
    }
  }
  return absl::OkStatus();
}

uint64_t ReadLittleEndian64(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

struct SafetensorsFile::Mapping {
  void* addr = nullptr;
  size_t size = 0;
  ~Mapping() {
    if (addr != nullptr) ::munmap(addr, size);
  }
  const unsigned char* bytes() const { return static_cast<const unsigned char*>(addr); }
};

absl::StatusOr<SafetensorsFile> SafetensorsFile::Open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    const std::string why = std::strerror(error);
    return error == ENOENT ? absl::NotFoundError(absl::StrCat(path, ": ", why))
                           : absl::InvalidArgumentError(absl::StrCat(path, ": cannot open: ", why));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Bad(path, "not a regular file");
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size < 8) {
    ::close(fd);
    return Bad(path, absl::StrCat("only ", size, " bytes, shorter than the 8-byte header length"));
  }
  SafetensorsFile file;
  file.path_ = path;
  file.mapping_ = std::make_shared<Mapping>();
  void* addr = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (addr == MAP_FAILED) return Bad(path, absl::StrCat("cannot map: ", std::strerror(errno)));
  file.mapping_->addr = addr;
  file.mapping_->size = size;
  const uint64_t header = ReadLittleEndian64(file.mapping_->bytes());
  if (header > kMaxSafetensorsHeader) {
    return Bad(path, absl::StrCat("header length ", header, " exceeds the limit of ",
                                  kMaxSafetensorsHeader, " bytes"));
  }
  if (header > size - 8) {
    return Bad(path, absl::StrCat("header length ", header, " runs past the end of the file (",
                                  size, " bytes): truncated?"));
  }
  const char* text = reinterpret_cast<const char*>(file.mapping_->bytes() + 8);
  const json j = json::parse(text, text + header, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Bad(path, "the header is not a JSON object");
  const uint64_t data_size = size - 8 - header;
  file.data_start_ = 8 + header;
  for (const auto& [name, value] : j.items()) {
    if (name == "__metadata__") {
      if (!value.is_object()) return Bad(path, "__metadata__ is not an object");
      for (const auto& [key, v] : value.items()) {
        if (!v.is_string()) return Bad(path, "__metadata__ '" + key + "' is not a string");
        file.metadata_[key] = v.get<std::string>();
      }
      continue;
    }
    absl::StatusOr<Entry> e = ParseEntry(path, name, value, data_size);
    if (!e.ok()) return e.status();
    file.entries_[name] = std::move(*e);
  }
  absl::Status s = CheckNoOverlap(path, file.entries_);
  if (!s.ok()) return s;
  return file;
}

absl::StatusOr<at::Tensor> SafetensorsFile::Tensor(const std::string& name, bool copy) const {
  auto it = entries_.find(name);
  if (it == entries_.end()) {
    return absl::NotFoundError(absl::StrCat(path_, ": tensor '", name, "' is missing"));
  }
  const Entry& e = it->second;
  at::ScalarType type;
  if (!ToScalarType(e.dtype, &type)) {
    return absl::InvalidArgumentError(absl::StrCat(path_, ": tensor '", name, "' has dtype ",
                                                   e.dtype, "; only F32, F16 and BF16 are read"));
  }
  unsigned char* data = static_cast<unsigned char*>(mapping_->addr) + data_start_ + e.begin;
  const bool aligned = reinterpret_cast<uintptr_t>(data) % at::elementSize(type) == 0;
  if (copy || !aligned) {
    at::Tensor out = at::empty(e.shape, at::TensorOptions().dtype(type));
    if (e.end > e.begin) std::memcpy(out.data_ptr(), data, e.end - e.begin);
    return out;
  }
  std::shared_ptr<Mapping> keep = mapping_;
  return at::from_blob(
      data, e.shape, [keep](void*) {}, at::TensorOptions().dtype(type));
}

absl::Status WriteSafetensors(const std::string& path,
                              const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                              const std::map<std::string, std::string>& metadata) {
  json header = json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::vector<at::Tensor> contiguous;
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    const char* dtype = t.scalar_type() == at::kFloat      ? "F32"
                        : t.scalar_type() == at::kHalf     ? "F16"
                        : t.scalar_type() == at::kBFloat16 ? "BF16"
                                                           : nullptr;
    if (dtype == nullptr || name == "__metadata__" || header.contains(name)) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": cannot write tensor '", name, "' (", dtype == nullptr ? "dtype " : "",
          dtype == nullptr ? c10::toString(t.scalar_type()) : "duplicate or reserved name", ")"));
    }
    contiguous.push_back(t.detach().to(at::kCPU).contiguous());
    const uint64_t bytes = contiguous.back().nbytes();
    header[name] = {
        {"dtype", dtype}, {"shape", t.sizes().vec()}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // the format pads the header to 8 bytes
  unsigned char length[8];
  for (int i = 0; i < 8; ++i) length[i] = static_cast<unsigned char>(text.size() >> (8 * i));
  absl::StatusOr<std::unique_ptr<base::AtomicFileWriter>> out =
      base::AtomicFileWriter::Open(path);
  if (!out.ok()) return out.status();
  (void)(*out)->Append(length, 8);
  (void)(*out)->Append(text.data(), text.size());
  for (const at::Tensor& t : contiguous) (void)(*out)->Append(t.data_ptr(), t.nbytes());
  return (*out)->Commit();
}

}  // namespace padless::model_files
