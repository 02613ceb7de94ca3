// Writes a float32 matrix as a NumPy .npy file (format version 1.0) that numpy.load and
// torch.from_numpy read as they are: little-endian '<f4', C order, shape (rows, cols). Rows are
// appended as they are computed (`padless embed` streams embeddings of a corpus into one), so the
// matrix never has to be held whole; the number of rows is given up front and checked at Commit.
//
// The header is byte for byte the one numpy.save (NumPy 1.23 and later) writes: the magic
// "\x93NUMPY", version 1.0, a little-endian uint16 header length, then the dict
// "{'descr': '<f4', 'fortran_order': False, 'shape': (rows, cols), }", numpy's spare spaces for
// growing the first axis in place, spaces up to a '\n' that ends the header where the data starts
// at a multiple of 64 bytes (aligned for memory-mapped reads).
//
// Atomic: the bytes go through an AtomicFileWriter, so a failed or abandoned write (an error, a
// wrong row count, a writer destroyed before Commit) leaves no file, or the earlier one, at the
// path: never a half-written array that a reader would trust.
#ifndef PADLESS_BASE_NPY_WRITER_H_
#define PADLESS_BASE_NPY_WRITER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "padless/base/atomic_file_writer.h"

namespace padless::base {

// The .npy v1.0 header of a float32 C-order [rows, cols] array, as numpy.save writes it; its
// length is a multiple of 64. Both sizes must be >= 0.
std::string NpyFloat32Header(int64_t rows, int64_t cols);

class NpyWriter {
 public:
  // Opens `path` (through AtomicFileWriter: its errors) for `rows` rows of `cols` floats and
  // writes the header. InvalidArgument for a negative size.
  static absl::StatusOr<std::unique_ptr<NpyWriter>> Open(const std::string& path, int64_t rows,
                                                         int64_t cols);
  ~NpyWriter();  // without a successful Commit(): no file at the path (the old one, if any)
  NpyWriter(const NpyWriter&) = delete;
  NpyWriter& operator=(const NpyWriter&) = delete;

  // Appends one row of exactly cols() values. InvalidArgument for another width, FailedPrecondition
  // past rows() rows (both naming the path); write errors as AtomicFileWriter gives them. The first
  // error sticks: later calls and Commit() return it, and the file is not written.
  absl::Status AppendRow(absl::Span<const float> row);
  // Writes out the buffered rows and renames the file into place. FailedPrecondition (and no
  // file) unless exactly rows() rows were appended.
  absl::Status Commit();

  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  int64_t rows_written() const { return rows_written_; }

 private:
  NpyWriter(std::string path, std::unique_ptr<AtomicFileWriter> file, int64_t rows, int64_t cols);
  absl::Status Flush();
  absl::Status Fail(absl::Status status);

  std::string path_;  // for messages
  std::unique_ptr<AtomicFileWriter> file_;
  int64_t rows_ = 0;
  int64_t cols_ = 0;
  int64_t rows_written_ = 0;
  std::vector<char> buffer_;  // little-endian row bytes not yet handed to `file_`
  absl::Status status_;
};

}  // namespace padless::base

#endif  // PADLESS_BASE_NPY_WRITER_H_
