#include "padless/base/npy_writer.h"

#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"

namespace padless::base {
namespace {

constexpr char kMagic[] = "\x93NUMPY";  // 6 bytes, then the version 1.0
constexpr size_t kPreambleSize = 10;    // magic, version, the uint16 header length
constexpr size_t kAlignment = 64;       // numpy's ARRAY_ALIGN
// numpy's GROWTH_AXIS_MAX_DIGITS: room kept after the dict so that the first axis can grow to any
// int64 in place; numpy.save writes it, so the same header is written here.
constexpr size_t kGrowthDigits = 21;
// Rows are handed to the file in pieces of about this size, not one write(2) per row.
constexpr size_t kFlushBytes = size_t{1} << 20;

// Appends `values` to `out` as little-endian IEEE float32 bytes, whatever the host's byte order.
void AppendLittleEndian(absl::Span<const float> values, std::vector<char>& out) {
  const size_t at = out.size();
  out.resize(at + values.size() * sizeof(float));
  char* dst = out.data() + at;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  for (float v : values) {
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    for (int byte = 0; byte < 4; ++byte) *dst++ = static_cast<char>((bits >> (8 * byte)) & 0xff);
  }
#else
  std::memcpy(dst, values.data(), values.size() * sizeof(float));
#endif
}

}  // namespace

std::string NpyFloat32Header(int64_t rows, int64_t cols) {
  const std::string rows_text = absl::StrCat(rows);
  std::string dict = absl::StrCat("{'descr': '<f4', 'fortran_order': False, 'shape': (", rows_text,
                                  ", ", cols, "), }");
  if (rows_text.size() < kGrowthDigits) dict.append(kGrowthDigits - rows_text.size(), ' ');
  // As numpy's _wrap_header: the '\n' counts in the header, and a header that would end exactly on
  // the boundary still gets a full 64 spaces.
  const size_t used = kPreambleSize + dict.size() + 1;
  const size_t padding = kAlignment - used % kAlignment;
  const size_t header_length = dict.size() + padding + 1;
  std::string header(kMagic, 6);
  header += '\x01';  // major version
  header += '\x00';  // minor version
  header += static_cast<char>(header_length & 0xff);
  header += static_cast<char>((header_length >> 8) & 0xff);
  header += dict;
  header.append(padding, ' ');
  header += '\n';
  return header;
}

absl::StatusOr<std::unique_ptr<NpyWriter>> NpyWriter::Open(const std::string& path, int64_t rows,
                                                           int64_t cols) {
  if (rows < 0 || cols < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": an .npy array needs sizes >= 0, got [", rows, ", ", cols, "]"));
  }
  absl::StatusOr<std::unique_ptr<AtomicFileWriter>> file = AtomicFileWriter::Open(path);
  if (!file.ok()) return file.status();
  std::unique_ptr<NpyWriter> writer(new NpyWriter(path, std::move(*file), rows, cols));
  const std::string header = NpyFloat32Header(rows, cols);
  writer->buffer_.assign(header.begin(), header.end());
  return writer;
}

NpyWriter::NpyWriter(std::string path, std::unique_ptr<AtomicFileWriter> file, int64_t rows,
                     int64_t cols)
    : path_(std::move(path)), file_(std::move(file)), rows_(rows), cols_(cols) {
  buffer_.reserve(kFlushBytes);
}

// The AtomicFileWriter's destructor removes the temporary file when Commit() did not succeed.
NpyWriter::~NpyWriter() = default;

absl::Status NpyWriter::Fail(absl::Status status) {
  status_ = std::move(status);
  file_.reset();  // the temporary file goes now, not when the writer does
  return status_;
}

absl::Status NpyWriter::AppendRow(absl::Span<const float> row) {
  if (!status_.ok()) return status_;
  if (static_cast<int64_t>(row.size()) != cols_) {
    return Fail(
        absl::InvalidArgumentError(absl::StrCat(path_, ": row ", rows_written_, " has ", row.size(),
                                                " values; the array has ", cols_, " columns")));
  }
  if (rows_written_ >= rows_) {
    return Fail(absl::FailedPreconditionError(
        absl::StrCat(path_, ": the array has ", rows_, " rows; one more was appended")));
  }
  AppendLittleEndian(row, buffer_);
  ++rows_written_;
  return buffer_.size() >= kFlushBytes ? Flush() : absl::OkStatus();
}

absl::Status NpyWriter::Flush() {
  if (absl::Status s = file_->Append(buffer_.data(), buffer_.size()); !s.ok()) return Fail(s);
  buffer_.clear();
  return absl::OkStatus();
}

absl::Status NpyWriter::Commit() {
  if (!status_.ok()) return status_;
  if (file_ == nullptr)
    return absl::FailedPreconditionError(absl::StrCat(path_, ": committed twice"));
  if (rows_written_ != rows_) {
    return Fail(absl::FailedPreconditionError(absl::StrCat(
        path_, ": the array has ", rows_, " rows, but ", rows_written_, " were appended")));
  }
  if (absl::Status s = Flush(); !s.ok()) return s;
  absl::Status committed = file_->Commit();
  file_.reset();
  if (!committed.ok()) status_ = committed;
  return committed;
}

}  // namespace padless::base
