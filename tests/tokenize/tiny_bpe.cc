#include "tiny_bpe.h"

#include <string>
#include <vector>

#include "tiny_wordpiece.h"

namespace padless::tokenize::testing {

nlohmann::json TinyByteLevelBpeJson() {
  const std::vector<std::string> pieces = {"<s>", "<pad>", "</s>", "<unk>", "<mask>", "a",
                                           "b",   "c",     "Ġ",    "bc",    "abc",    "Ġa"};
  nlohmann::json vocab = nlohmann::json::object();
  for (size_t i = 0; i < pieces.size(); ++i) vocab[pieces[i]] = i;
  nlohmann::json added = SpecialAddedTokens(pieces, 5);
  added[4]["lstrip"] = true;  // as roberta-base's <mask>
  const nlohmann::json byte_level = {{"type", "ByteLevel"},
                                     {"add_prefix_space", false},
                                     {"trim_offsets", true},
                                     {"use_regex", true}};
  return {{"version", "1.0"},
          {"truncation", nullptr},
          {"padding", nullptr},
          {"added_tokens", added},
          {"normalizer", nullptr},
          {"pre_tokenizer", byte_level},
          {"post_processor",
           {{"type", "RobertaProcessing"},
            {"sep", {"</s>", 2}},
            {"cls", {"<s>", 0}},
            {"trim_offsets", true},
            {"add_prefix_space", false}}},
          {"decoder", byte_level},
          {"model",
           {{"type", "BPE"},
            {"dropout", nullptr},
            {"unk_token", "<unk>"},
            {"continuing_subword_prefix", nullptr},
            {"end_of_word_suffix", nullptr},
            {"fuse_unk", false},
            {"byte_fallback", false},
            {"ignore_merges", false},
            {"vocab", vocab},
            {"merges", nlohmann::json::array({nlohmann::json::array({"b", "c"}),
                                              nlohmann::json::array({"Ġ", "a"})})}}}};
}

}  // namespace padless::tokenize::testing
