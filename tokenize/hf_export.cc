#include "hf_export.h"

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "padless/report/atomic_file_writer.h"

namespace padless::tokenize::internal {
namespace {

std::string Piece(const WordPieceSpec& spec, int32_t id) {
  return id >= 0 && id < static_cast<int32_t>(spec.pieces.size()) ? spec.pieces[id] : "";
}

nlohmann::json SpecialTokensMap(const WordPieceSpec& spec) {
  const SpecialIds& s = spec.special_ids;
  nlohmann::json map = {{"unk_token", Piece(spec, s.unk)},
                        {"sep_token", Piece(spec, s.sep)},
                        {"pad_token", Piece(spec, s.pad)},
                        {"cls_token", Piece(spec, s.cls)}};
  if (s.mask >= 0) map["mask_token"] = Piece(spec, s.mask);
  return map;
}

nlohmann::json TokenizerConfig(const WordPieceSpec& spec) {
  nlohmann::json config = SpecialTokensMap(spec);
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

}  // namespace

absl::Status WriteWordPieceHfFiles(const WordPieceSpec& spec, const std::string& dir) {
  std::string vocab;
  for (int32_t id = 0; id < spec.model_vocab_size; ++id)
    absl::StrAppend(&vocab, spec.pieces[id], "\n");
  const std::pair<const char*, std::string> files[] = {
      {"tokenizer.json", spec.json},
      {"vocab.txt", vocab},
      {"tokenizer_config.json", TokenizerConfig(spec).dump(2) + "\n"},
      {"special_tokens_map.json", SpecialTokensMap(spec).dump(2) + "\n"},
  };
  for (const auto& [name, content] : files) {
    if (absl::Status s = report::WriteFileAtomically(absl::StrCat(dir, "/", name), content);
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

}  // namespace padless::tokenize::internal
