#include "hf_export.h"

#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "padless/base/atomic_file_writer.h"

namespace padless::tokenize::internal {
namespace {

std::string Piece(const std::vector<std::string>& pieces, int32_t id) {
  return id >= 0 && id < static_cast<int32_t>(pieces.size()) ? pieces[id] : "";
}

nlohmann::json SpecialTokensMap(const std::vector<std::string>& pieces, const SpecialIds& s) {
  nlohmann::json map = {{"unk_token", Piece(pieces, s.unk)},
                        {"sep_token", Piece(pieces, s.sep)},
                        {"pad_token", Piece(pieces, s.pad)},
                        {"cls_token", Piece(pieces, s.cls)}};
  if (s.mask >= 0) map["mask_token"] = Piece(pieces, s.mask);
  return map;
}

// RoBERTa's map also names <s> and </s> as bos and eos.
nlohmann::json RobertaSpecialTokensMap(const ByteLevelBpeSpec& spec) {
  nlohmann::json map = SpecialTokensMap(spec.pieces, spec.special_ids);
  map["bos_token"] = Piece(spec.pieces, spec.special_ids.cls);
  map["eos_token"] = Piece(spec.pieces, spec.special_ids.sep);
  return map;
}

nlohmann::json WordPieceConfig(const WordPieceSpec& spec) {
  nlohmann::json config = SpecialTokensMap(spec.pieces, spec.special_ids);
  config["tokenizer_class"] = "BertTokenizer";
  config["do_lower_case"] = spec.has_normalizer && spec.normalizer.lowercase;
  config["tokenize_chinese_chars"] = spec.has_normalizer && spec.normalizer.handle_chinese_chars;
  config["strip_accents"] = spec.has_normalizer && spec.normalizer.strip_accents.has_value()
                                ? nlohmann::json(*spec.normalizer.strip_accents)
                                : nlohmann::json(nullptr);
  config["clean_up_tokenization_spaces"] = spec.decode_cleanup;
  config["model_max_length"] = 512;
  return config;
}

// RoBERTa's map, or for BERT-framed files (ModernBERT's) the plain one: no bos and eos.
nlohmann::json BpeSpecialTokensMap(const ByteLevelBpeSpec& spec) {
  return spec.template_style == TemplateStyle::kBert
             ? SpecialTokensMap(spec.pieces, spec.special_ids)
             : RobertaSpecialTokensMap(spec);
}

nlohmann::json ByteLevelBpeConfig(const ByteLevelBpeSpec& spec) {
  nlohmann::json config = BpeSpecialTokensMap(spec);
  // A BERT-framed file (ModernBERT's) is taken as it is, template and normalizer included, as
  // ModernBERT's own tokenizer_config.json asks; RobertaTokenizer would frame it as RoBERTa.
  config["tokenizer_class"] =
      spec.template_style == TemplateStyle::kBert ? "PreTrainedTokenizerFast" : "RobertaTokenizer";
  config["add_prefix_space"] = spec.add_prefix_space;
  config["clean_up_tokenization_spaces"] = false;
  config["model_max_length"] = 512;
  return config;
}

absl::Status WriteFiles(const std::string& dir,
                        const std::vector<std::pair<std::string, std::string>>& files) {
  for (const auto& [name, content] : files) {
    if (absl::Status s = base::WriteFileAtomically(absl::StrCat(dir, "/", name), content);
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status WriteWordPieceHfFiles(const WordPieceSpec& spec, const std::string& dir) {
  std::string vocab;
  for (int32_t id = 0; id < spec.model_vocab_size; ++id)
    absl::StrAppend(&vocab, spec.pieces[id], "\n");
  return WriteFiles(dir, {{"tokenizer.json", spec.json},
                          {"vocab.txt", vocab},
                          {"tokenizer_config.json", WordPieceConfig(spec).dump(2) + "\n"},
                          {"special_tokens_map.json",
                           SpecialTokensMap(spec.pieces, spec.special_ids).dump(2) + "\n"}});
}

absl::Status WriteByteLevelBpeHfFiles(const ByteLevelBpeSpec& spec, const std::string& dir) {
  nlohmann::json vocab = nlohmann::json::object();
  for (int32_t id = 0; id < spec.model_vocab_size; ++id) vocab[spec.pieces[id]] = id;
  std::string merges = "#version: 0.2\n";
  for (const auto& [left, right] : spec.merges) absl::StrAppend(&merges, left, " ", right, "\n");
  return WriteFiles(
      dir, {{"tokenizer.json", spec.json},
            {"vocab.json", vocab.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)},
            {"merges.txt", merges},
            {"tokenizer_config.json", ByteLevelBpeConfig(spec).dump(2) + "\n"},
            {"special_tokens_map.json", BpeSpecialTokensMap(spec).dump(2) + "\n"}});
}

}  // namespace padless::tokenize::internal
