// The safetensors reader and writer: a round trip of every supported dtype (views and copies),
// and a clear error naming the file and the tensor for every kind of damaged file.
#include "padless/model_files/safetensors.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace padless::model_files {
namespace {

class SafetensorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(::testing::TempDir(), "safetensors_test_", ::getpid());
    ::mkdir(dir_.c_str(), 0700);
  }
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }
  // A file of the 8-byte length `header_length`, the header text and `data` bytes of zeros.
  std::string WriteRaw(const std::string& name, uint64_t header_length, const std::string& header,
                       size_t data) {
    std::ofstream out(Path(name), std::ios::binary);
    for (int i = 0; i < 8; ++i) out.put(static_cast<char>(header_length >> (8 * i)));
    out << header << std::string(data, '\0');
    return Path(name);
  }
  std::string WriteHeader(const std::string& name, const std::string& header, size_t data) {
    return WriteRaw(name, header.size(), header, data);
  }
  // Opening `path` fails with a message that names the file and contains every `parts`.
  void ExpectError(const std::string& path, std::initializer_list<const char*> parts) {
    absl::StatusOr<SafetensorsFile> f = SafetensorsFile::Open(path);
    ASSERT_FALSE(f.ok()) << path;
    const std::string message(f.status().message());
    EXPECT_TRUE(absl::StrContains(message, path)) << message;
    for (const char* p : parts) EXPECT_TRUE(absl::StrContains(message, p)) << message;
  }
  std::string dir_;
};

TEST_F(SafetensorsTest, RoundTripsEveryFloatDtypeAsViewsAndCopies) {
  at::manual_seed(1);
  const at::Tensor a = at::randn({3, 5});
  const at::Tensor b = at::randn({7}).to(at::kHalf);
  const at::Tensor c = at::randn({2, 2, 3}).to(at::kBFloat16).transpose(0, 2);  // non-contiguous
  const at::Tensor empty = at::zeros({0, 4});
  ASSERT_TRUE(WriteSafetensors(Path("t.safetensors"),
                               {{"a", a}, {"b", b}, {"c", c}, {"empty", empty}}, {{"format", "pt"}})
                  .ok());
  absl::StatusOr<SafetensorsFile> f = SafetensorsFile::Open(Path("t.safetensors"));
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->metadata().at("format"), "pt");
  EXPECT_EQ(f->entries().size(), 4u);
  for (bool copy : {false, true}) {
    EXPECT_TRUE(f->Tensor("a", copy)->equal(a));
    EXPECT_TRUE(f->Tensor("b", copy)->equal(b));
    EXPECT_TRUE(f->Tensor("c", copy)->equal(c));
    EXPECT_EQ(f->Tensor("empty", copy)->sizes(), empty.sizes());
  }
  // A view outlives the file object and writes into it stay private to the process.
  at::Tensor view = *f->Tensor("a");
  f = absl::InternalError("dropped");
  view.add_(1);
  EXPECT_TRUE(view.equal(a + 1));
  absl::StatusOr<SafetensorsFile> again = SafetensorsFile::Open(Path("t.safetensors"));
  EXPECT_TRUE(again->Tensor("a")->equal(a));
}

TEST_F(SafetensorsTest, MissingTensorAndUnreadableDtypeNameTheTensor) {
  const std::string path = WriteHeader(
      "ids.safetensors", R"({"ids":{"dtype":"I64","shape":[2],"data_offsets":[0,16]}})", 16);
  absl::StatusOr<SafetensorsFile> f = SafetensorsFile::Open(path);
  ASSERT_TRUE(f.ok()) << f.status();
  absl::StatusOr<at::Tensor> ids = f->Tensor("ids");
  ASSERT_FALSE(ids.ok());
  EXPECT_TRUE(absl::StrContains(ids.status().message(), "'ids'")) << ids.status();
  EXPECT_TRUE(absl::StrContains(ids.status().message(), "I64")) << ids.status();
  absl::StatusOr<at::Tensor> none = f->Tensor("weight");
  ASSERT_FALSE(none.ok());
  EXPECT_TRUE(absl::StrContains(none.status().message(), "'weight' is missing"));
  EXPECT_TRUE(absl::StrContains(none.status().message(), path));
}

TEST_F(SafetensorsTest, DamagedFilesGiveClearErrors) {
  ExpectError(WriteHeader("empty", "", 0), {"header is not a JSON object"});
  {
    std::ofstream(Path("short")) << "abc";
    ExpectError(Path("short"), {"only 3 bytes"});
  }
  ExpectError(WriteRaw("past_end", 1000, "{}", 0), {"past the end"});
  ExpectError(WriteRaw("over_limit", uint64_t{1} << 40, "{}", 0), {"exceeds the limit"});
  ExpectError(WriteHeader("garbage", "\x89PNG\r\n\x1a\n\xff\xfe", 3), {"not a JSON object"});
  ExpectError(
      WriteHeader("out_of_range", R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 8),
      {"'w'", "outside the data section"});
  ExpectError(WriteHeader("overlap",
                          R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                          R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                          12),
              {"'a'", "'b'", "overlap"});
  ExpectError(WriteHeader("dtype", R"({"w":{"dtype":"Q4","shape":[2],"data_offsets":[0,8]}})", 8),
              {"'w'", "unknown dtype 'Q4'"});
  ExpectError(
      WriteHeader("mismatch", R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8),
      {"'w'", "12 bytes", "span 8"});
  ExpectError(WriteHeader("huge_shape",
                          R"({"w":{"dtype":"F32","shape":[4294967296,4294967296,16],)"
                          R"("data_offsets":[0,8]}})",
                          8),
              {"'w'", "overflows"});
  ExpectError(
      WriteHeader("negative", R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8),
      {"'w'", "negative"});
  ExpectError(WriteHeader("metadata", R"({"__metadata__":{"k":3}})", 0), {"__metadata__"});
  ExpectError(dir_, {"not a regular file"});
  absl::StatusOr<SafetensorsFile> missing = SafetensorsFile::Open(Path("nope"));
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  // A valid file cut anywhere fails cleanly.
  ASSERT_TRUE(WriteSafetensors(Path("whole"), {{"a", at::ones({16})}}).ok());
  std::ifstream in(Path("whole"), std::ios::binary);
  const std::string whole((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (size_t cut = 0; cut < whole.size(); ++cut) {
    std::ofstream(Path("cut"), std::ios::binary) << whole.substr(0, cut);
    EXPECT_FALSE(SafetensorsFile::Open(Path("cut")).ok()) << cut;
  }
}

TEST_F(SafetensorsTest, WriterRejectsUnsupportedDtypesAndDuplicates) {
  EXPECT_FALSE(WriteSafetensors(Path("x"), {{"i", at::zeros({2}, at::kLong)}}).ok());
  EXPECT_FALSE(WriteSafetensors(Path("x"), {{"a", at::zeros({2})}, {"a", at::zeros({2})}}).ok());
  EXPECT_FALSE(WriteSafetensors(Path("x"), {{"__metadata__", at::zeros({2})}}).ok());
  EXPECT_FALSE(WriteSafetensors(dir_ + "/no/such/dir/x", {{"a", at::zeros({2})}}).ok());
}

}  // namespace
}  // namespace padless::model_files
