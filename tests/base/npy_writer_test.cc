// The .npy writer: numpy.save's exact header bytes, the 64-byte alignment of the data for any
// shape, float32 values bit for bit, the empty array, and no file left behind by any failure.
// Where numpy is importable, numpy.load reads the file back and numpy.save of the same array gives
// the same bytes (skipped otherwise: the golden header test covers the layout without it).
#include "padless/base/npy_writer.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "scratch_dir.h"

namespace padless::base {
namespace {

std::unique_ptr<NpyWriter> OpenOrDie(const std::string& path, int64_t rows, int64_t cols) {
  absl::StatusOr<std::unique_ptr<NpyWriter>> w = NpyWriter::Open(path, rows, cols);
  EXPECT_TRUE(w.ok()) << w.status();
  return w.ok() ? *std::move(w) : nullptr;
}

// The header length field (bytes 8-9, little-endian) plus the 10-byte preamble.
size_t DataOffset(const std::string& bytes) {
  return 10 + static_cast<uint8_t>(bytes[8]) + 256 * static_cast<uint8_t>(bytes[9]);
}

std::vector<float> FloatsAt(const std::string& bytes, size_t offset) {
  std::vector<float> values((bytes.size() - offset) / sizeof(float));
  std::memcpy(values.data(), bytes.data() + offset, values.size() * sizeof(float));
  return values;
}

TEST(NpyWriterTest, HeaderIsNumpySavesByteForByte) {
  // numpy 2.4: io = BytesIO(); numpy.save(io, numpy.zeros((3, 4), '<f4')); io.getvalue()[:128]
  const std::string expected = std::string("\x93NUMPY\x01\x00v\x00", 10) +
                               "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }" +
                               std::string(58, ' ') + "\n";
  ASSERT_EQ(expected.size(), 128u);
  EXPECT_EQ(NpyFloat32Header(3, 4), expected);
  // A first axis of more digits takes the room numpy keeps for it: same length.
  const std::string wide = NpyFloat32Header(12345, 384);
  EXPECT_EQ(wide.size(), 128u);
  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (12345, 384), }";
  EXPECT_EQ(wide.substr(10, dict.size()), dict);
}

TEST(NpyWriterTest, DataStartsAtAMultipleOf64ForEveryShape) {
  const std::vector<int64_t> sizes = {
      0, 1, 9, 10, 99, 1000000, 99999999999, std::numeric_limits<int64_t>::max()};
  for (int64_t rows : sizes) {
    for (int64_t cols : sizes) {
      const std::string header = NpyFloat32Header(rows, cols);
      SCOPED_TRACE(header);
      EXPECT_EQ(header.size() % 64, 0u);
      EXPECT_EQ(DataOffset(header), header.size());
      EXPECT_EQ(header.back(), '\n');
      EXPECT_NE(header.find(absl::StrCat("'shape': (", rows, ", ", cols, "), }")),
                std::string::npos);
      // Only spaces between the dict and the newline.
      const size_t dict_end = header.find('}') + 1;
      EXPECT_EQ(header.find_first_not_of(' ', dict_end), header.size() - 1);
    }
  }
}

TEST(NpyWriterTest, RowsRoundTripBitForBit) {
  ScratchDir dir("npy_round_trip");
  const std::string path = dir.file("a.npy");
  WriteFileAtomically(path, "poison").IgnoreError();
  const std::vector<std::vector<float>> rows = {
      {1.5f, -0.0f, std::numeric_limits<float>::infinity(), 3.0e-39f},  // a denormal
      {std::nanf(""), -2.25f, std::numeric_limits<float>::max(), 1e-7f},
      {0.1f, 0.2f, 0.3f, -1e30f}};
  std::unique_ptr<NpyWriter> w = OpenOrDie(path, 3, 4);
  ASSERT_NE(w, nullptr);
  for (const std::vector<float>& row : rows) ASSERT_TRUE(w->AppendRow(row).ok());
  EXPECT_EQ(w->rows_written(), 3);
  EXPECT_EQ(ReadAll(path), "poison");  // nothing in place before Commit
  ASSERT_TRUE(w->Commit().ok());
  const std::string bytes = ReadAll(path);
  ASSERT_EQ(bytes.size(), 128u + 3 * 4 * sizeof(float));
  EXPECT_EQ(bytes.substr(0, 128), NpyFloat32Header(3, 4));
  const std::vector<float> values = FloatsAt(bytes, 128);
  for (size_t r = 0; r < rows.size(); ++r) {
    for (size_t c = 0; c < 4; ++c) {
      EXPECT_EQ(std::memcmp(&values[r * 4 + c], &rows[r][c], sizeof(float)), 0) << r << "," << c;
    }
  }
  EXPECT_EQ(dir.List().size(), 1u);  // no temporary file left
}

TEST(NpyWriterTest, ManyRowsCrossTheFlushSize) {
  ScratchDir dir("npy_many");
  const std::string path = dir.file("many.npy");
  constexpr int64_t kRows = 3000, kCols = 384;  // 4.6 MB: several flushes
  std::unique_ptr<NpyWriter> w = OpenOrDie(path, kRows, kCols);
  ASSERT_NE(w, nullptr);
  std::vector<float> row(kCols);
  for (int64_t r = 0; r < kRows; ++r) {
    for (int64_t c = 0; c < kCols; ++c) row[c] = static_cast<float>(r * kCols + c);
    ASSERT_TRUE(w->AppendRow(row).ok());
  }
  ASSERT_TRUE(w->Commit().ok());
  const std::string bytes = ReadAll(path);
  ASSERT_EQ(bytes.size(), 128u + kRows * kCols * sizeof(float));
  const std::vector<float> values = FloatsAt(bytes, 128);
  for (size_t i = 0; i < values.size(); i += 997) EXPECT_EQ(values[i], static_cast<float>(i));
  EXPECT_EQ(values.back(), static_cast<float>(kRows * kCols - 1));
}

TEST(NpyWriterTest, ZeroRowsIsTheHeaderAlone) {
  ScratchDir dir("npy_empty");
  const std::string path = dir.file("empty.npy");
  std::unique_ptr<NpyWriter> w = OpenOrDie(path, 0, 16);
  ASSERT_NE(w, nullptr);
  ASSERT_TRUE(w->Commit().ok());
  EXPECT_EQ(ReadAll(path), NpyFloat32Header(0, 16));
}

TEST(NpyWriterTest, WrongRowWidthFailsAndLeavesNoFile) {
  ScratchDir dir("npy_width");
  const std::string path = dir.file("w.npy");
  std::unique_ptr<NpyWriter> w = OpenOrDie(path, 2, 4);
  ASSERT_NE(w, nullptr);
  ASSERT_TRUE(w->AppendRow(std::vector<float>{1, 2, 3, 4}).ok());
  const absl::Status s = w->AppendRow(std::vector<float>{1, 2, 3});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("row 1 has 3 values; the array has 4 columns"), std::string::npos)
      << s;
  EXPECT_NE(s.message().find(path), std::string::npos) << s;
  // The error sticks: a good row and Commit fail the same way, and nothing is written.
  EXPECT_EQ(w->AppendRow(std::vector<float>{1, 2, 3, 4}), s);
  EXPECT_EQ(w->Commit(), s);
  EXPECT_FALSE(Exists(path));
  EXPECT_TRUE(dir.List().empty());
}

TEST(NpyWriterTest, WrongRowCountFailsAndKeepsTheOldFile) {
  ScratchDir dir("npy_count");
  const std::string path = dir.file("c.npy");
  ASSERT_TRUE(WriteFileAtomically(path, "old").ok());
  {
    std::unique_ptr<NpyWriter> w = OpenOrDie(path, 2, 1);
    ASSERT_NE(w, nullptr);
    ASSERT_TRUE(w->AppendRow(std::vector<float>{1}).ok());
    const absl::Status s = w->Commit();
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
    EXPECT_NE(s.message().find("the array has 2 rows, but 1 were appended"), std::string::npos)
        << s;
  }
  {
    std::unique_ptr<NpyWriter> w = OpenOrDie(path, 1, 1);
    ASSERT_NE(w, nullptr);
    ASSERT_TRUE(w->AppendRow(std::vector<float>{1}).ok());
    EXPECT_EQ(w->AppendRow(std::vector<float>{2}).code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_FALSE(w->Commit().ok());
  }
  {
    std::unique_ptr<NpyWriter> w = OpenOrDie(path, 1, 1);  // destroyed without Commit
    ASSERT_NE(w, nullptr);
    ASSERT_TRUE(w->AppendRow(std::vector<float>{1}).ok());
  }
  EXPECT_EQ(ReadAll(path), "old");
  EXPECT_EQ(dir.List().size(), 1u);
}

TEST(NpyWriterTest, BadSizesAndMissingDirectoryAreErrors) {
  ScratchDir dir("npy_bad");
  EXPECT_EQ(NpyWriter::Open(dir.file("a.npy"), -1, 4).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(NpyWriter::Open(dir.file("a.npy"), 4, -1).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(NpyWriter::Open(dir.file("no_such_dir/a.npy"), 1, 1).status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_TRUE(dir.List().empty());
}

TEST(NpyWriterTest, NumpyLoadsItAndSavesTheSameBytes) {
  if (std::system("python3 -c 'import numpy' >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "numpy is not importable; HeaderIsNumpySavesByteForByte covers the layout";
  }
  ScratchDir dir("npy_numpy");
  const std::string path = dir.file("n.npy");
  std::unique_ptr<NpyWriter> w = OpenOrDie(path, 5, 3);
  ASSERT_NE(w, nullptr);
  for (int r = 0; r < 5; ++r) {
    ASSERT_TRUE(w->AppendRow(std::vector<float>{r * 1.5f, -r / 3.0f, r * 1e-3f}).ok());
  }
  ASSERT_TRUE(w->Commit().ok());
  // Exits 3 on a wrong array, 4 when numpy.save writes other bytes (an old numpy without the
  // growth spaces would: GROWTH_AXIS_MAX_DIGITS arrived in 1.23, then the byte check is skipped).
  const std::string script = absl::StrCat(
      "import io, sys, numpy as np\n"
      "a = np.load(sys.argv[1])\n"
      "r = np.arange(5, dtype=np.float32)[:, None]\n"
      "want = np.hstack([r * np.float32(1.5), -r / np.float32(3.0), r * np.float32(1e-3)])\n"
      "if a.dtype != np.dtype('<f4') or a.shape != (5, 3) or not a.flags.c_contiguous: "
      "sys.exit(3)\n"
      "if not np.allclose(a, want, rtol=1e-6, atol=0): sys.exit(3)\n"
      "b = io.BytesIO(); np.save(b, a)\n"
      "import numpy.lib.format as f\n"
      "if hasattr(f, 'GROWTH_AXIS_MAX_DIGITS') and b.getvalue() != open(sys.argv[1], 'rb').read(): "
      "sys.exit(4)\n");
  const std::string script_path = dir.file("check.py");
  ASSERT_TRUE(WriteFileAtomically(script_path, script).ok());
  const int status = std::system(absl::StrCat("python3 ", script_path, " ", path).c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "3: numpy.load read another array; 4: not numpy.save's bytes";
}

}  // namespace
}  // namespace padless::base
