#include "padless/tokenize/tokenizer.h"

#include <fstream>
#include <limits>
#include <map>
#include <thread>
#include <type_traits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "padless/base/atomic_file_writer.h"
#include "padless/base/file_kind.h"
#include "spm_backend.h"
#include "tokenizer_backend.h"
#include "tokenizer_files.h"

namespace padless::tokenize {
namespace {

absl::StatusOr<std::map<std::string, std::string>> TrainerOptions(const TrainOptions& options) {
  if (options.model_type != "unigram" && options.model_type != "bpe") {
    return absl::InvalidArgumentError(
        absl::StrCat("model type '", options.model_type, "' is not unigram or bpe"));
  }
  const int64_t min_vocab =
      kNumSpecialTokens + static_cast<int64_t>(options.user_defined_symbols.size()) + 1;
  if (options.vocab_size < min_vocab) {
    return absl::InvalidArgumentError(absl::StrCat("vocab size ", options.vocab_size,
                                                   " is below the minimum of ", min_vocab,
                                                   " (special tokens and user symbols)"));
  }
  if (!(options.character_coverage > 0.0 && options.character_coverage <= 1.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("character coverage ", options.character_coverage, " is outside (0, 1]"));
  }
  for (const std::string& symbol : options.user_defined_symbols) {
    // SentencePiece takes the list comma-separated, so a comma cannot be escaped.
    if (symbol.empty() || symbol.find(',') != std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("user-defined symbol '", symbol, "' is empty or contains a comma"));
    }
  }
  const int threads = options.num_threads > 0
                          ? options.num_threads
                          : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  std::map<std::string, std::string> o = {
      {"model_type", options.model_type},
      {"vocab_size", std::to_string(options.vocab_size)},
      {"character_coverage", absl::StrCat(options.character_coverage)},
      {"pad_id", std::to_string(kPadId)},
      {"unk_id", std::to_string(kUnkId)},
      {"bos_id", std::to_string(kClsId)},
      {"eos_id", std::to_string(kSepId)},
      {"pad_piece", kPadPiece},
      {"unk_piece", kUnkPiece},
      {"bos_piece", kClsPiece},
      {"eos_piece", kSepPiece},
      // A control symbol gets the next id after the reserved ones (4) and is never produced from
      // text, so a literal "[MASK]" in a review stays ordinary text.
      {"control_symbols", kMaskPiece},
      {"max_sentence_length", std::to_string(options.max_sentence_length)},
      {"num_threads", std::to_string(threads)},
      {"minloglevel", options.verbose ? "0" : "2"},
      {"hard_vocab_limit", options.hard_vocab_limit ? "true" : "false"},
  };
  if (!options.user_defined_symbols.empty()) {
    o["user_defined_symbols"] = absl::StrJoin(options.user_defined_symbols, ",");
  }
  if (options.input_sentence_size > 0) {
    o["input_sentence_size"] = std::to_string(options.input_sentence_size);
    o["shuffle_input_sentence"] = "true";
  }
  return o;
}

}  // namespace

Tokenizer::Tokenizer(std::unique_ptr<internal::TokenizerBackend> backend)
    : backend_(std::move(backend)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

absl::StatusOr<Tokenizer> Tokenizer::Load(const std::string& path) {
  absl::StatusOr<std::unique_ptr<internal::TokenizerBackend>> backend = internal::LoadBackend(path);
  if (!backend.ok()) return backend.status();
  return Tokenizer(*std::move(backend));
}

absl::StatusOr<Tokenizer> Tokenizer::FromSerialized(const std::string& serialized_model) {
  absl::StatusOr<std::unique_ptr<internal::TokenizerBackend>> backend =
      internal::BackendFromBytes(serialized_model, "<serialized model>");
  if (!backend.ok()) return backend.status();
  return Tokenizer(*std::move(backend));
}

absl::StatusOr<Tokenizer> Tokenizer::TrainFromFiles(const std::vector<std::string>& files,
                                                    const TrainOptions& options) {
  if (files.empty()) return absl::InvalidArgumentError("no training files given");
  for (const std::string& f : files) {
    if (absl::Status s = base::CheckRegularFile(f, "training file"); !s.ok()) return s;
    if (std::ifstream probe(f); !probe) {
      return absl::PermissionDeniedError(absl::StrCat("cannot open training file ", f));
    }
  }
  absl::StatusOr<std::map<std::string, std::string>> trainer_options = TrainerOptions(options);
  if (!trainer_options.ok()) return trainer_options.status();
  (*trainer_options)["input"] = absl::StrJoin(files, ",");
  std::string serialized;
  const std::string error = internal::TrainSpm(*trainer_options, nullptr, &serialized);
  if (!error.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("SentencePiece training on ", absl::StrJoin(files, ","), " failed: ", error));
  }
  return FromSerialized(serialized);
}

absl::StatusOr<Tokenizer> Tokenizer::TrainFromSentences(absl::Span<const std::string> sentences,
                                                        const TrainOptions& options) {
  if (sentences.empty()) return absl::InvalidArgumentError("no training sentences given");
  absl::StatusOr<std::map<std::string, std::string>> trainer_options = TrainerOptions(options);
  if (!trainer_options.ok()) return trainer_options.status();
  size_t next = 0;
  const std::function<bool(std::string*)> pull = [&](std::string* out) {
    if (next >= sentences.size()) return false;
    *out = sentences[next++];
    return true;
  };
  std::string serialized;
  const std::string error = internal::TrainSpm(*trainer_options, pull, &serialized);
  if (!error.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("SentencePiece training failed: ", error));
  }
  return FromSerialized(serialized);
}

absl::Status Tokenizer::Save(const std::string& path) const {
  return base::WriteFileAtomically(path, backend_->Serialized());
}

std::string Tokenizer::Serialized() const { return backend_->Serialized(); }
std::string Tokenizer::file_name() const { return backend_->file_name(); }
std::string Tokenizer::backend_name() const { return backend_->name(); }
const SpecialIds& Tokenizer::special_ids() const { return backend_->special_ids(); }

absl::Status Tokenizer::ExportHuggingFace(const std::string& dir) const {
  return backend_->ExportHuggingFace(dir);
}

int32_t Tokenizer::vocab_size() const { return backend_->vocab_size(); }

std::string Tokenizer::IdToPiece(int32_t id) const {
  if (id < 0 || id >= vocab_size()) return "";
  return backend_->IdToPiece(id);
}

int32_t Tokenizer::PieceToId(absl::string_view piece) const { return backend_->PieceToId(piece); }

absl::Status Tokenizer::EncodePieces(absl::string_view text, std::vector<int32_t>* ids) const {
  return backend_->Encode(text, ids);
}

absl::StatusOr<std::vector<int32_t>> Tokenizer::EncodePieces(absl::string_view text) const {
  std::vector<int32_t> ids;
  if (absl::Status s = EncodePieces(text, &ids); !s.ok()) return s;
  return ids;
}

absl::Status Tokenizer::EncodeAppend(absl::string_view text, const absl::string_view* pair,
                                     const EncodeOptions& options, Scratch* scratch,
                                     std::vector<int32_t>* ids,
                                     std::vector<int8_t>* type_ids) const {
  static_assert(std::is_same_v<int, int32_t>, "Scratch holds int32_t ids");
  const bool roberta = backend_->template_style() == internal::TemplateStyle::kRoberta;
  const int64_t specials = pair == nullptr ? 2 : (roberta ? 4 : 3);
  if (options.max_length < 0 || (options.max_length > 0 && options.max_length < specials)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_length ", options.max_length, " cannot hold the ", specials, " special tokens of ",
        pair == nullptr ? "[CLS] text [SEP]"
                        : (roberta ? "<s> a </s></s> b </s>" : "[CLS] a [SEP] b [SEP]")));
  }
  const int64_t budget =
      options.max_length == 0 ? std::numeric_limits<int64_t>::max() : options.max_length - specials;
  if (absl::Status s = backend_->Encode(text, &scratch->first); !s.ok()) return s;
  const std::vector<int>& a = scratch->first;
  const SpecialIds& special = backend_->special_ids();
  if (pair == nullptr) {
    const SingleKeep keep = PlanSingle(static_cast<int64_t>(a.size()), budget, options.truncation,
                                       options.head_fraction);
    ids->push_back(special.cls);
    ids->insert(ids->end(), a.begin(), a.begin() + keep.head);
    ids->insert(ids->end(), a.end() - keep.tail, a.end());
    ids->push_back(special.sep);
    return absl::OkStatus();
  }
  if (absl::Status s = backend_->Encode(*pair, &scratch->second); !s.ok()) return s;
  const std::vector<int>& b = scratch->second;
  absl::StatusOr<PairKeep> keep =
      PlanPair(static_cast<int64_t>(a.size()), static_cast<int64_t>(b.size()), budget,
               options.pair_truncation);
  if (!keep.ok()) return keep.status();
  ids->push_back(special.cls);
  ids->insert(ids->end(), a.begin(), a.begin() + keep->first);
  ids->push_back(special.sep);
  if (roberta) ids->push_back(special.sep);
  ids->insert(ids->end(), b.begin(), b.begin() + keep->second);
  ids->push_back(special.sep);
  // RoBERTa-style models have a single token type.
  const int64_t first_span = keep->first + 2;
  type_ids->insert(type_ids->end(), first_span, 0);
  type_ids->insert(type_ids->end(), keep->second + specials - 2, roberta ? 0 : 1);
  return absl::OkStatus();
}

absl::StatusOr<Encoding> Tokenizer::Encode(absl::string_view text,
                                           const EncodeOptions& options) const {
  Encoding e;
  Scratch scratch;
  if (absl::Status s = EncodeAppend(text, nullptr, options, &scratch, &e.ids, &e.type_ids);
      !s.ok()) {
    return s;
  }
  return e;
}

absl::StatusOr<Encoding> Tokenizer::EncodePair(absl::string_view first, absl::string_view second,
                                               const EncodeOptions& options) const {
  Encoding e;
  Scratch scratch;
  if (absl::Status s = EncodeAppend(first, &second, options, &scratch, &e.ids, &e.type_ids);
      !s.ok()) {
    return s;
  }
  return e;
}

absl::StatusOr<std::vector<Encoding>> Tokenizer::EncodeWindows(absl::string_view text,
                                                               int64_t max_length,
                                                               int64_t stride) const {
  if (max_length < 3) {
    return absl::InvalidArgumentError(absl::StrCat(
        "window max_length ", max_length, " must hold [CLS], [SEP] and at least one token"));
  }
  const int64_t budget = max_length - 2;
  if (stride < 0 || stride >= budget) {
    return absl::InvalidArgumentError(
        absl::StrCat("window stride ", stride, " must be in [0, ", budget, ")"));
  }
  absl::StatusOr<std::vector<int32_t>> pieces = EncodePieces(text);
  if (!pieces.ok()) return pieces.status();
  const int64_t n = static_cast<int64_t>(pieces->size());
  std::vector<Encoding> windows;
  for (int64_t start : WindowStarts(n, budget, stride)) {
    Encoding& w = windows.emplace_back();
    const int64_t end = std::min(n, start + budget);
    w.ids.reserve(end - start + 2);
    w.ids.push_back(special_ids().cls);
    w.ids.insert(w.ids.end(), pieces->begin() + start, pieces->begin() + end);
    w.ids.push_back(special_ids().sep);
  }
  return windows;
}

absl::StatusOr<std::vector<Token>> Tokenizer::Tokenize(absl::string_view text,
                                                       bool add_special_tokens) const {
  std::vector<int32_t> ids;
  std::vector<internal::ByteSpan> spans;
  if (absl::Status s = backend_->EncodeWithOffsets(text, &ids, &spans); !s.ok()) return s;
  if (spans.size() != ids.size()) {
    return absl::InternalError(absl::StrCat(backend_->name(), " gave ", spans.size(),
                                            " offsets for ", ids.size(), " tokens"));
  }
  std::vector<Token> tokens;
  tokens.reserve(ids.size() + 2);
  const auto special = [&](int32_t id) {
    tokens.push_back(Token{id, backend_->IdToPiece(id), true, std::nullopt, std::nullopt});
  };
  if (add_special_tokens) special(special_ids().cls);
  for (size_t i = 0; i < ids.size(); ++i) {
    const internal::ByteSpan& span = spans[i];
    if (span.start > span.stop || span.stop > text.size()) {
      return absl::InternalError(absl::StrCat(backend_->name(), ": token ", i, " spans [",
                                              span.start, ", ", span.stop, ") of a text of ",
                                              text.size(), " bytes"));
    }
    tokens.push_back(Token{ids[i], std::string(text.substr(span.start, span.stop - span.start)),
                           false, span.start, span.stop});
  }
  if (add_special_tokens) special(special_ids().sep);
  return tokens;
}

absl::StatusOr<std::string> Tokenizer::Decode(absl::Span<const int32_t> ids) const {
  std::vector<int32_t> kept;
  kept.reserve(ids.size());
  const int32_t size = vocab_size();
  const SpecialIds& s = special_ids();
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= size) {
      return absl::InvalidArgumentError(
          absl::StrCat("id ", ids[i], " at position ", i, " is outside the vocabulary of ", size));
    }
    // [UNK] stays (SentencePiece renders it as " \xE2\x81\x87 "); the others are structure.
    const int32_t id = ids[i];
    if (id != s.pad && id != s.cls && id != s.sep && id != s.mask) kept.push_back(id);
  }
  return backend_->Decode(kept);
}

}  // namespace padless::tokenize
