// TokenizedCorpus's binary cache (a mapped corpus) and LoadOrBuildCorpus: round trips, and
// corrupt, truncated or mismatched files are detected (and rebuilt), never read as data.
#include "padless/corpus/corpus_cache.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "cache_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "padless/corpus/tokenized_corpus.h"

namespace padless::corpus {
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
  ASSERT_TRUE(a.VerifyAll().ok());
  ASSERT_TRUE(b.VerifyAll().ok());
  EXPECT_EQ(a.total_tokens(), b.total_tokens());
  EXPECT_EQ(a.label_names(), b.label_names());
  EXPECT_EQ(a.token_id_range().min, b.token_id_range().min);
  EXPECT_EQ(a.token_id_range().max, b.token_id_range().max);
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

// Load, then every block: what a reader of the whole corpus trusts.
absl::Status LoadAndVerify(const std::string& path, uint64_t fingerprint) {
  absl::StatusOr<TokenizedCorpus> loaded = TokenizedCorpus::Load(path, fingerprint);
  return loaded.ok() ? loaded->VerifyAll() : loaded.status();
}

// The trailer of a cache file's bytes, and writing one back with its checksum repaired.
internal::CacheTrailer TrailerOf(const std::string& bytes) {
  internal::CacheTrailer t;
  std::memcpy(&t, bytes.data() + bytes.size() - sizeof(t), sizeof(t));
  return t;
}
void PutTrailer(std::string* bytes, internal::CacheTrailer t) {
  t.trailer_checksum = internal::TrailerChecksum(t);
  std::memcpy(bytes->data() + bytes->size() - sizeof(t), &t, sizeof(t));
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

TEST_F(CorpusCacheTest, LoadMapsTheTokensAndEqualsTheCorpusInMemory) {
  for (bool typed : {false, true}) {
    TokenizedCorpus original = RandomCorpus(typed, 23);
    original.set_label_names({"a", "b", "c", "d", "e"});
    ASSERT_TRUE(original.Save(path_, kFingerprint).ok());
    absl::StatusOr<TokenizedCorpus> loaded = TokenizedCorpus::Load(path_, kFingerprint);
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    EXPECT_TRUE(loaded->mapped());
    EXPECT_FALSE(original.mapped());
    ExpectEqual(original, *loaded);
    for (size_t i = 0; i < original.size(); ++i) {
      ASSERT_TRUE(loaded->VerifyExample(i).ok());
      ASSERT_EQ(loaded->tokens(i), original.tokens(i)) << i;
      ASSERT_EQ(loaded->length(i), original.length(i));
      ASSERT_EQ(loaded->label(i), original.label(i));
    }
    // A mapped corpus saves back to the same bytes.
    const std::string again = path_ + ".again";
    ASSERT_TRUE(loaded->Save(again, kFingerprint).ok());
    EXPECT_EQ(ReadAll(again), ReadAll(path_));
    std::remove(again.c_str());
  }
}

TEST_F(CorpusCacheTest, TypeIdsBackFilledForSingleTextsBeforeThePairs) {
  TokenizedCorpus c;
  c.Add(std::vector<int32_t>{5, 6}, {}, 0);
  c.Add(std::vector<int32_t>{7, 8, 9}, std::vector<int8_t>{0, 1, 1}, 1);
  c.Add(std::vector<int32_t>{}, {}, 1);
  ASSERT_TRUE(c.Save(path_, kFingerprint).ok());
  absl::StatusOr<TokenizedCorpus> loaded = TokenizedCorpus::Load(path_, kFingerprint);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ExpectEqual(c, *loaded);
  EXPECT_EQ(std::vector<int8_t>(loaded->type_ids(0).begin(), loaded->type_ids(0).end()),
            (std::vector<int8_t>{0, 0}));
}

TEST_F(CorpusCacheTest, SubsetOfAMappedCorpusSharesTheMapping) {
  const TokenizedCorpus original = RandomCorpus(true, 29);
  ASSERT_TRUE(original.Save(path_, kFingerprint).ok());
  absl::StatusOr<TokenizedCorpus> loaded = TokenizedCorpus::Load(path_, kFingerprint);
  ASSERT_TRUE(loaded.ok());
  const std::vector<size_t> picks = {199, 3, 50, 51, 0};
  const TokenizedCorpus subset = loaded->Subset(picks);
  const TokenizedCorpus copied = original.Subset(picks);
  EXPECT_TRUE(subset.mapped());
  EXPECT_FALSE(copied.mapped());
  ASSERT_EQ(subset.size(), picks.size());
  int64_t tokens = 0;
  for (size_t k = 0; k < picks.size(); ++k) {
    ASSERT_TRUE(subset.VerifyExample(k).ok());
    EXPECT_EQ(subset.tokens(k), original.tokens(picks[k]));
    EXPECT_EQ(subset.type_ids(k), original.type_ids(picks[k]));
    EXPECT_EQ(subset.label(k), original.label(picks[k]));
    EXPECT_EQ(copied.tokens(k), original.tokens(picks[k]));
    tokens += subset.length(k);
  }
  EXPECT_EQ(subset.total_tokens(), tokens);
  EXPECT_EQ(copied.total_tokens(), tokens);
  EXPECT_EQ(subset.Lengths(), copied.Lengths());
}

// A flipped byte of the tokens is found when a reader verifies the example that holds it (and by
// VerifyAll), not at Load: Load reads only the trailer and the index.
TEST_F(CorpusCacheTest, CorruptBlockIsFoundWhenItsExampleIsVerified) {
  TokenizedCorpus big;
  for (int i = 0; i < 400; ++i) big.Add(std::vector<int32_t>(100, i % 50), {}, i % 2);
  ASSERT_TRUE(big.Save(path_, kFingerprint).ok());  // 160 kB of tokens: three 64 KiB blocks
  std::string bytes = ReadAll(path_);
  const size_t victim = 350;  // tokens [35000, 35100), bytes [140000, 140400): block 2
  bytes[victim * 400 + 8] ^= 0x01;
  WriteAll(path_, bytes);
  absl::StatusOr<TokenizedCorpus> loaded = TokenizedCorpus::Load(path_, kFingerprint);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_TRUE(loaded->VerifyExample(0).ok());
  EXPECT_TRUE(loaded->VerifyExample(200).ok());
  const absl::Status bad = loaded->VerifyExample(victim);
  EXPECT_EQ(bad.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(bad.message(), HasSubstr("block 2 of 3"));
  EXPECT_THAT(bad.message(), HasSubstr(path_));
  EXPECT_FALSE(loaded->VerifyAll().ok());
  EXPECT_FALSE(loaded->Save(path_ + ".copy", kFingerprint).ok());
}

// Regression (corpus_cache_fuzzer): an empty corpus whose trailer claims type ids is not one the
// writer produces.
TEST_F(CorpusCacheTest, TypeIdFlagWithoutTokensIsRejected) {
  ASSERT_TRUE(TokenizedCorpus().Save(path_, kFingerprint).ok());
  std::string bytes = ReadAll(path_);
  internal::CacheTrailer t = TrailerOf(bytes);
  ASSERT_EQ(t.flags, 0u);
  t.flags = internal::kFlagTypeIds;
  PutTrailer(&bytes, t);
  WriteAll(path_, bytes);
  absl::StatusOr<TokenizedCorpus> loaded = TokenizedCorpus::Load(path_, kFingerprint);
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(loaded.status().message(), HasSubstr("type-id flag but no tokens"));
  EXPECT_THAT(loaded.status().message(), HasSubstr(path_));
}

TEST_F(CorpusCacheTest, RecordedTokenRangeIsChecked) {
  ASSERT_TRUE(RandomCorpus(false, 31).Save(path_, kFingerprint).ok());
  std::string bytes = ReadAll(path_);
  internal::CacheTrailer t = TrailerOf(bytes);
  t.max_token -= 1;  // narrower than the tokens: a block holds an id outside it
  PutTrailer(&bytes, t);
  WriteAll(path_, bytes);
  const absl::Status s = LoadAndVerify(path_, kFingerprint);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("outside the recorded"));
}

TEST_F(CorpusCacheTest, OlderVersionIsReportedAsSuch) {
  // Version 1 began with the magic and its version.
  std::string v1(200, '\0');
  std::memcpy(v1.data(), internal::kCacheMagic, 8);
  v1[8] = 1;
  WriteAll(path_, v1);
  absl::StatusOr<TokenizedCorpus> loaded = TokenizedCorpus::Load(path_, kFingerprint);
  EXPECT_EQ(loaded.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(loaded.status().message(), HasSubstr("version 1, expected 2"));
  // And a trailer of a future version.
  ASSERT_TRUE(RandomCorpus(false, 37).Save(path_, kFingerprint).ok());
  std::string bytes = ReadAll(path_);
  internal::CacheTrailer t = TrailerOf(bytes);
  t.version = 3;
  PutTrailer(&bytes, t);
  WriteAll(path_, bytes);
  EXPECT_THAT(TokenizedCorpus::Load(path_, kFingerprint).status().message(),
              HasSubstr("version 3, expected 2"));
}

TEST_F(CorpusCacheTest, NotACacheIsRejectedClearly) {
  WriteAll(path_, "");
  EXPECT_THAT(TokenizedCorpus::Load(path_, kFingerprint).status().message(),
              HasSubstr("empty file"));
  std::mt19937 rng(41);
  std::string garbage(5000, '\0');
  for (char& c : garbage) c = static_cast<char>(rng());
  WriteAll(path_, garbage);
  absl::StatusOr<TokenizedCorpus> loaded = TokenizedCorpus::Load(path_, kFingerprint);
  EXPECT_EQ(loaded.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(loaded.status().message(), HasSubstr("not a padless corpus cache"));
  absl::StatusOr<TokenizedCorpus> dir = TokenizedCorpus::Load(::testing::TempDir(), kFingerprint);
  EXPECT_EQ(dir.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(dir.status().message(), HasSubstr("directory"));
}

TEST_F(CorpusCacheTest, EveryFlippedByteIsDetected) {
  TokenizedCorpus c = RandomCorpus(true, 11);
  c.set_label_names({"x", "yy"});
  ASSERT_TRUE(c.Save(path_, kFingerprint).ok());
  const std::string good = ReadAll(path_);
  // Every byte of the trailer, a sample of the index and of the bulk.
  const size_t index_at =
      internal::PaddedTo8(internal::BulkBytes(static_cast<uint64_t>(c.total_tokens()), true));
  const size_t trailer_at = good.size() - sizeof(internal::CacheTrailer);
  for (size_t pos = 0; pos < good.size();
       pos += pos >= trailer_at ? 1 : (pos + 1 >= index_at ? 11 : 97)) {
    std::string bad = good;
    bad[pos] = static_cast<char>(bad[pos] ^ 0x10);
    WriteAll(path_, bad);
    ASSERT_FALSE(LoadAndVerify(path_, kFingerprint).ok()) << "flipped byte " << pos;
  }
}

TEST_F(CorpusCacheTest, EveryTruncationIsDetected) {
  ASSERT_TRUE(RandomCorpus(false, 13).Save(path_, kFingerprint).ok());
  const std::string good = ReadAll(path_);
  for (size_t keep = 0; keep < good.size(); keep += (keep + 200 < good.size() ? 131 : 1)) {
    WriteAll(path_, good.substr(0, keep));
    absl::StatusOr<TokenizedCorpus> loaded = TokenizedCorpus::Load(path_, kFingerprint);
    ASSERT_FALSE(loaded.ok()) << "truncated to " << keep;
    EXPECT_EQ(loaded.status().code(), absl::StatusCode::kDataLoss);
  }
  WriteAll(path_, good + "x");
  EXPECT_THAT(TokenizedCorpus::Load(path_, kFingerprint).status().message(),
              HasSubstr("no trailer"));
  // Bytes inserted before an intact trailer: the sizes no longer add up.
  WriteAll(path_, "x" + good);
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
}  // namespace padless::corpus
