#include "hf_tokenizer_json.h"

#include <algorithm>
#include <utility>

#include <nlohmann/json.hpp>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace padless::tokenize::internal {
namespace {

using nlohmann::json;

absl::Status Invalid(const std::string& origin, absl::string_view field, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(origin, ": ", field, ": ", why));
}

absl::StatusOr<json> ParseJson(const std::string& text, const std::string& origin) {
  try {
    json root = json::parse(text);
    if (!root.is_object()) return Invalid(origin, "tokenizer.json", "is not a JSON object");
    return root;
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(origin, ": not valid JSON: ", e.what()));
  }
}

// The object at root[key]; null when absent or null.
const json* Child(const json& root, const char* key) {
  const auto it = root.find(key);
  return it == root.end() || it->is_null() ? nullptr : &*it;
}

std::string TypeOf(const json& component) {
  const json* type = Child(component, "type");
  return type != nullptr && type->is_string() ? type->get<std::string>() : "";
}

absl::Status ParseModel(const json& model, const std::string& origin, WordPieceSpec* spec) {
  if (const std::string type = TypeOf(model); type != "WordPiece") {
    return absl::UnimplementedError(absl::StrCat(
        origin, ": tokenizer type '", type.empty() ? "<none>" : type,
        "' (model.type) is not supported: padless reads WordPiece tokenizer.json files and "
        "SentencePiece .model files (padless's own, or XLM-R's sentencepiece.bpe.model)"));
  }
  const json* vocab = Child(model, "vocab");
  if (vocab == nullptr || !vocab->is_object() || vocab->empty()) {
    return Invalid(origin, "model.vocab", "missing or not a non-empty object of piece: id");
  }
  const auto n = static_cast<int64_t>(vocab->size());
  spec->pieces.assign(static_cast<size_t>(n), std::string());
  std::vector<bool> seen(static_cast<size_t>(n), false);
  for (const auto& [piece, id] : vocab->items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= n) {
      return Invalid(origin, "model.vocab",
                     absl::StrCat("id ", id.dump(), " of '", piece, "' is outside [0, ", n, ")"));
    }
    const auto i = static_cast<size_t>(id.get<int64_t>());
    if (seen[i]) {
      return Invalid(
          origin, "model.vocab",
          absl::StrCat("id ", i, " is given to both '", spec->pieces[i], "' and '", piece, "'"));
    }
    seen[i] = true;
    spec->pieces[i] = piece;
  }
  spec->model_vocab_size = static_cast<int32_t>(n);
  if (const json* unk = Child(model, "unk_token"); unk != nullptr && unk->is_string()) {
    spec->unk_token = unk->get<std::string>();
  }
  if (!vocab->contains(spec->unk_token)) {
    return Invalid(origin, "model.unk_token",
                   absl::StrCat("'", spec->unk_token, "' is not in model.vocab"));
  }
  if (const json* p = Child(model, "continuing_subword_prefix"); p != nullptr && p->is_string()) {
    spec->continuing_subword_prefix = p->get<std::string>();
  }
  if (const json* m = Child(model, "max_input_chars_per_word"); m != nullptr) {
    if (!m->is_number_integer() || m->get<int64_t>() < 0) {
      return Invalid(origin, "model.max_input_chars_per_word", "is not a non-negative integer");
    }
    spec->max_input_chars_per_word = m->get<int64_t>();
  }
  return absl::OkStatus();
}

// Added tokens keep their ids: inside the vocabulary they must name the same piece, beyond it
// they extend the id range without gaps.
absl::Status ParseAddedTokens(const json& root, const std::string& origin, WordPieceSpec* spec) {
  const json* added = Child(root, "added_tokens");
  if (added == nullptr) return absl::OkStatus();
  if (!added->is_array()) return Invalid(origin, "added_tokens", "is not an array");
  for (const json& t : *added) {
    const json* content = t.is_object() ? Child(t, "content") : nullptr;
    const json* id = t.is_object() ? Child(t, "id") : nullptr;
    if (content == nullptr || !content->is_string() || id == nullptr || !id->is_number_integer() ||
        id->get<int64_t>() < 0 || id->get<int64_t>() > (1 << 30)) {
      return Invalid(origin, "added_tokens",
                     absl::StrCat("entry ", t.dump(),
                                  " lacks a content "
                                  "string or a valid id"));
    }
    if (t.value("single_word", false)) {
      return absl::UnimplementedError(absl::StrCat(origin, ": added_tokens: '",
                                                   content->get<std::string>(),
                                                   "' has single_word, which padless does not "
                                                   "support"));
    }
    // lstrip / rstrip only decide whether whitespace next to the token is dropped; the
    // BertPreTokenizer drops it anyway, so they cannot change WordPiece ids.
    const bool special = t.value("special", false);
    AddedToken token{content->get<std::string>(), static_cast<int32_t>(id->get<int64_t>()), special,
                     t.value("normalized", !special)};
    const auto i = static_cast<size_t>(token.id);
    if (i >= spec->pieces.size()) spec->pieces.resize(i + 1);
    if (!spec->pieces[i].empty() && spec->pieces[i] != token.content) {
      return Invalid(
          origin, "added_tokens",
          absl::StrCat("id ", i, " of '", token.content, "' is already '", spec->pieces[i], "'"));
    }
    spec->pieces[i] = token.content;
    spec->added_tokens.push_back(std::move(token));
  }
  for (size_t i = static_cast<size_t>(spec->model_vocab_size); i < spec->pieces.size(); ++i) {
    if (spec->pieces[i].empty()) {
      return Invalid(origin, "added_tokens", absl::StrCat("no token has id ", i));
    }
  }
  return absl::OkStatus();
}

absl::Status ParseNormalizer(const json& root, const std::string& origin, WordPieceSpec* spec) {
  const json* n = Child(root, "normalizer");
  spec->has_normalizer = n != nullptr;
  if (n == nullptr) return absl::OkStatus();
  if (const std::string type = TypeOf(*n); type != "BertNormalizer") {
    return absl::UnimplementedError(absl::StrCat(origin, ": normalizer.type '", type,
                                                 "' is not supported (only BertNormalizer)"));
  }
  BertNormalizerOptions& o = spec->normalizer;
  o.clean_text = n->value("clean_text", true);
  o.handle_chinese_chars = n->value("handle_chinese_chars", true);
  o.lowercase = n->value("lowercase", true);
  if (const json* s = Child(*n, "strip_accents"); s != nullptr) {
    if (!s->is_boolean()) return Invalid(origin, "normalizer.strip_accents", "is not a boolean");
    o.strip_accents = s->get<bool>();
  }
  return absl::OkStatus();
}

absl::Status CheckPreTokenizerAndDecoder(const json& root, const std::string& origin,
                                         WordPieceSpec* spec) {
  const json* p = Child(root, "pre_tokenizer");
  if (p == nullptr || TypeOf(*p) != "BertPreTokenizer") {
    return absl::UnimplementedError(absl::StrCat(origin, ": pre_tokenizer.type '",
                                                 p == nullptr ? "<none>" : TypeOf(*p),
                                                 "' is not supported (only BertPreTokenizer)"));
  }
  if (const json* d = Child(root, "decoder"); d != nullptr && TypeOf(*d) == "WordPiece") {
    spec->decode_cleanup = d->value("cleanup", true);
  }
  return absl::OkStatus();
}

// The id of a template special token: its entry in post_processor.special_tokens.
absl::StatusOr<int32_t> TemplateSpecialId(const json& processor, const json& item,
                                          const std::string& origin) {
  const json* special = Child(item, "SpecialToken");
  const json* tokens = Child(processor, "special_tokens");
  const std::string name = special != nullptr ? special->value("id", std::string()) : "";
  const json* entry = tokens != nullptr && !name.empty() ? Child(*tokens, name.c_str()) : nullptr;
  const json* ids = entry != nullptr ? Child(*entry, "ids") : nullptr;
  if (ids == nullptr || !ids->is_array() || ids->size() != 1 || !(*ids)[0].is_number_integer()) {
    return Invalid(origin, "post_processor.special_tokens",
                   absl::StrCat("no single id for template item ", item.dump()));
  }
  return (*ids)[0].get<int32_t>();
}

// post_processor.single must be [CLS] $A [SEP] and pair [CLS] $A [SEP] $B [SEP].
absl::Status ParseTemplate(const json& p, const std::string& origin, SpecialIds* ids) {
  const json* single = Child(p, "single");
  const json* pair = Child(p, "pair");
  const auto is_seq = [](const json& item, const char* id) {
    const json* s = Child(item, "Sequence");
    return s != nullptr && s->value("id", std::string()) == id;
  };
  const bool shape_ok = single != nullptr && single->is_array() && single->size() == 3 &&
                        is_seq((*single)[1], "A") && pair != nullptr && pair->is_array() &&
                        pair->size() == 5 && is_seq((*pair)[1], "A") && is_seq((*pair)[3], "B");
  if (!shape_ok) {
    return absl::UnimplementedError(
        absl::StrCat(origin,
                     ": post_processor: only BERT's template ([CLS] $A [SEP] and "
                     "[CLS] $A [SEP] $B [SEP]) is supported"));
  }
  absl::StatusOr<int32_t> cls = TemplateSpecialId(p, (*single)[0], origin);
  absl::StatusOr<int32_t> sep = TemplateSpecialId(p, (*single)[2], origin);
  if (!cls.ok()) return cls.status();
  if (!sep.ok()) return sep.status();
  for (int i : {0, 2, 4}) {
    absl::StatusOr<int32_t> id = TemplateSpecialId(p, (*pair)[i], origin);
    if (!id.ok()) return id.status();
    if (*id != (i == 0 ? *cls : *sep)) {
      return absl::UnimplementedError(absl::StrCat(
          origin, ": post_processor.pair uses other special tokens than post_processor.single"));
    }
  }
  ids->cls = *cls;
  ids->sep = *sep;
  return absl::OkStatus();
}

absl::StatusOr<int32_t> ProcessingId(const json& p, const char* key, const std::string& origin) {
  const json* entry = Child(p, key);
  if (entry == nullptr || !entry->is_array() || entry->size() != 2 ||
      !(*entry)[1].is_number_integer()) {
    return Invalid(origin, absl::StrCat("post_processor.", key), "is not [token, id]");
  }
  return (*entry)[1].get<int32_t>();
}

absl::Status ParseSpecialIds(const json& root, const std::string& origin, WordPieceSpec* spec) {
  const auto find = [&](const std::string& piece) -> int32_t {
    const auto it = std::find(spec->pieces.begin(), spec->pieces.end(), piece);
    return it == spec->pieces.end() ? -1 : static_cast<int32_t>(it - spec->pieces.begin());
  };
  SpecialIds& ids = spec->special_ids;
  ids = SpecialIds{find("[PAD]"), find(spec->unk_token), find("[CLS]"), find("[SEP]"),
                   find("[MASK]")};
  if (const json* p = Child(root, "post_processor"); p != nullptr) {
    const std::string type = TypeOf(*p);
    if (type == "TemplateProcessing") {
      if (absl::Status s = ParseTemplate(*p, origin, &ids); !s.ok()) return s;
    } else if (type == "BertProcessing") {
      absl::StatusOr<int32_t> cls = ProcessingId(*p, "cls", origin);
      absl::StatusOr<int32_t> sep = ProcessingId(*p, "sep", origin);
      if (!cls.ok()) return cls.status();
      if (!sep.ok()) return sep.status();
      ids.cls = *cls;
      ids.sep = *sep;
    } else {
      return absl::UnimplementedError(
          absl::StrCat(origin, ": post_processor.type '", type,
                       "' is not supported (TemplateProcessing or BertProcessing)"));
    }
  }
  if (const json* padding = Child(root, "padding"); padding != nullptr) {
    if (const json* pad = Child(*padding, "pad_id"); pad != nullptr && pad->is_number_integer()) {
      ids.pad = pad->get<int32_t>();
    }
  }
  const int32_t size = static_cast<int32_t>(spec->pieces.size());
  const std::pair<const char*, int32_t> required[] = {
      {"[PAD] (padding.pad_id)", ids.pad}, {"[CLS]", ids.cls}, {"[SEP]", ids.sep}};
  for (const auto& [what, id] : required) {
    if (id < 0 || id >= size) {
      return Invalid(
          origin, what,
          absl::StrCat("id ", id, " is missing or outside the ", size, "-piece vocabulary"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

bool LooksLikeJson(absl::string_view bytes) {
  const absl::string_view s = absl::StripLeadingAsciiWhitespace(bytes);
  return !s.empty() && s.front() == '{';
}

absl::StatusOr<WordPieceSpec> ParseTokenizerJson(const std::string& text,
                                                 const std::string& origin) {
  absl::StatusOr<json> root = ParseJson(text, origin);
  if (!root.ok()) return root.status();
  const json* model = Child(*root, "model");
  if (model == nullptr || !model->is_object()) return Invalid(origin, "model", "missing");
  WordPieceSpec spec;
  spec.json = text;
  // nlohmann's value() and get() throw on a field of the wrong JSON type; that is bad input too.
  try {
    absl::Status s = ParseModel(*model, origin, &spec);
    if (s.ok()) s = ParseAddedTokens(*root, origin, &spec);
    if (s.ok()) s = ParseNormalizer(*root, origin, &spec);
    if (s.ok()) s = CheckPreTokenizerAndDecoder(*root, origin, &spec);
    if (s.ok()) s = ParseSpecialIds(*root, origin, &spec);
    if (!s.ok()) return s;
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(origin, ": unexpected JSON type: ", e.what()));
  }
  return spec;
}

}  // namespace padless::tokenize::internal
