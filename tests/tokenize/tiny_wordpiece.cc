#include "tiny_wordpiece.h"

#include <filesystem>
#include <fstream>
#include <vector>

#include "gtest/gtest.h"

namespace padless::tokenize::testing {

nlohmann::json SpecialAddedTokens(const std::vector<std::string>& pieces, int count) {
  nlohmann::json added = nlohmann::json::array();
  for (int id = 0; id < count; ++id) {
    added.push_back({{"id", id},
                     {"content", pieces[id]},
                     {"special", true},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", false}});
  }
  return added;
}

nlohmann::json TinyWordPieceJson() {
  const std::vector<std::string> pieces = {
      "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "world", "un", "##aff", "##able",
      ",",     "!",     "a",     "##b",   "cafe",   "中",    "'",     "s",  "."};
  nlohmann::json vocab = nlohmann::json::object();
  for (size_t i = 0; i < pieces.size(); ++i) vocab[pieces[i]] = i;
  const nlohmann::json added = SpecialAddedTokens(pieces, 5);
  const auto special = [](const char* id, int type) {
    return nlohmann::json{{"SpecialToken", {{"id", id}, {"type_id", type}}}};
  };
  const auto sequence = [](const char* id, int type) {
    return nlohmann::json{{"Sequence", {{"id", id}, {"type_id", type}}}};
  };
  return {
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", added},
      {"normalizer",
       {{"type", "BertNormalizer"},
        {"clean_text", true},
        {"handle_chinese_chars", true},
        {"strip_accents", nullptr},
        {"lowercase", true}}},
      {"pre_tokenizer", {{"type", "BertPreTokenizer"}}},
      {"post_processor",
       {{"type", "TemplateProcessing"},
        {"single", {special("[CLS]", 0), sequence("A", 0), special("[SEP]", 0)}},
        {"pair",
         {special("[CLS]", 0), sequence("A", 0), special("[SEP]", 0), sequence("B", 1),
          special("[SEP]", 1)}},
        {"special_tokens",
         {{"[CLS]", {{"id", "[CLS]"}, {"ids", {2}}, {"tokens", {"[CLS]"}}}},
          {"[SEP]", {{"id", "[SEP]"}, {"ids", {3}}, {"tokens", {"[SEP]"}}}}}}}},
      {"decoder", {{"type", "WordPiece"}, {"prefix", "##"}, {"cleanup", true}}},
      {"model",
       {{"type", "WordPiece"},
        {"unk_token", "[UNK]"},
        {"continuing_subword_prefix", "##"},
        {"max_input_chars_per_word", 10},
        {"vocab", vocab}}},
  };
}

std::string WriteTemp(const std::string& name, const std::string& content) {
  const std::string dir = ::testing::TempDir() + "/tiny_wordpiece_" +
                          ::testing::UnitTest::GetInstance()->current_test_info()->name();
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/" + name;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << content;
  return path;
}

}  // namespace padless::tokenize::testing
