// BuildCorpusCache and StreamCorpus: streaming a file through the tokenizer into the cache gives
// the bytes that encoding it whole in memory and saving gives, whatever the chunk size.
#include "padless/corpus/corpus_cache_builder.h"

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "padless/corpus/batch_encoder.h"
#include "padless/corpus/label_map.h"
#include "padless/corpus/tokenized_corpus.h"
#include "tiny_wordpiece.h"

namespace padless::corpus {
namespace {

using ::testing::HasSubstr;
using tokenize::Tokenizer;
using tokenize::testing::TinyWordPieceJson;
using tokenize::testing::WriteTemp;

constexpr uint64_t kFingerprint = 77;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Labels first seen in an order other than the sorted one; single texts before, among and after
// pairs, so the type ids are back-filled across chunks.
std::string MixedTsv(int rows) {
  const char* labels[] = {"pos", "neg", "mid"};
  const char* texts[] = {"hello world", "cafe! unaffable", "a ab hello", "world's", "中 cafe"};
  std::string tsv = "label\ttext\ttext_pair\n";
  for (int i = 0; i < rows; ++i) {
    tsv += std::string(labels[(i / 4) % 3]) + "\t" + texts[i % 5];
    tsv += i % 7 == 3 ? std::string("\t") + texts[(i + 2) % 5] + "\n" : "\t\n";
  }
  return tsv;
}

class CorpusCacheBuilderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<Tokenizer> t = Tokenizer::FromSerialized(TinyWordPieceJson().dump());
    ASSERT_TRUE(t.ok()) << t.status();
    tokenizer_ = std::make_unique<Tokenizer>(*std::move(t));
  }
  void TearDown() override {
    for (const std::string& p : {cache_, saved_}) std::remove(p.c_str());
  }

  // The in-memory way: read whole, label map over all, encode, Save.
  std::string SavedInMemory(const std::string& data, const CacheBuildOptions& o) {
    absl::StatusOr<RawCorpus> raw = ReadCorpus(data, o.reader);
    EXPECT_TRUE(raw.ok()) << raw.status();
    const LabelMap labels = LabelMap::FromCorpus(*raw);
    absl::StatusOr<TokenizedCorpus> corpus = EncodeCorpus(*tokenizer_, *raw, labels, o.encode);
    EXPECT_TRUE(corpus.ok()) << corpus.status();
    corpus->set_label_names(labels.names());
    EXPECT_TRUE(corpus->Save(saved_, kFingerprint).ok());
    return ReadAll(saved_);
  }

  std::unique_ptr<Tokenizer> tokenizer_;
  const std::string name_ = ::testing::UnitTest::GetInstance()->current_test_info()->name();
  const std::string cache_ = ::testing::TempDir() + "/builder_" + name_ + ".cache";
  const std::string saved_ = ::testing::TempDir() + "/builder_" + name_ + ".saved";
};

TEST_F(CorpusCacheBuilderTest, StreamedCacheEqualsTheInMemoryOneByteForByte) {
  const std::string data = WriteTemp("builder_mixed.tsv", MixedTsv(101));
  CacheBuildOptions o;
  o.encode.encode.max_length = 9;
  o.encode.num_threads = 2;
  const std::string expected = SavedInMemory(data, o);
  for (size_t chunk : {1, 3, 64, 1000}) {
    o.chunk_examples = chunk;
    absl::StatusOr<CacheBuildReport> report =
        BuildCorpusCache(data, *tokenizer_, o, cache_, kFingerprint);
    ASSERT_TRUE(report.ok()) << report.status();
    EXPECT_EQ(report->examples, 101);
    EXPECT_EQ(report->read.examples, 101);
    EXPECT_EQ(report->label_names, (std::vector<std::string>{"mid", "neg", "pos"}));
    ASSERT_EQ(ReadAll(cache_), expected) << "chunk " << chunk;
  }
  absl::StatusOr<TokenizedCorpus> mapped = TokenizedCorpus::Load(cache_, kFingerprint);
  ASSERT_TRUE(mapped.ok()) << mapped.status();
  EXPECT_TRUE(mapped->has_type_ids());
  EXPECT_EQ(mapped->label_names(), (std::vector<std::string>{"mid", "neg", "pos"}));
  EXPECT_TRUE(mapped->VerifyAll().ok());
}

TEST_F(CorpusCacheBuilderTest, SingleTextsOnlyAndJsonl) {
  const std::string data =
      WriteTemp("builder.jsonl",
                "{\"label\": 2, \"text\": \"hello\"}\n{\"label\": 10, \"text\": \"world\"}\n"
                "\n{\"label\": 2, \"text\": \"cafe \\u00e9\"}\n");
  CacheBuildOptions o;
  o.chunk_examples = 2;
  const std::string expected = SavedInMemory(data, o);
  absl::StatusOr<CacheBuildReport> report =
      BuildCorpusCache(data, *tokenizer_, o, cache_, kFingerprint);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->label_names, (std::vector<std::string>{"2", "10"}));  // numeric order
  EXPECT_EQ(ReadAll(cache_), expected);
}

TEST_F(CorpusCacheBuilderTest, BadRowNamesFileAndLineAndLeavesNoCache) {
  const std::string data = WriteTemp("builder_bad.tsv", "pos\thello\nneg\tworld\n\tno label\n");
  CacheBuildOptions o;
  o.chunk_examples = 1;
  absl::StatusOr<CacheBuildReport> report =
      BuildCorpusCache(data, *tokenizer_, o, cache_, kFingerprint);
  ASSERT_FALSE(report.ok());
  EXPECT_THAT(report.status().message(), HasSubstr(data + ":3"));
  EXPECT_FALSE(TokenizedCorpus::Load(cache_, kFingerprint).ok());
}

TEST_F(CorpusCacheBuilderTest, MissingDataOrCacheDirectoryIsAnError) {
  CacheBuildOptions o;
  EXPECT_EQ(BuildCorpusCache(::testing::TempDir() + "/no_such.tsv", *tokenizer_, o, cache_, 1)
                .status()
                .code(),
            absl::StatusCode::kNotFound);
  const std::string data = WriteTemp("builder_ok.tsv", "pos\thello\n");
  const absl::Status no_dir =
      BuildCorpusCache(data, *tokenizer_, o, ::testing::TempDir() + "/no/such/dir/c", 1).status();
  EXPECT_EQ(no_dir.code(), absl::StatusCode::kUnavailable) << no_dir;
}

// Chunks of StreamCorpus, joined, are ReadCorpus's examples: CSV records spanning lines included.
TEST(StreamCorpusTest, ChunksJoinToTheWholeRead) {
  const std::string data = WriteTemp(
      "stream.csv", "\xEF\xBB\xBFlabel,text\npos,\"two\nlines\"\nneg,plain\n\npos,\"a,b\"\n");
  ReaderOptions o;
  absl::StatusOr<RawCorpus> whole = ReadCorpus(data, o);
  ASSERT_TRUE(whole.ok()) << whole.status();
  std::vector<Example> joined;
  std::vector<size_t> sizes;
  absl::StatusOr<ReadReport> report = StreamCorpus(data, o, 2, [&](std::vector<Example>& chunk) {
    sizes.push_back(chunk.size());
    for (Example& e : chunk) joined.push_back(std::move(e));
    return absl::OkStatus();
  });
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->examples, 3);
  EXPECT_TRUE(report->had_header);
  EXPECT_EQ(sizes, (std::vector<size_t>{2, 1}));
  ASSERT_EQ(joined.size(), whole->examples.size());
  for (size_t i = 0; i < joined.size(); ++i) {
    EXPECT_EQ(joined[i].text, whole->examples[i].text);
    EXPECT_EQ(joined[i].label, whole->examples[i].label);
    EXPECT_EQ(joined[i].line, whole->examples[i].line);
  }
}

TEST(StreamCorpusTest, SinkErrorStopsTheRead) {
  const std::string data = WriteTemp("stream_stop.tsv", "a\tx\nb\ty\nc\tz\n");
  int calls = 0;
  absl::StatusOr<ReadReport> report =
      StreamCorpus(data, ReaderOptions(), 1, [&](std::vector<Example>&) {
        ++calls;
        return absl::CancelledError("enough");
      });
  EXPECT_EQ(report.status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace padless::corpus
