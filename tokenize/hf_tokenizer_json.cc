#include "hf_tokenizer_json.h"

#include <algorithm>
#include <memory>
#include <utility>

#include <nlohmann/json.hpp>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "byte_level_bpe_backend.h"
#include "wordpiece_backend.h"

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

// model.vocab (piece: id) into `pieces` by id; the ids must be exactly 0..n-1.
absl::Status ParseVocab(const json& model, const std::string& origin,
                        std::vector<std::string>* pieces) {
  const json* vocab = Child(model, "vocab");
  if (vocab == nullptr || !vocab->is_object() || vocab->empty()) {
    return Invalid(origin, "model.vocab", "missing or not a non-empty object of piece: id");
  }
  const auto n = static_cast<int64_t>(vocab->size());
  pieces->assign(static_cast<size_t>(n), std::string());
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
          absl::StrCat("id ", i, " is given to both '", (*pieces)[i], "' and '", piece, "'"));
    }
    seen[i] = true;
    (*pieces)[i] = piece;
  }
  return absl::OkStatus();
}

bool InVocab(const std::vector<std::string>& pieces, int32_t model_vocab_size,
             const std::string& piece) {
  const auto end = pieces.begin() + model_vocab_size;
  return std::find(pieces.begin(), end, piece) != end;
}

absl::Status ParseWordPieceModel(const json& model, const std::string& origin,
                                 WordPieceSpec* spec) {
  if (absl::Status s = ParseVocab(model, origin, &spec->pieces); !s.ok()) return s;
  spec->model_vocab_size = static_cast<int32_t>(spec->pieces.size());
  if (const json* unk = Child(model, "unk_token"); unk != nullptr && unk->is_string()) {
    spec->unk_token = unk->get<std::string>();
  }
  if (!InVocab(spec->pieces, spec->model_vocab_size, spec->unk_token)) {
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
absl::Status ParseAddedTokens(const json& root, const std::string& origin, HfTokenizerSpec* spec) {
  std::vector<std::string>* pieces = &spec->pieces;
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
    // BertPreTokenizer drops it anyway, so only the byte-level BPE backend uses them.
    const bool special = t.value("special", false);
    AddedToken token{content->get<std::string>(),
                     static_cast<int32_t>(id->get<int64_t>()),
                     special,
                     t.value("normalized", !special),
                     t.value("lstrip", false),
                     t.value("rstrip", false)};
    const auto i = static_cast<size_t>(token.id);
    if (i >= pieces->size()) pieces->resize(i + 1);
    if (!(*pieces)[i].empty() && (*pieces)[i] != token.content) {
      return Invalid(
          origin, "added_tokens",
          absl::StrCat("id ", i, " of '", token.content, "' is already '", (*pieces)[i], "'"));
    }
    (*pieces)[i] = token.content;
    spec->added_tokens.push_back(std::move(token));
  }
  for (size_t i = static_cast<size_t>(spec->model_vocab_size); i < pieces->size(); ++i) {
    if ((*pieces)[i].empty()) {
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

// Where a post_processor template puts the sequences and the special tokens: BERT's
// [CLS] $A [SEP] / [CLS] $A [SEP] $B [SEP] or RoBERTa's <s> $A </s> / <s> $A </s> </s> $B </s>.
struct TemplateShape {
  size_t pair_size;
  size_t b_position;
  std::vector<size_t> pair_seps;
  const char* description;
};

TemplateShape ShapeOf(TemplateStyle style) {
  if (style == TemplateStyle::kRoberta) {
    return {6, 4, {2, 3, 5}, "RoBERTa's template (<s> $A </s> and <s> $A </s> </s> $B </s>)"};
  }
  return {5, 3, {2, 4}, "BERT's template ([CLS] $A [SEP] and [CLS] $A [SEP] $B [SEP])"};
}

// post_processor.single must be cls $A sep and pair the shape of `style`, all with one cls and
// one sep.
absl::Status ParseTemplate(const json& p, const std::string& origin, TemplateStyle style,
                           SpecialIds* ids) {
  const TemplateShape shape = ShapeOf(style);
  const json* single = Child(p, "single");
  const json* pair = Child(p, "pair");
  const auto is_seq = [](const json& item, const char* id) {
    const json* s = Child(item, "Sequence");
    return s != nullptr && s->value("id", std::string()) == id;
  };
  const bool shape_ok = single != nullptr && single->is_array() && single->size() == 3 &&
                        is_seq((*single)[1], "A") && pair != nullptr && pair->is_array() &&
                        pair->size() == shape.pair_size && is_seq((*pair)[1], "A") &&
                        is_seq((*pair)[shape.b_position], "B");
  if (!shape_ok) {
    return absl::UnimplementedError(
        absl::StrCat(origin, ": post_processor: only ", shape.description, " is supported"));
  }
  absl::StatusOr<int32_t> cls = TemplateSpecialId(p, (*single)[0], origin);
  absl::StatusOr<int32_t> sep = TemplateSpecialId(p, (*single)[2], origin);
  if (!cls.ok()) return cls.status();
  if (!sep.ok()) return sep.status();
  std::vector<std::pair<size_t, int32_t>> expected = {{0, *cls}};
  for (size_t i : shape.pair_seps) expected.emplace_back(i, *sep);
  for (const auto& [i, want] : expected) {
    absl::StatusOr<int32_t> id = TemplateSpecialId(p, (*pair)[i], origin);
    if (!id.ok()) return id.status();
    if (*id != want) {
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

// BertProcessing / RobertaProcessing: cls and sep as [token, id].
absl::Status ParseClsSepProcessing(const json& p, const std::string& origin, SpecialIds* ids) {
  absl::StatusOr<int32_t> cls = ProcessingId(p, "cls", origin);
  absl::StatusOr<int32_t> sep = ProcessingId(p, "sep", origin);
  if (!cls.ok()) return cls.status();
  if (!sep.ok()) return sep.status();
  ids->cls = *cls;
  ids->sep = *sep;
  return absl::OkStatus();
}

// The post-processors that frame a text the way `style` does. ByteLevel only trims offsets, and
// a missing one adds nothing: padless frames every text with cls and sep anyway.
absl::Status ParsePostProcessor(const json& root, const std::string& origin, TemplateStyle style,
                                SpecialIds* ids) {
  const json* p = Child(root, "post_processor");
  if (p == nullptr) return absl::OkStatus();
  const std::string type = TypeOf(*p);
  const bool roberta = style == TemplateStyle::kRoberta;
  if (type == "TemplateProcessing") return ParseTemplate(*p, origin, style, ids);
  if (type == (roberta ? "RobertaProcessing" : "BertProcessing")) {
    return ParseClsSepProcessing(*p, origin, ids);
  }
  if (roberta && type == "ByteLevel") return absl::OkStatus();
  return absl::UnimplementedError(absl::StrCat(
      origin, ": post_processor.type '", type, "' is not supported (TemplateProcessing or ",
      roberta ? "RobertaProcessing or ByteLevel" : "BertProcessing", ")"));
}

// The pieces that name the special tokens when the file gives no id for them.
struct SpecialPieces {
  const char* pad;
  const char* cls;
  const char* sep;
  const char* mask;
};
constexpr SpecialPieces kBertPieces{"[PAD]", "[CLS]", "[SEP]", "[MASK]"};
constexpr SpecialPieces kRobertaPieces{"<pad>", "<s>", "</s>", "<mask>"};

// pad, cls, sep and mask by name, then cls and sep from the post_processor and pad from
// padding.pad_id; `unk_piece` is the model's (or the default) unknown token.
absl::Status ParseSpecialIds(const json& root, const std::string& origin, TemplateStyle style,
                             const std::vector<std::string>& pieces, const std::string& unk_piece,
                             SpecialIds* ids) {
  const auto find = [&](const std::string& piece) -> int32_t {
    const auto it = std::find(pieces.begin(), pieces.end(), piece);
    return it == pieces.end() ? -1 : static_cast<int32_t>(it - pieces.begin());
  };
  const SpecialPieces& names = style == TemplateStyle::kRoberta ? kRobertaPieces : kBertPieces;
  *ids = SpecialIds{find(names.pad), find(unk_piece), find(names.cls), find(names.sep),
                    find(names.mask)};
  if (absl::Status s = ParsePostProcessor(root, origin, style, ids); !s.ok()) return s;
  if (const json* padding = Child(root, "padding"); padding != nullptr) {
    if (const json* pad = Child(*padding, "pad_id"); pad != nullptr && pad->is_number_integer()) {
      ids->pad = pad->get<int32_t>();
    }
  }
  const int32_t size = static_cast<int32_t>(pieces.size());
  const std::pair<std::string, int32_t> required[] = {
      {absl::StrCat(names.pad, " (padding.pad_id)"), ids->pad},
      {unk_piece, ids->unk},
      {names.cls, ids->cls},
      {names.sep, ids->sep}};
  for (const auto& [what, id] : required) {
    if (id < 0 || id >= size) {
      return Invalid(
          origin, what,
          absl::StrCat("id ", id, " is missing or outside the ", size, "-piece vocabulary"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<TokenizerBackend>> BuildWordPiece(const json& root,
                                                                 const json& model,
                                                                 const std::string& text,
                                                                 const std::string& origin) {
  WordPieceSpec spec;
  spec.json = text;
  absl::Status s = ParseWordPieceModel(model, origin, &spec);
  if (s.ok()) s = ParseAddedTokens(root, origin, &spec);
  if (s.ok()) s = ParseNormalizer(root, origin, &spec);
  if (s.ok()) s = CheckPreTokenizerAndDecoder(root, origin, &spec);
  if (s.ok()) {
    s = ParseSpecialIds(root, origin, TemplateStyle::kBert, spec.pieces, spec.unk_token,
                        &spec.special_ids);
  }
  if (!s.ok()) return s;
  return std::unique_ptr<TokenizerBackend>(std::make_unique<WordPieceBackend>(std::move(spec)));
}

// ---- Byte-level BPE ----

// A field that must be absent or null (or `allowed`, when given): padless implements only that.
absl::Status RequireNull(const json& object, const char* key, const std::string& origin,
                         const std::string& field, const json* allowed = nullptr) {
  const json* value = Child(object, key);
  if (value == nullptr || (allowed != nullptr && *value == *allowed)) return absl::OkStatus();
  return absl::UnimplementedError(
      absl::StrCat(origin, ": ", field, " ", value->dump(), " is not supported with a BPE model"));
}

// One entry of model.merges: "left right" (older files) or ["left", "right"].
absl::StatusOr<std::pair<std::string, std::string>> ParseMerge(const json& merge, size_t rank,
                                                               const std::string& origin) {
  if (merge.is_string()) {
    const std::string line = merge.get<std::string>();
    const size_t space = line.find(' ');
    if (space != std::string::npos && line.find(' ', space + 1) == std::string::npos) {
      return std::make_pair(line.substr(0, space), line.substr(space + 1));
    }
  } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() &&
             merge[1].is_string()) {
    return std::make_pair(merge[0].get<std::string>(), merge[1].get<std::string>());
  }
  return Invalid(
      origin, "model.merges",
      absl::StrCat("merge ", rank, " ", merge.dump(-1, ' ', false, json::error_handler_t::replace),
                   " is neither \"left right\" nor [left, right]"));
}

absl::Status ParseMerges(const json& model, const std::string& origin, ByteLevelBpeSpec* spec) {
  const json* merges = Child(model, "merges");
  if (merges == nullptr || !merges->is_array()) {
    return Invalid(origin, "model.merges", "missing or not an array");
  }
  const absl::flat_hash_set<std::string> vocab(spec->pieces.begin(), spec->pieces.end());
  for (size_t rank = 0; rank < merges->size(); ++rank) {
    absl::StatusOr<std::pair<std::string, std::string>> merge =
        ParseMerge((*merges)[rank], rank, origin);
    if (!merge.ok()) return merge.status();
    for (const std::string& piece : {merge->first, merge->second, merge->first + merge->second}) {
      if (!vocab.contains(piece)) {
        return Invalid(origin, "model.merges",
                       absl::StrCat("merge ", rank, " (", merge->first, " ", merge->second,
                                    ") needs '", piece, "', which is not in model.vocab"));
      }
    }
    spec->merges.push_back(*std::move(merge));
  }
  return absl::OkStatus();
}

absl::Status ParseBpeModel(const json& model, const std::string& origin, ByteLevelBpeSpec* spec) {
  if (absl::Status s = ParseVocab(model, origin, &spec->pieces); !s.ok()) return s;
  spec->model_vocab_size = static_cast<int32_t>(spec->pieces.size());
  const json empty_string = "", no = false;
  for (absl::Status s :
       {RequireNull(model, "dropout", origin, "model.dropout"),
        RequireNull(model, "continuing_subword_prefix", origin, "model.continuing_subword_prefix",
                    &empty_string),
        RequireNull(model, "end_of_word_suffix", origin, "model.end_of_word_suffix", &empty_string),
        RequireNull(model, "byte_fallback", origin, "model.byte_fallback", &no)}) {
    if (!s.ok()) return s;
  }
  if (const json* unk = Child(model, "unk_token"); unk != nullptr) {
    spec->unk_token = unk->get<std::string>();
    if (!InVocab(spec->pieces, spec->model_vocab_size, *spec->unk_token)) {
      return Invalid(origin, "model.unk_token",
                     absl::StrCat("'", *spec->unk_token, "' is not in model.vocab"));
    }
  }
  spec->fuse_unk = model.value("fuse_unk", false);
  spec->ignore_merges = model.value("ignore_merges", false);
  return ParseMerges(model, origin, spec);
}

// BERT's framing ([CLS] a [SEP] b [SEP], ModernBERT's) for a TemplateProcessing whose pair has
// BERT's five items; RoBERTa's otherwise.
TemplateStyle BpeTemplateStyle(const json& root) {
  const json* p = Child(root, "post_processor");
  const json* pair =
      p != nullptr && TypeOf(*p) == "TemplateProcessing" ? Child(*p, "pair") : nullptr;
  return pair != nullptr && pair->is_array() && pair->size() == 5 ? TemplateStyle::kBert
                                                                  : TemplateStyle::kRoberta;
}

// normalizer none or NFC, pre_tokenizer ByteLevel with GPT-2's split, decoder ByteLevel or none.
absl::Status ParseByteLevelComponents(const json& root, const std::string& origin,
                                      ByteLevelBpeSpec* spec) {
  if (const json* n = Child(root, "normalizer"); n != nullptr) {
    if (TypeOf(*n) != "NFC") {
      return absl::UnimplementedError(absl::StrCat(origin, ": normalizer.type '", TypeOf(*n),
                                                   "' is not supported with a BPE model (only "
                                                   "NFC or none)"));
    }
    spec->nfc = true;
  }
  const json* p = Child(root, "pre_tokenizer");
  if (p == nullptr || TypeOf(*p) != "ByteLevel") {
    return absl::UnimplementedError(
        absl::StrCat(origin, ": pre_tokenizer.type '", p == nullptr ? "<none>" : TypeOf(*p),
                     "' is not supported with a BPE model (only ByteLevel)"));
  }
  if (!p->value("use_regex", true)) {
    return absl::UnimplementedError(
        absl::StrCat(origin, ": pre_tokenizer.use_regex false is not supported"));
  }
  spec->add_prefix_space = p->value("add_prefix_space", true);
  // Offsets are trimmed by the post-processor (tokenizers' defaults: trim, with a prefix space);
  // the pre-tokenizer's own trim_offsets does nothing when encoding.
  if (const json* pp = Child(root, "post_processor"); pp != nullptr) {
    const std::string type = TypeOf(*pp);
    if (type == "RobertaProcessing" || type == "ByteLevel") {
      spec->trim_offsets = pp->value("trim_offsets", true);
      spec->trim_add_prefix_space = pp->value("add_prefix_space", true);
    }
  }
  if (const json* d = Child(root, "decoder"); d != nullptr && TypeOf(*d) != "ByteLevel") {
    return absl::UnimplementedError(absl::StrCat(origin, ": decoder.type '", TypeOf(*d),
                                                 "' is not supported with a BPE model (only "
                                                 "ByteLevel)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<TokenizerBackend>> BuildByteLevelBpe(const json& root,
                                                                    const json& model,
                                                                    const std::string& text,
                                                                    const std::string& origin) {
  ByteLevelBpeSpec spec;
  spec.json = text;
  absl::Status s = ParseBpeModel(model, origin, &spec);
  if (s.ok()) s = ParseAddedTokens(root, origin, &spec);
  if (s.ok()) s = ParseByteLevelComponents(root, origin, &spec);
  if (s.ok()) {
    // ModernBERT's [CLS] [SEP] [PAD] [MASK] [UNK] by name with BERT's template, RoBERTa's
    // <s> </s> <pad> <mask> <unk> otherwise.
    spec.template_style = BpeTemplateStyle(root);
    const bool bert = spec.template_style == TemplateStyle::kBert;
    s = ParseSpecialIds(root, origin, spec.template_style, spec.pieces,
                        spec.unk_token.value_or(bert ? "[UNK]" : "<unk>"), &spec.special_ids);
  }
  if (!s.ok()) return s;
  return std::unique_ptr<TokenizerBackend>(std::make_unique<ByteLevelBpeBackend>(std::move(spec)));
}

}  // namespace

bool LooksLikeJson(absl::string_view bytes) {
  const absl::string_view s = absl::StripLeadingAsciiWhitespace(bytes);
  return !s.empty() && s.front() == '{';
}

absl::StatusOr<std::unique_ptr<TokenizerBackend>> ParseTokenizerJson(const std::string& text,
                                                                     const std::string& origin) {
  absl::StatusOr<json> root = ParseJson(text, origin);
  if (!root.ok()) return root.status();
  const json* model = Child(*root, "model");
  if (model == nullptr || !model->is_object()) return Invalid(origin, "model", "missing");
  // nlohmann's value() and get() throw on a field of the wrong JSON type; that is bad input too.
  try {
    const std::string type = TypeOf(*model);
    if (type == "WordPiece") return BuildWordPiece(*root, *model, text, origin);
    if (type == "BPE") return BuildByteLevelBpe(*root, *model, text, origin);
    return absl::UnimplementedError(absl::StrCat(
        origin, ": tokenizer type '", type.empty() ? "<none>" : type,
        "' (model.type) is not supported: padless reads WordPiece and byte-level BPE "
        "tokenizer.json files and SentencePiece .model files (padless's own, or XLM-R's "
        "sentencepiece.bpe.model)"));
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(origin, ": unexpected JSON type: ", e.what()));
  }
}

}  // namespace padless::tokenize::internal
