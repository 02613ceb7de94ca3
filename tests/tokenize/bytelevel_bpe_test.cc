// Byte-level BPE from a Hugging Face tokenizer.json (RoBERTa / GPT-2 style): parity with Python
// `tokenizers` and the backend's details.
// Parity: tests/tokenize/data/bytelevel_bpe/tokenizer.json was trained offline with `tokenizers`
// on botchan.txt (vocabulary 2000, ByteLevel pre-tokenizer with add_prefix_space,
// RobertaProcessing; see bytelevel_bpe_refs.py, which also wrote the goldens beside it). The test
// compares padless's ids, with and without special tokens, single texts and pairs, for every text
// of data/sst2_dev.tsv, 200 IMDB reviews, sst2 pairs and edge texts, to those goldens, for the file
// and for its add_prefix_space=false variant; and decoding against tokenizers' decode. It needs
// no Python. The poison tests show the comparison fails for shuffled merges or an off byte map.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "padless/tokenize/tokenizer.h"
#include "parity_util.h"
#include "tiny_bpe.h"

namespace padless::tokenize {
namespace {

using ::testing::ElementsAre;
using testing::ExpectSameIds;
using testing::PadlessLines;
using testing::ReadLines;
using testing::TextSet;

const std::string kSource = PADLESS_SOURCE_DIR;
const std::string kData = kSource + "/tests/tokenize/data/bytelevel_bpe";
constexpr size_t kImdbTexts = 200;

TextSet Texts(const std::string& name) {
  return testing::LoadTextSet(name, kSource, kData + "/edge_texts.jsonl", kImdbTexts);
}

nlohmann::json ReferenceJson() {
  std::ifstream in(kData + "/tokenizer.json");
  std::stringstream text;
  text << in.rdbuf();
  return nlohmann::json::parse(text.str());
}

// The reference tokenizer ("prefix") or its add_prefix_space=false variant ("no_prefix"), edited
// as bytelevel_bpe_refs.py edits it.
nlohmann::json VariantJson(const std::string& variant) {
  nlohmann::json j = ReferenceJson();
  if (variant == "no_prefix") {
    j["pre_tokenizer"]["add_prefix_space"] = false;
    j["post_processor"]["add_prefix_space"] = false;
  }
  return j;
}

Tokenizer LoadJson(const nlohmann::json& j) {
  absl::StatusOr<Tokenizer> t = Tokenizer::FromSerialized(j.dump());
  EXPECT_TRUE(t.ok()) << t.status();
  return *std::move(t);
}

// EncodePieces of every text of a single-text set, in the goldens' line format.
std::vector<std::string> PieceLines(const Tokenizer& tokenizer, const TextSet& set) {
  std::vector<std::string> lines;
  for (const std::string& text : set.first) {
    absl::StatusOr<std::vector<int32_t>> ids = tokenizer.EncodePieces(text);
    lines.push_back(ids.ok() ? absl::StrJoin(*ids, " ") : ids.status().ToString());
  }
  return lines;
}

std::string Golden(const std::string& variant, const std::string& file) {
  return kData + "/" + variant + "." + file;
}

class ByteLevelBpeParityTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ByteLevelBpeParityTest, IdsEqualHuggingFace) {
  const std::string variant = GetParam();
  const Tokenizer tokenizer = LoadJson(VariantJson(variant));
  EXPECT_EQ(tokenizer.backend_name(), "byte-level BPE (tokenizer.json)");
  int checked = 0;
  for (const std::string name : {"sst2", "imdb", "pairs", "edge"}) {
    const std::string golden = Golden(variant, name + ".ids");
    if (!std::ifstream(golden)) continue;
    const TextSet set = Texts(name);
    ExpectSameIds(ReadLines(golden), PadlessLines(tokenizer, set), set, set.first.size(),
                  variant + "." + name);
    ++checked;
  }
  for (const std::string name : {"sst2", "edge"}) {
    const TextSet set = Texts(name);
    ExpectSameIds(ReadLines(Golden(variant, name + ".nospecial.ids")), PieceLines(tokenizer, set),
                  set, set.first.size(), variant + "." + name + " without special tokens");
  }
  EXPECT_GE(checked, 2);
}

// Decoding the content ids gives tokenizers' decode (which, like padless, keeps the prefix space
// the pre-tokenizer added). Texts with literal special tokens are left out: tokenizers' decode
// skips every special token, padless keeps <unk>.
TEST_P(ByteLevelBpeParityTest, DecodeEqualsHuggingFace) {
  const std::string variant = GetParam();
  const Tokenizer tokenizer = LoadJson(VariantJson(variant));
  const TextSet set = Texts("edge");
  const std::vector<std::string> decoded = ReadLines(Golden(variant, "edge.decoded.jsonl"));
  ASSERT_EQ(decoded.size(), set.first.size());
  int compared = 0;
  for (size_t i = 0; i < set.first.size(); ++i) {
    if (set.first[i].find('<') != std::string::npos) continue;
    absl::StatusOr<std::vector<int32_t>> ids = tokenizer.EncodePieces(set.first[i]);
    ASSERT_TRUE(ids.ok());
    absl::StatusOr<std::string> text = tokenizer.Decode(*ids);
    ASSERT_TRUE(text.ok()) << text.status();
    EXPECT_EQ(*text, nlohmann::json::parse(decoded[i]).get<std::string>()) << set.first[i];
    ++compared;
  }
  EXPECT_GE(compared, 40);
}

// Byte-level BPE loses nothing: decode(encode(text)) is the text, after the prefix space.
TEST_P(ByteLevelBpeParityTest, DecodeRoundTrips) {
  const bool prefix = GetParam() == "prefix";
  const Tokenizer tokenizer = LoadJson(VariantJson(GetParam()));
  for (const std::string name : {"sst2", "imdb"}) {
    for (const std::string& text : Texts(name).first) {
      absl::StatusOr<Encoding> e = tokenizer.Encode(text, EncodeOptions{0});
      ASSERT_TRUE(e.ok());
      absl::StatusOr<std::string> decoded = tokenizer.Decode(e->ids);
      ASSERT_TRUE(decoded.ok());
      const bool prefixed = prefix && !text.empty() && text.front() != ' ';
      EXPECT_EQ(*decoded, prefixed ? " " + text : text);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Variants, ByteLevelBpeParityTest,
                         ::testing::Values("prefix", "no_prefix"));

TEST(ByteLevelBpeTest, SpecialIdsAndRobertaTemplate) {
  const Tokenizer tokenizer = LoadJson(ReferenceJson());
  const SpecialIds& s = tokenizer.special_ids();
  EXPECT_THAT(std::vector<int32_t>({s.pad, s.unk, s.cls, s.sep, s.mask}),
              ElementsAre(1, 3, 0, 2, 4));
  EXPECT_EQ(tokenizer.vocab_size(), 2000);
  EXPECT_EQ(tokenizer.file_name(), "tokenizer.json");
  EXPECT_EQ(tokenizer.PieceToId("<mask>"), 4);
  EXPECT_EQ(tokenizer.PieceToId("no such piece"), 3);
  absl::StatusOr<Encoding> pair = tokenizer.EncodePair("a", "b", EncodeOptions{0});
  ASSERT_TRUE(pair.ok());
  ASSERT_EQ(pair->ids.size(), 6u);
  EXPECT_EQ(pair->ids[2], 2);
  EXPECT_EQ(pair->ids[3], 2);
  EXPECT_EQ(pair->type_ids, std::vector<int8_t>(6, 0));
}

// Older files write merges as "left right" strings: the same merges, the same ids.
TEST(ByteLevelBpeTest, MergesAsStringsGiveTheSameIds) {
  nlohmann::json j = ReferenceJson();
  for (nlohmann::json& merge : j["model"]["merges"]) {
    merge = merge[0].get<std::string>() + " " + merge[1].get<std::string>();
  }
  const TextSet set = Texts("edge");
  ExpectSameIds(ReadLines(Golden("prefix", "edge.ids")), PadlessLines(LoadJson(j), set), set,
                set.first.size(), "string merges");
}

// A ByteLevelBPETokenizer's ByteLevel post-processor, a RoBERTa TemplateProcessing, or none:
// the same ids (padless frames every text with <s> ... </s>, where tokenizers would add nothing
// for ByteLevel or none).
TEST(ByteLevelBpeTest, OtherPostProcessorsGiveTheRobertaFrame) {
  const auto special = [](const char* id) {
    return nlohmann::json{{"SpecialToken", {{"id", id}, {"type_id", 0}}}};
  };
  const auto sequence = [](const char* id) {
    return nlohmann::json{{"Sequence", {{"id", id}, {"type_id", 0}}}};
  };
  const nlohmann::json template_processing = {
      {"type", "TemplateProcessing"},
      {"single", {special("<s>"), sequence("A"), special("</s>")}},
      {"pair",
       {special("<s>"), sequence("A"), special("</s>"), special("</s>"), sequence("B"),
        special("</s>")}},
      {"special_tokens",
       {{"<s>", {{"id", "<s>"}, {"ids", {0}}, {"tokens", {"<s>"}}}},
        {"</s>", {{"id", "</s>"}, {"ids", {2}}, {"tokens", {"</s>"}}}}}}};
  const nlohmann::json processors[] = {
      {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}},
      template_processing,
      nullptr};
  for (const std::string name : {"edge", "pairs"}) {
    const TextSet set = Texts(name);
    for (const nlohmann::json& processor : processors) {
      nlohmann::json j = ReferenceJson();
      j["post_processor"] = processor;
      ExpectSameIds(ReadLines(Golden("prefix", name + ".ids")), PadlessLines(LoadJson(j), set), set,
                    set.first.size(), name + " with post_processor " + processor.dump());
    }
  }
}

// How many lines of `golden` a tokenizer built from `j` gets wrong on the sst2 set.
size_t DifferingSst2Lines(const nlohmann::json& j) {
  const TextSet set = Texts("sst2");
  const std::vector<std::string> got = PadlessLines(LoadJson(j), set);
  const std::vector<std::string> want = ReadLines(Golden("prefix", "sst2.ids"));
  size_t differ = 0;
  for (size_t i = 0; i < std::min(got.size(), want.size()); ++i) differ += got[i] != want[i];
  return differ;
}

// Poison: the comparison does fail when the merge order is wrong.
TEST(ByteLevelBpeTest, ShuffledMergesAreDetected) {
  nlohmann::json j = ReferenceJson();
  nlohmann::json& merges = j["model"]["merges"];
  std::reverse(merges.begin(), merges.end());
  EXPECT_GE(DifferingSst2Lines(j), 400u);
}

// Poison: a byte map that swaps two bytes (space and 'e': every piece spelled with one now has
// the other) is detected too.
TEST(ByteLevelBpeTest, OffByteMappingIsDetected) {
  const auto swap = [](const std::string& piece) {
    std::string out;
    for (size_t i = 0; i < piece.size(); ++i) {
      if (piece.compare(i, 2, "Ġ") == 0) {
        out += "e";
        ++i;
      } else {
        out += piece[i] == 'e' ? std::string("Ġ") : std::string(1, piece[i]);
      }
    }
    return out;
  };
  nlohmann::json j = ReferenceJson();
  nlohmann::json vocab = nlohmann::json::object();
  for (const auto& [piece, id] : j["model"]["vocab"].items()) vocab[swap(piece)] = id;
  j["model"]["vocab"] = vocab;
  for (nlohmann::json& merge : j["model"]["merges"]) {
    merge = {swap(merge[0].get<std::string>()), swap(merge[1].get<std::string>())};
  }
  EXPECT_GE(DifferingSst2Lines(j), 400u);
}

std::vector<int32_t> Pieces(const Tokenizer& t, const std::string& text) {
  absl::StatusOr<std::vector<int32_t>> ids = t.EncodePieces(text);
  EXPECT_TRUE(ids.ok()) << ids.status();
  return ids.ok() ? *ids : std::vector<int32_t>{};
}

// The tiny file's ids, as Hugging Face `tokenizers` 0.23 gives them (see tiny_bpe.h).
TEST(ByteLevelBpeTest, UnknownCharactersLstripAndIgnoreMerges) {
  nlohmann::json j = testing::TinyByteLevelBpeJson();
  Tokenizer tokenizer = LoadJson(j);
  EXPECT_THAT(Pieces(tokenizer, "abc"), ElementsAre(5, 9));
  EXPECT_THAT(Pieces(tokenizer, "abc abc"), ElementsAre(5, 9, 11, 9));
  EXPECT_THAT(Pieces(tokenizer, "a x b"), ElementsAre(5, 8, 3, 8, 6));
  EXPECT_THAT(Pieces(tokenizer, "xx"), ElementsAre(3, 3));
  EXPECT_THAT(Pieces(tokenizer, "a <mask>"), ElementsAre(5, 4));
  EXPECT_THAT(Pieces(tokenizer, "a  <mask> b"), ElementsAre(5, 4, 8, 6));
  j["model"]["ignore_merges"] = true;
  tokenizer = LoadJson(j);
  EXPECT_THAT(Pieces(tokenizer, "abc"), ElementsAre(10));
  EXPECT_THAT(Pieces(tokenizer, "abc abc"), ElementsAre(10, 11, 9));
  j["model"]["fuse_unk"] = true;
  EXPECT_THAT(Pieces(LoadJson(j), "axxb"), ElementsAre(5, 3, 6));
  j["model"]["unk_token"] = nullptr;  // without an unk_token, unknown characters vanish
  EXPECT_THAT(Pieces(LoadJson(j), "axxb"), ElementsAre(5, 6));
}

TEST(ByteLevelBpeTest, ExportHuggingFaceWritesTheFileBackAndTheRobertaConfig) {
  const std::string json = ReferenceJson().dump(2);
  absl::StatusOr<Tokenizer> tokenizer = Tokenizer::FromSerialized(json);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  const std::string dir = ::testing::TempDir() + "/bytelevel_bpe_export";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  ASSERT_TRUE(tokenizer->ExportHuggingFace(dir).ok());
  std::ifstream in(dir + "/tokenizer.json");
  std::stringstream written;
  written << in.rdbuf();
  EXPECT_EQ(written.str(), json);
  std::ifstream map_file(dir + "/special_tokens_map.json");
  const nlohmann::json map = nlohmann::json::parse(map_file);
  EXPECT_EQ(map.at("bos_token"), "<s>");
  EXPECT_EQ(map.at("eos_token"), "</s>");
  EXPECT_EQ(map.at("pad_token"), "<pad>");
  EXPECT_EQ(map.at("mask_token"), "<mask>");
  std::ifstream config_file(dir + "/tokenizer_config.json");
  const nlohmann::json config = nlohmann::json::parse(config_file);
  EXPECT_EQ(config.at("tokenizer_class"), "RobertaTokenizer");
  EXPECT_EQ(config.at("add_prefix_space"), true);
  EXPECT_EQ(testing::ReadLines(dir + "/merges.txt").size(),
            ReferenceJson()["model"]["merges"].size() + 1);
  absl::StatusOr<Tokenizer> reloaded = Tokenizer::Load(dir);
  ASSERT_TRUE(reloaded.ok()) << reloaded.status();
  EXPECT_EQ(Pieces(*reloaded, "Hello, world!"), Pieces(*tokenizer, "Hello, world!"));
}

// A 200 000-character word (no spaces) merges in O(n log n), as tokenizers merges it, and
// round-trips.
TEST(ByteLevelBpeTest, LongWordWithoutSpaces) {
  const Tokenizer tokenizer = LoadJson(ReferenceJson());
  std::string word;
  for (int i = 0; i < 20000; ++i) word += "Botchanwas";
  const std::vector<int32_t> ids = Pieces(tokenizer, word);
  // Hugging Face `tokenizers` 0.23.3: 100000 ids, starting 440 304 1781 91 290 38 304, summing
  // to 50080402.
  ASSERT_EQ(ids.size(), 100000u);
  EXPECT_THAT(std::vector<int32_t>(ids.begin(), ids.begin() + 7),
              ElementsAre(440, 304, 1781, 91, 290, 38, 304));
  int64_t sum = 0;
  for (int32_t id : ids) sum += id;
  EXPECT_EQ(sum, 50080402);
  absl::StatusOr<std::string> decoded = tokenizer.Decode(ids);
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(*decoded, " " + word);
}

// The backend holds no mutable state: threads encoding at once get the goldens.
TEST(ByteLevelBpeTest, ConcurrentEncodingMatchesTheGoldens) {
  const Tokenizer tokenizer = LoadJson(ReferenceJson());
  const TextSet set = Texts("sst2");
  const std::vector<std::string> want = ReadLines(Golden("prefix", "sst2.ids"));
  std::vector<size_t> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < mismatches.size(); ++t) {
    threads.emplace_back([&, t] {
      const std::vector<std::string> got = PadlessLines(tokenizer, set);
      for (size_t i = 0; i < want.size(); ++i) mismatches[t] += got[i] != want[i];
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_THAT(mismatches, ElementsAre(0, 0, 0, 0));
}

}  // namespace
}  // namespace padless::tokenize
