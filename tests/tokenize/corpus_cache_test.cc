// TokenizedCorpus's binary cache and LoadOrBuildCorpus: round trips, and corrupt, truncated or
// mismatched files are detected (and rebuilt), never read as data.
#include "padless/tokenize/corpus_cache.h"

#include <cstdio>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "padless/tokenize/tokenized_corpus.h"

namespace padless::tokenize {
namespace {

using ::testing::HasSubstr;

constexpr uint64_t kFingerprint = 0x1234abcdULL;

TokenizedCorpus RandomCorpus(bool typed, uint32_t seed) {
  std::mt19937 rng(seed);
  TokenizedCorpus c;
  for (int i = 0; i < 200; ++i) {
    std::vector<int32_t> ids(rng() % 40);
    for (int32_t& id : ids) id = static_cast<int32_t>(rng() % 30000);
    std::vector<int8_t> types;
    if (typed) {
      for (size_t k = 0; k < ids.size(); ++k) types.push_back(k < ids.size() / 2 ? 0 : 1);
    }
    c.Add(ids, types, static_cast<int64_t>(rng() % 5));
  }
  return c;
}

void ExpectEqual(const TokenizedCorpus& a, const TokenizedCorpus& b) {
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(a.flat_tokens(), b.flat_tokens());
  EXPECT_EQ(a.offsets(), b.offsets());
  EXPECT_EQ(a.labels(), b.labels());
  ASSERT_EQ(a.has_type_ids(), b.has_type_ids());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(std::vector<int8_t>(a.type_ids(i).begin(), a.type_ids(i).end()),
              std::vector<int8_t>(b.type_ids(i).begin(), b.type_ids(i).end()));
  }
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void WriteAll(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

class CorpusCacheTest : public ::testing::Test {
 protected:
  void TearDown() override { std::remove(path_.c_str()); }
  // ctest runs tests in parallel processes: each gets its own file.
  const std::string path_ = ::testing::TempDir() + "/corpus_cache_test_" +
                            ::testing::UnitTest::GetInstance()->current_test_info()->name() +
                            ".bin";
};

TEST_F(CorpusCacheTest, RoundTripWithAndWithoutTypeIds) {
  for (bool typed : {false, true}) {
    const TokenizedCorpus original = RandomCorpus(typed, 7);
    ASSERT_TRUE(original.Save(path_, kFingerprint).ok());
    absl::StatusOr<TokenizedCorpus> loaded = TokenizedCorpus::Load(path_, kFingerprint);
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    ExpectEqual(original, *loaded);
  }
}

TEST_F(CorpusCacheTest, EmptyCorpusRoundTrips) {
  ASSERT_TRUE(TokenizedCorpus().Save(path_, kFingerprint).ok());
  absl::StatusOr<TokenizedCorpus> loaded = TokenizedCorpus::Load(path_, kFingerprint);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->size(), 0u);
}

// Regression (corpus_cache_fuzzer): an empty corpus whose header claims type ids passed every check
// but was not what Save writes. Header: flags at byte 12; the checksum covers only the payload,
// which is the same.
TEST_F(CorpusCacheTest, TypeIdFlagWithoutTokensIsRejected) {
  ASSERT_TRUE(TokenizedCorpus().Save(path_, kFingerprint).ok());
  std::string bytes = ReadAll(path_);
  ASSERT_EQ(bytes[12], 0);
  bytes[12] = 1;
  WriteAll(path_, bytes);
  absl::StatusOr<TokenizedCorpus> loaded = TokenizedCorpus::Load(path_, kFingerprint);
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(loaded.status().message(), HasSubstr("type-id flag but no tokens"));
  EXPECT_THAT(loaded.status().message(), HasSubstr(path_));
}

TEST_F(CorpusCacheTest, EveryFlippedByteIsDetected) {
  ASSERT_TRUE(RandomCorpus(true, 11).Save(path_, kFingerprint).ok());
  const std::string good = ReadAll(path_);
  // Every header byte, then a sample of payload bytes.
  for (size_t pos = 0; pos < good.size(); pos += (pos < 64 ? 1 : 97)) {
    std::string bad = good;
    bad[pos] = static_cast<char>(bad[pos] ^ 0x10);
    WriteAll(path_, bad);
    absl::StatusOr<TokenizedCorpus> loaded = TokenizedCorpus::Load(path_, kFingerprint);
    ASSERT_FALSE(loaded.ok()) << "flipped byte " << pos << " went unnoticed";
  }
}

TEST_F(CorpusCacheTest, EveryTruncationIsDetected) {
  ASSERT_TRUE(RandomCorpus(false, 13).Save(path_, kFingerprint).ok());
  const std::string good = ReadAll(path_);
  for (size_t keep = 0; keep < good.size(); keep += (keep < 80 ? 1 : 131)) {
    WriteAll(path_, good.substr(0, keep));
    absl::StatusOr<TokenizedCorpus> loaded = TokenizedCorpus::Load(path_, kFingerprint);
    ASSERT_FALSE(loaded.ok()) << "truncated to " << keep;
    EXPECT_EQ(loaded.status().code(), absl::StatusCode::kDataLoss);
  }
  WriteAll(path_, good + "x");
  EXPECT_THAT(TokenizedCorpus::Load(path_, kFingerprint).status().message(),
              HasSubstr("trailing bytes"));
}

TEST_F(CorpusCacheTest, OtherFingerprintOrMissingFileIsReported) {
  ASSERT_TRUE(RandomCorpus(false, 17).Save(path_, kFingerprint).ok());
  absl::StatusOr<TokenizedCorpus> other = TokenizedCorpus::Load(path_, kFingerprint + 1);
  EXPECT_EQ(other.status().code(), absl::StatusCode::kFailedPrecondition);
  std::remove(path_.c_str());
  EXPECT_EQ(TokenizedCorpus::Load(path_, kFingerprint).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(CorpusCacheTest, LoadOrBuildBuildsOnceThenHitsAndRebuildsWhenCorrupt) {
  int builds = 0;
  const auto build = [&]() -> absl::StatusOr<TokenizedCorpus> {
    ++builds;
    return RandomCorpus(false, 19);
  };
  absl::StatusOr<CachedCorpus> first = LoadOrBuildCorpus(path_, kFingerprint, build);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_FALSE(first->from_cache);
  EXPECT_THAT(first->rebuild_reason, HasSubstr("does not exist"));
  EXPECT_EQ(builds, 1);

  absl::StatusOr<CachedCorpus> second = LoadOrBuildCorpus(path_, kFingerprint, build);
  ASSERT_TRUE(second.ok());
  EXPECT_TRUE(second->from_cache);
  EXPECT_EQ(builds, 1);
  ExpectEqual(first->corpus, second->corpus);

  std::string bytes = ReadAll(path_);
  bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 1);
  WriteAll(path_, bytes);
  absl::StatusOr<CachedCorpus> third = LoadOrBuildCorpus(path_, kFingerprint, build);
  ASSERT_TRUE(third.ok());
  EXPECT_FALSE(third->from_cache);
  EXPECT_THAT(third->rebuild_reason, HasSubstr("checksum"));
  EXPECT_EQ(builds, 2);
  ExpectEqual(first->corpus, third->corpus);

  absl::StatusOr<CachedCorpus> other = LoadOrBuildCorpus(path_, kFingerprint ^ 5, build);
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE(other->from_cache);
  EXPECT_THAT(other->rebuild_reason, HasSubstr("other data, model or options"));
  EXPECT_EQ(builds, 3);
}

TEST_F(CorpusCacheTest, BuildErrorsPropagate) {
  const auto failing = []() -> absl::StatusOr<TokenizedCorpus> {
    return absl::InvalidArgumentError("data.tsv:3: missing label");
  };
  absl::StatusOr<CachedCorpus> result = LoadOrBuildCorpus(path_, kFingerprint, failing);
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(result.status().message(), HasSubstr("data.tsv:3"));
}

}  // namespace
}  // namespace padless::tokenize
