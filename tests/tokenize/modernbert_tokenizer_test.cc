// ModernBERT's tokenizer.json (issue 45): byte-level BPE with an NFC normalizer, a ByteLevel
// pre-tokenizer without prefix space, BERT's template with [CLS] [SEP] found by name, and
// ModernBERT's added tokens (normalized runs of spaces, [MASK] with lstrip). The real file cannot
// be downloaded here, so tests/tokenize/data/modernbert/tokenizer.json is one of the same shape
// trained by `tokenizers` (modernbert_tokenizer_refs.py, which also wrote goldens.jsonl). padless
// must give tokenizers' ids, byte offsets and special-token positions for every text of
// texts.jsonl (accents in NFD and NFC, composition corner cases, emoji, CJK, whitespace runs,
// literal special tokens, the empty text), its pairs with token types, its truncations (single:
// right and left; pairs: longest_first, only_first, only_second) and its decoding. No Python.
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "padless/tokenize/token.h"
#include "padless/tokenize/tokenizer.h"

// A namespace of its own: the unity build compiles this file with the other tokenizer tests.
namespace padless::tokenize::modernbert_tokenizer_test {
namespace {

const std::string kData = std::string(PADLESS_SOURCE_DIR) + "/tests/tokenize/data/modernbert";

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<nlohmann::json> ReadJsonLines(const std::string& path) {
  std::vector<nlohmann::json> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(nlohmann::json::parse(line));
  }
  return lines;
}

struct Goldens {
  std::vector<std::string> texts;
  std::vector<nlohmann::json> lines;
};

const Goldens& TheGoldens() {
  static const Goldens* const goldens = [] {
    auto* g = new Goldens;
    for (const nlohmann::json& t : ReadJsonLines(kData + "/texts.jsonl")) {
      g->texts.push_back(t.get<std::string>());
    }
    g->lines = ReadJsonLines(kData + "/goldens.jsonl");
    return g;
  }();
  return *goldens;
}

nlohmann::json ReferenceJson() {
  return nlohmann::json::parse(ReadText(kData + "/tokenizer.json"));
}

Tokenizer Load(const nlohmann::json& j) {
  absl::StatusOr<Tokenizer> t = Tokenizer::FromSerialized(j.dump());
  EXPECT_TRUE(t.ok()) << t.status();
  return *std::move(t);
}

int32_t AddedId(const nlohmann::json& j, const std::string& content) {
  for (const nlohmann::json& t : j["added_tokens"]) {
    if (t["content"] == content) return t["id"].get<int32_t>();
  }
  return -1;
}

// "id*" for a special token, "id@start-stop" otherwise: the goldens' and padless's tokens alike.
std::string Describe(const std::vector<Token>& tokens) {
  return absl::StrJoin(tokens, " ", [](std::string* out, const Token& t) {
    if (t.special) return absl::StrAppend(out, t.id, "*");
    absl::StrAppend(out, t.id, "@", t.start.value_or(-1), "-", t.stop.value_or(-1));
  });
}

std::string DescribeGolden(const nlohmann::json& g) {
  const auto ids = g["ids"].get<std::vector<int32_t>>();
  const auto offsets = g["offsets"].get<std::vector<size_t>>();
  const auto special = g["special"].get<std::vector<size_t>>();
  std::vector<std::string> words;
  for (size_t i = 0; i < ids.size(); ++i) {
    const bool is_special = std::find(special.begin(), special.end(), i) != special.end();
    words.push_back(is_special
                        ? absl::StrCat(ids[i], "*")
                        : absl::StrCat(ids[i], "@", offsets[2 * i], "-", offsets[2 * i + 1]));
  }
  return absl::StrJoin(words, " ");
}

std::vector<int32_t> TypeIds(const nlohmann::json& g) {
  return g["type_ids"].get<std::vector<int32_t>>();
}

std::vector<int32_t> Widen(const std::vector<int8_t>& v) { return {v.begin(), v.end()}; }

TEST(ModernBertTokenizerTest, LoadsWithModernBertsSpecialTokensAndBertsTemplate) {
  const nlohmann::json j = ReferenceJson();
  const Tokenizer t = Load(j);
  const SpecialIds& s = t.special_ids();
  EXPECT_EQ(s.cls, AddedId(j, "[CLS]"));
  EXPECT_EQ(s.sep, AddedId(j, "[SEP]"));
  EXPECT_EQ(s.pad, AddedId(j, "[PAD]"));
  EXPECT_EQ(s.mask, AddedId(j, "[MASK]"));
  EXPECT_EQ(s.unk, AddedId(j, "[UNK]"));
  EXPECT_EQ(t.vocab_size(), static_cast<int32_t>(j["model"]["vocab"].size() + 33));
  absl::StatusOr<Encoding> pair = t.EncodePair("a", "b", EncodeOptions{});
  ASSERT_TRUE(pair.ok()) << pair.status();
  EXPECT_EQ(pair->ids.size(), 5u);  // [CLS] a [SEP] b [SEP], not RoBERTa's </s></s>
  EXPECT_EQ(Widen(pair->type_ids), (std::vector<int32_t>{0, 0, 0, 1, 1}));
}

TEST(ModernBertTokenizerTest, IdsAndOffsetsMatchTokenizers) {
  const Tokenizer t = Load(ReferenceJson());
  const Goldens& g = TheGoldens();
  EncodeOptions unlimited;
  unlimited.max_length = 0;
  size_t checked = 0;
  for (const nlohmann::json& line : g.lines) {
    if (!line.contains("offsets")) continue;
    const std::string& text = g.texts.at(line["text"].get<size_t>());
    SCOPED_TRACE(nlohmann::json(text).dump());
    absl::StatusOr<std::vector<Token>> tokens = t.Tokenize(text, /*add_special_tokens=*/true);
    ASSERT_TRUE(tokens.ok()) << tokens.status();
    EXPECT_EQ(Describe(*tokens), DescribeGolden(line));
    absl::StatusOr<Encoding> e = t.Encode(text, unlimited);
    ASSERT_TRUE(e.ok()) << e.status();
    EXPECT_EQ(e->ids, line["ids"].get<std::vector<int32_t>>());
    ++checked;
  }
  EXPECT_EQ(checked, g.texts.size());
}

TEST(ModernBertTokenizerTest, PairsAndTruncationMatchTokenizers) {
  const Tokenizer t = Load(ReferenceJson());
  const Goldens& g = TheGoldens();
  size_t pairs = 0, truncated = 0;
  for (const nlohmann::json& line : g.lines) {
    EncodeOptions options;
    options.max_length = line.value("max_length", 0);
    absl::StatusOr<Encoding> e = absl::UnknownError("no golden");
    if (line.contains("pair")) {
      const std::string& a = g.texts.at(line["pair"][0].get<size_t>());
      const std::string& b = g.texts.at(line["pair"][1].get<size_t>());
      SCOPED_TRACE(absl::StrCat(line["pair"].dump(), " ", line.value("strategy", "")));
      if (line.contains("strategy")) {
        absl::StatusOr<PairTruncation> s = ParsePairTruncation(line["strategy"].get<std::string>());
        ASSERT_TRUE(s.ok()) << s.status();
        options.pair_truncation = *s;
      }
      e = t.EncodePair(a, b, options);
      ASSERT_TRUE(e.ok()) << e.status();
      EXPECT_EQ(e->ids, line["ids"].get<std::vector<int32_t>>());
      EXPECT_EQ(Widen(e->type_ids), TypeIds(line));
      ++pairs;
    } else if (line.contains("max_length")) {
      const std::string& text = g.texts.at(line["text"].get<size_t>());
      SCOPED_TRACE(absl::StrCat(nlohmann::json(text).dump(), " ", options.max_length, " ",
                                line["direction"].get<std::string>()));
      options.truncation = line["direction"] == "right" ? Truncation::kHead : Truncation::kTail;
      e = t.Encode(text, options);
      ASSERT_TRUE(e.ok()) << e.status();
      EXPECT_EQ(e->ids, line["ids"].get<std::vector<int32_t>>());
      ++truncated;
    }
  }
  EXPECT_GT(pairs, 150u);
  EXPECT_GT(truncated, 300u);
}

TEST(ModernBertTokenizerTest, DecodingMatchesTokenizers) {
  const Tokenizer t = Load(ReferenceJson());
  const Goldens& g = TheGoldens();
  size_t decoded = 0;
  for (const nlohmann::json& line : g.lines) {
    if (!line.contains("decode")) continue;
    const std::string& text = g.texts.at(line["decode"].get<size_t>());
    absl::StatusOr<std::vector<int32_t>> ids = t.EncodePieces(text);
    ASSERT_TRUE(ids.ok()) << ids.status();
    absl::StatusOr<std::string> back = t.Decode(*ids);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, line["text"].get<std::string>()) << nlohmann::json(text).dump();
    ++decoded;
  }
  EXPECT_GT(decoded, 100u);
}

// The goldens can fail: without NFC, NFD text gives other ids than tokenizers does.
TEST(ModernBertTokenizerTest, WithoutNfcTheGoldensFail) {
  nlohmann::json j = ReferenceJson();
  j["normalizer"] = nullptr;
  const Tokenizer raw = Load(j);
  const Tokenizer nfc = Load(ReferenceJson());
  const std::string nfd = "cafe\xCC\x81 e\xCC\x81te\xCC\x81";  // café été, decomposed
  const std::string composed = "caf\xC3\xA9 \xC3\xA9t\xC3\xA9";
  EXPECT_EQ(*nfc.EncodePieces(nfd), *nfc.EncodePieces(composed));
  EXPECT_NE(*raw.EncodePieces(nfd), *nfc.EncodePieces(nfd));
}

TEST(ModernBertTokenizerTest, OtherNormalizersAreRefusedByName) {
  nlohmann::json j = ReferenceJson();
  j["normalizer"] = {{"type", "NFKC"}};
  absl::StatusOr<Tokenizer> t = Tokenizer::FromSerialized(j.dump());
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(std::string(t.status().message()).find("'NFKC'"), std::string::npos) << t.status();
}

}  // namespace
}  // namespace padless::tokenize::modernbert_tokenizer_test
