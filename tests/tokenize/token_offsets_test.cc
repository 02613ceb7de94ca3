// Tokenizer::Tokenize: the tokens, special flags and byte offsets that TEI's /tokenize answers.
// Goldens: tests/tokenize/data/token_offsets, written by token_offsets_refs.py with Hugging Face
// `tokenizers` (encode(text): ids, offsets turned into bytes, special_tokens_mask) for a WordPiece
// tokenizer.json trained there, in five variants (normalizer flags, added tokens), the byte-level
// BPE reference of bytelevel_bpe_test in four (prefix space, trim_offsets, lstrip/rstrip) and a
// tiny byte-level BPE with unknown characters in three; the texts are the parity tests' edge texts
// (accents, CJK, emoji, runs of spaces, control characters, literal special tokens...), a few
// more and SST-2 sentences. No Python runs here. SentencePiece has no golden (padless's layout is
// its own; XLM-R's offsets were compared with a converted tokenizer by hand, see
// sentencepiece_offsets.h), only the rules it follows; every backend, SentencePiece included,
// must keep the invariants on every text: ids equal Encode's, special tokens without offsets,
// offsets ordered and inside the text, and each token's text the bytes its offsets name.
#include <algorithm>
#include <filesystem>
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
#include "spm_reference.h"
#include "trained_model.h"

// A namespace of its own: the unity build compiles this file with the other tokenizer tests.
namespace padless::tokenize::token_offsets_test {
namespace {

const std::string kSource = PADLESS_SOURCE_DIR;
const std::string kData = kSource + "/tests/tokenize/data/token_offsets";

nlohmann::json ReadJson(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return nlohmann::json::parse(text.str());
}

std::vector<nlohmann::json> ReadJsonLines(const std::string& path) {
  std::vector<nlohmann::json> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(nlohmann::json::parse(line));
  }
  return lines;
}

const std::vector<std::string>& Texts() {
  static const std::vector<std::string>* const texts = [] {
    auto* t = new std::vector<std::string>;
    for (const nlohmann::json& line : ReadJsonLines(kData + "/texts.jsonl")) {
      t->push_back(line.get<std::string>());
    }
    return t;
  }();
  return *texts;
}

nlohmann::json AddedTokenJson(int id, const std::string& content, bool special) {
  return {{"id", id},        {"content", content},     {"single_word", false}, {"lstrip", false},
          {"rstrip", false}, {"normalized", !special}, {"special", special}};
}

// The tokenizer.json of a golden ("wordpiece.cased", "bpe.no_trim", ...), edited as
// token_offsets_refs.py edits it.
nlohmann::json VariantJson(const std::string& name) {
  const std::string base = name.substr(0, name.find('.'));
  const std::string variant = name.substr(name.find('.') + 1);
  if (base == "wordpiece") {
    nlohmann::json j = ReadJson(kData + "/wordpiece.json");
    nlohmann::json& n = j["normalizer"];
    if (variant == "cased" || variant == "cased_stripped") {
      n["lowercase"] = false;
      n["strip_accents"] = variant == "cased_stripped";
    } else if (variant == "raw") {
      n["clean_text"] = false;
      n["handle_chinese_chars"] = false;
      n["strip_accents"] = false;
    } else if (variant == "added") {
      const int size = static_cast<int>(j["model"]["vocab"].size());
      j["added_tokens"].push_back(AddedTokenJson(size, "Na\xC3\xAFve", false));
      j["added_tokens"].push_back(AddedTokenJson(size + 1, "<special>", true));
    }
    return j;
  }
  nlohmann::json j =
      ReadJson(base == "bpe" ? kSource + "/tests/tokenize/data/bytelevel_bpe/tokenizer.json"
                             : kData + "/tiny_bpe.json");
  if (variant == "no_prefix") {
    j["pre_tokenizer"]["add_prefix_space"] = false;
    j["post_processor"]["add_prefix_space"] = false;
  } else if (variant == "no_trim") {
    j["post_processor"]["trim_offsets"] = false;
  } else if (variant == "mask_strip") {
    for (nlohmann::json& t : j["added_tokens"]) {
      if (t["content"] == "<mask>") t["lstrip"] = t["rstrip"] = true;
    }
  } else if (variant == "fuse_unk") {
    j["model"]["fuse_unk"] = true;
  }
  return j;
}

Tokenizer LoadVariant(const std::string& name) {
  absl::StatusOr<Tokenizer> t = Tokenizer::FromSerialized(VariantJson(name).dump());
  EXPECT_TRUE(t.ok()) << name << ": " << t.status();
  return *std::move(t);
}

// A token as "id@start-stop", or "id*" for a special token: what the goldens are compared in.
std::string Describe(const Token& t) {
  if (t.special) return absl::StrCat(t.id, "*");
  return absl::StrCat(t.id, "@", t.start.value_or(-1), "-", t.stop.value_or(-1));
}

std::string Describe(const std::vector<Token>& tokens) {
  return absl::StrJoin(tokens, " ",
                       [](std::string* out, const Token& t) { absl::StrAppend(out, Describe(t)); });
}

// A golden line in the same words: Hugging Face's special tokens (special_tokens_mask) and the
// others with their offsets.
std::string DescribeGolden(const nlohmann::json& golden) {
  const std::vector<int32_t> ids = golden["ids"].get<std::vector<int32_t>>();
  const std::vector<size_t> offsets = golden["offsets"].get<std::vector<size_t>>();
  const std::vector<size_t> special = golden["special"].get<std::vector<size_t>>();
  std::vector<std::string> words;
  for (size_t i = 0; i < ids.size(); ++i) {
    const bool is_special = std::count(special.begin(), special.end(), i) > 0;
    words.push_back(is_special
                        ? absl::StrCat(ids[i], "*")
                        : absl::StrCat(ids[i], "@", offsets[2 * i], "-", offsets[2 * i + 1]));
  }
  return absl::StrJoin(words, " ");
}

// The golden texts on which `tokenizer` differs from the goldens `name`, with both token lists;
// without special tokens padless must give the same tokens less the two specials.
std::vector<std::string> GoldenMismatches(const Tokenizer& tokenizer, const std::string& name) {
  std::vector<std::string> mismatches;
  const std::vector<nlohmann::json> goldens = ReadJsonLines(kData + "/" + name + ".jsonl");
  for (const nlohmann::json& golden : goldens) {
    const std::string& text = Texts().at(golden["text"].get<size_t>());
    absl::StatusOr<std::vector<Token>> with = tokenizer.Tokenize(text, true);
    absl::StatusOr<std::vector<Token>> bare = tokenizer.Tokenize(text, false);
    const std::string want = DescribeGolden(golden);
    const std::string got = with.ok() ? Describe(*with) : with.status().ToString();
    std::string got_bare = bare.ok() ? Describe(*bare) : bare.status().ToString();
    const bool framed = with.ok() && with->size() >= 2;
    const std::string want_bare =
        framed ? Describe(std::vector<Token>(with->begin() + 1, with->end() - 1)) : "";
    if (got != want || got_bare != want_bare) {
      mismatches.push_back(absl::StrCat(nlohmann::json(text).dump(), "\n  tokenizers: ", want,
                                        "\n  padless:    ", got, "\n  bare:       ", got_bare));
    }
  }
  if (goldens.size() < 100) mismatches.push_back(absl::StrCat("only ", goldens.size(), " texts"));
  return mismatches;
}

// What every backend's tokens keep, for `text` with and without special tokens.
void ExpectInvariants(const Tokenizer& tokenizer, const std::string& text) {
  SCOPED_TRACE(nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  for (const bool add_special : {true, false}) {
    absl::StatusOr<std::vector<Token>> tokens = tokenizer.Tokenize(text, add_special);
    ASSERT_TRUE(tokens.ok()) << tokens.status();
    std::vector<int32_t> ids;
    for (const Token& t : *tokens) ids.push_back(t.id);
    if (add_special) {
      absl::StatusOr<Encoding> encoding = tokenizer.Encode(text, EncodeOptions{0});
      ASSERT_TRUE(encoding.ok());
      EXPECT_EQ(ids, encoding->ids);
    } else {
      EXPECT_EQ(ids, tokenizer.EncodePieces(text).value());
    }
    size_t start = 0, stop = 0;  // the last token's, which the next may not undercut
    for (size_t i = 0; i < tokens->size(); ++i) {
      const Token& t = (*tokens)[i];
      EXPECT_EQ(t.special, add_special && (i == 0 || i + 1 == tokens->size())) << i;
      if (t.special) {
        EXPECT_EQ(t.text, tokenizer.IdToPiece(t.id));
        EXPECT_FALSE(t.start.has_value() || t.stop.has_value());
        continue;
      }
      ASSERT_TRUE(t.start.has_value() && t.stop.has_value()) << i;
      EXPECT_LE(*t.start, *t.stop) << i;
      EXPECT_LE(*t.stop, text.size()) << i;
      EXPECT_GE(*t.start, start) << i;
      EXPECT_GE(*t.stop, stop) << i;
      start = *t.start;
      stop = *t.stop;
      EXPECT_EQ(t.text, text.substr(*t.start, *t.stop - *t.start)) << i;
    }
  }
}

// The texts, and bytes that are not UTF-8 (which the library repairs rather than refuses).
void ExpectInvariantsOnEveryText(const Tokenizer& tokenizer) {
  ASSERT_GE(Texts().size(), 100u);
  for (const std::string& text : Texts()) ExpectInvariants(tokenizer, text);
  ExpectInvariants(tokenizer, "bad \xFF\xFE utf8 \xC3 end\xE2\x82");
}

class TokenOffsetsGoldenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(TokenOffsetsGoldenTest, EqualHuggingFace) {
  const Tokenizer tokenizer = LoadVariant(GetParam());
  const std::vector<std::string> mismatches = GoldenMismatches(tokenizer, GetParam());
  EXPECT_TRUE(mismatches.empty()) << mismatches.size() << " texts differ; the first:\n"
                                  << absl::StrJoin(mismatches.begin(),
                                                   mismatches.begin() +
                                                       std::min<size_t>(mismatches.size(), 5),
                                                   "\n");
}

TEST_P(TokenOffsetsGoldenTest, KeepInvariants) {
  ExpectInvariantsOnEveryText(LoadVariant(GetParam()));
}

INSTANTIATE_TEST_SUITE_P(Variants, TokenOffsetsGoldenTest,
                         ::testing::Values("wordpiece.uncased", "wordpiece.cased",
                                           "wordpiece.cased_stripped", "wordpiece.raw",
                                           "wordpiece.added", "bpe.prefix", "bpe.no_prefix",
                                           "bpe.no_trim", "bpe.mask_strip", "tiny_bpe.base",
                                           "tiny_bpe.fuse_unk", "tiny_bpe.no_trim"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '.', '_');
                           return name;
                         });

// The comparison sees offsets alone: untrimmed offsets have the same ids as trimmed ones, and
// differ from their goldens on most texts.
TEST(TokenOffsetsGoldenCheck, DetectsOtherOffsets) {
  const std::vector<nlohmann::json> trimmed = ReadJsonLines(kData + "/bpe.prefix.jsonl");
  const std::vector<nlohmann::json> untrimmed = ReadJsonLines(kData + "/bpe.no_trim.jsonl");
  ASSERT_EQ(trimmed.size(), untrimmed.size());
  for (size_t i = 0; i < trimmed.size(); ++i) EXPECT_EQ(trimmed[i]["ids"], untrimmed[i]["ids"]);
  EXPECT_GE(GoldenMismatches(LoadVariant("bpe.no_trim"), "bpe.prefix").size(), 80u);
  EXPECT_GE(GoldenMismatches(LoadVariant("wordpiece.uncased"), "wordpiece.cased").size(), 20u);
}

std::vector<Token> Tokens(const Tokenizer& tokenizer, const std::string& text, bool special) {
  absl::StatusOr<std::vector<Token>> tokens = tokenizer.Tokenize(text, special);
  EXPECT_TRUE(tokens.ok()) << tokens.status();
  return tokens.ok() ? *std::move(tokens) : std::vector<Token>{};
}

std::vector<std::string> TokenTexts(const Tokenizer& tokenizer, const std::string& text) {
  std::vector<std::string> texts;
  for (const Token& t : Tokens(tokenizer, text, true)) texts.push_back(t.text);
  return texts;
}

std::vector<std::string> Spans(const Tokenizer& tokenizer, const std::string& text) {
  std::vector<std::string> spans;
  for (const Token& t : Tokens(tokenizer, text, true)) {
    spans.push_back(t.special ? "-" : absl::StrCat(*t.start, "-", *t.stop));
  }
  return spans;
}

// What the goldens say, readably: "##" pieces and lowercased, accent-stripped characters map to
// the original bytes; a word of unknown characters is one [UNK] over the word.
TEST(TokenOffsetsTest, WordPieceMapsNormalizedPiecesToTheOriginalBytes) {
  const Tokenizer t = LoadVariant("wordpiece.uncased");
  EXPECT_EQ(TokenTexts(t, "Caf\xC3\xA9 \xC4\xB0stanbul"),
            std::vector<std::string>(
                {"[CLS]", "Ca", "f\xC3\xA9", "\xC4\xB0s", "t", "an", "b", "ul", "[SEP]"}));
  EXPECT_EQ(
      Spans(t, "Caf\xC3\xA9 \xC4\xB0stanbul"),
      std::vector<std::string>({"-", "0-2", "2-5", "6-9", "9-10", "10-12", "12-13", "13-15", "-"}));
  // U+2603 snowman and U+1F600 are outside the vocabulary.
  EXPECT_EQ(TokenTexts(t, "x\xE2\x98\x83 \xF0\x9F\x98\x80!"),
            std::vector<std::string>({"[CLS]", "x\xE2\x98\x83", "\xF0\x9F\x98\x80", "!", "[SEP]"}));
  EXPECT_EQ(Tokens(t, "x\xE2\x98\x83", false).at(0).id, t.special_ids().unk);
}

// A byte-level piece holding part of a character spans the whole character, and trim_offsets
// takes the space off " world" and leaves a lone space piece empty.
TEST(TokenOffsetsTest, ByteLevelPiecesSpanWholeCharactersAndTrimSpaces) {
  const Tokenizer t = LoadVariant("bpe.prefix");
  EXPECT_EQ(Spans(t, "Hello world"),
            std::vector<std::string>({"-", "0-2", "2-4", "4-5", "6-11", "-"}));
  EXPECT_EQ(Spans(t, "caf\xC3\xA9 \xF0\x9F\x98\x80"),
            std::vector<std::string>({"-", "0-1", "1-2", "2-3", "3-5", "3-5", "6-6", "6-10", "6-10",
                                      "6-10", "6-10", "-"}));
  const Tokenizer untrimmed = LoadVariant("bpe.no_trim");
  EXPECT_EQ(Spans(untrimmed, "Hello world")[4], "5-11");
}

// SentencePiece: padless's own model and XLM-R's layout. A piece spans its surface in the
// original text (NFKC undone), with Hugging Face's whitespace and expansions
// (sentencepiece_offsets.h).
void ExpectSentencePieceOffsets(const Tokenizer& t) {
  ExpectInvariantsOnEveryText(t);
  // Full-width letters and the "ﬁ" ligature are normalized, yet the pieces cover the original
  // bytes, all but the spaces.
  const std::string nfkc = "\xEF\xBC\xB4\xEF\xBD\x88\xEF\xBD\x85   \xEF\xAC\x81rst cat";
  std::vector<bool> covered(nfkc.size(), false);
  for (const Token& token : Tokens(t, nfkc, false)) {
    std::fill(covered.begin() + *token.start, covered.begin() + *token.stop, true);
  }
  for (size_t i = 0; i < nfkc.size(); ++i) EXPECT_TRUE(covered[i] || nfkc[i] == ' ') << i;
  // Before a word, the last character of a run of whitespace goes with it, as in Hugging Face
  // (SentencePiece's own surface holds the whole run, or at the start of the text none of it).
  const std::string spaces = "a \t\xE3\x80\x80";  // a, space, tab, U+3000
  const std::vector<Token> run = Tokens(t, spaces + "cat", false);
  ASSERT_GE(run.size(), 2u);
  EXPECT_EQ(Describe(run[0]), absl::StrCat(run[0].id, "@0-1"));
  EXPECT_EQ(*run[1].start, 3u);
  EXPECT_EQ(*Tokens(t, " \n cat", false).at(0).start, 2u);
  // Every piece of an expansion ("ǈ" -> "Lj") spans the whole character.
  for (const Token& token : Tokens(t, "\xC7\x88", false)) {
    EXPECT_EQ(Describe(token), absl::StrCat(token.id, "@0-2"));
  }
  // U+2603 is unknown to the botchan models: the dummy prefix stands alone before it.
  const std::vector<Token> snowman = Tokens(t, "\xE2\x98\x83 cat", false);
  ASSERT_GE(snowman.size(), 2u);
  EXPECT_EQ(t.IdToPiece(snowman[0].id), "\xE2\x96\x81");
  EXPECT_EQ(Describe(snowman[0]), absl::StrCat(snowman[0].id, "@0-3"));
  EXPECT_EQ(snowman[1].id, t.special_ids().unk);
  EXPECT_EQ(Describe(snowman[1]), absl::StrCat(t.special_ids().unk, "@0-3"));
}

TEST(TokenOffsetsTest, PadlessSentencePiece) {
  const Tokenizer* t = testing::BotchanTokenizer();
  if (t == nullptr) GTEST_SKIP() << "no ../shared/data/botchan.txt";
  ExpectSentencePieceOffsets(*t);
  const std::vector<Token> tokens = Tokens(*t, "I am a cat.", true);
  EXPECT_EQ(tokens.front().text, "[CLS]");
  EXPECT_EQ(tokens.back().text, "[SEP]");
}

TEST(TokenOffsetsTest, XlmrSentencePiece) {
  const std::string botchan = testing::SharedDataFile("botchan.txt");
  if (botchan.empty()) GTEST_SKIP() << "no botchan.txt";
  std::string error;
  const std::string model = testing::TrainDefaultLayoutModel(botchan, 500, &error);
  ASSERT_FALSE(model.empty()) << error;
  const std::string dir = ::testing::TempDir() + "/token_offsets_xlmr";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/sentencepiece.bpe.model", std::ios::binary | std::ios::trunc) << model;
  absl::StatusOr<Tokenizer> t = Tokenizer::Load(dir);
  ASSERT_TRUE(t.ok()) << t.status();
  ExpectSentencePieceOffsets(*t);
  const std::vector<Token> tokens = Tokens(*t, "I am a cat.", true);
  EXPECT_EQ(Describe(tokens.front()), "0*");
  EXPECT_EQ(tokens.front().text, "<s>");
  EXPECT_EQ(tokens.back().text, "</s>");
}

}  // namespace
}  // namespace padless::tokenize::token_offsets_test
