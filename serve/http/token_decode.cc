#include "padless/serve/http/token_decode.h"

#include <optional>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace padless::serve::http {
namespace {

// How a backend's decoder joins tokens (token_decode.h).
enum class Joiner { kWordPiece, kByteLevel, kApproximate };

Joiner JoinerOf(const tokenize::Tokenizer& tokenizer) {
  const std::string name = tokenizer.backend_name();
  if (absl::StartsWith(name, "WordPiece")) return Joiner::kWordPiece;
  if (absl::StartsWith(name, "byte-level BPE")) return Joiner::kByteLevel;
  return Joiner::kApproximate;
}

// The ids Tokenizer::Decode drops ([UNK] stays there: SentencePiece renders it).
bool IsStructural(const tokenize::SpecialIds& s, int32_t id) {
  return id == s.cls || id == s.sep || id == s.pad || id == s.mask;
}

class Decoder {
 public:
  Decoder(const tokenize::Tokenizer& tokenizer, Joiner joiner)
      : tokenizer_(tokenizer), joiner_(joiner) {}

  // Appends the decoding of `run` (ordinary ids), placed after `text` as the decoder places it.
  absl::Status AppendRun(const std::vector<int32_t>& run, std::string& text) {
    if (run.empty()) return absl::OkStatus();
    const bool first = !started_;
    started_ = true;
    if (first || joiner_ != Joiner::kWordPiece) {
      absl::StatusOr<std::string> part = tokenizer_.Decode(run);
      if (!part.ok()) return part.status();
      absl::StrAppend(&text, joiner_ == Joiner::kApproximate && !first ? " " : "", *part);
      return absl::OkStatus();
    }
    // WordPiece decodes token by token, and the first token of the text differently (no space, no
    // "##" stripped): decoding the run after an ordinary anchor token and cutting the anchor's own
    // text off gives the run as the decoder writes it in the middle of a text.
    absl::StatusOr<int32_t> anchor = Anchor();
    if (!anchor.ok()) return anchor.status();
    std::vector<int32_t> anchored = {*anchor};
    anchored.insert(anchored.end(), run.begin(), run.end());
    absl::StatusOr<std::string> head = tokenizer_.Decode(std::vector<int32_t>{*anchor});
    absl::StatusOr<std::string> whole = tokenizer_.Decode(anchored);
    if (!head.ok()) return head.status();
    if (!whole.ok()) return whole.status();
    if (!absl::StartsWith(*whole, *head)) return absl::InternalError("WordPiece decode not prefix");
    text.append(whole->substr(head->size()));
    return absl::OkStatus();
  }

  // Appends a special token's piece: WordPiece spaces it from what precedes it, byte-level BPE
  // joins it, the approximation spaces it.
  void AppendSpecial(int32_t id, std::string& text) {
    const bool spaced = joiner_ != Joiner::kByteLevel && started_;
    started_ = true;
    absl::StrAppend(&text, spaced ? " " : "", tokenizer_.IdToPiece(id));
  }

 private:
  // The first ordinary id of the vocabulary.
  absl::StatusOr<int32_t> Anchor() {
    if (anchor_) return *anchor_;
    const tokenize::SpecialIds& s = tokenizer_.special_ids();
    for (int32_t id = 0; id < tokenizer_.vocab_size(); ++id) {
      if (IsStructural(s, id) || id == s.unk) continue;
      anchor_ = id;
      return id;
    }
    return absl::InternalError("the vocabulary has no ordinary token");
  }

  const tokenize::Tokenizer& tokenizer_;
  const Joiner joiner_;
  std::optional<int32_t> anchor_;
  bool started_ = false;  // a token was decoded already
};

absl::Status CheckVocabulary(const tokenize::Tokenizer& tokenizer, absl::Span<const int32_t> ids) {
  const int32_t size = tokenizer.vocab_size();
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= size) {
      return absl::InvalidArgumentError(
          absl::StrCat("id ", ids[i], " at position ", i, " is outside the vocabulary of ", size));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> DecodeTokenIds(const tokenize::Tokenizer& tokenizer,
                                           absl::Span<const int32_t> ids,
                                           bool skip_special_tokens) {
  if (absl::Status s = CheckVocabulary(tokenizer, ids); !s.ok()) return s;
  const Joiner joiner = JoinerOf(tokenizer);
  const tokenize::SpecialIds& special = tokenizer.special_ids();
  // tokenizer.json files mark [UNK] special, so `tokenizers` treats it as [CLS]; SentencePiece's
  // is an ordinary piece (Tokenizer::Decode keeps it).
  const auto is_special = [&](int32_t id) {
    return IsStructural(special, id) || (joiner != Joiner::kApproximate && id == special.unk);
  };
  std::vector<int32_t> run;
  if (skip_special_tokens) {
    for (int32_t id : ids) {
      if (!is_special(id)) run.push_back(id);
    }
    return tokenizer.Decode(run);
  }
  Decoder decoder(tokenizer, joiner);
  std::string text;
  for (int32_t id : ids) {
    if (!is_special(id)) {
      run.push_back(id);
      continue;
    }
    if (absl::Status s = decoder.AppendRun(run, text); !s.ok()) return s;
    run.clear();
    decoder.AppendSpecial(id, text);
  }
  if (absl::Status s = decoder.AppendRun(run, text); !s.ok()) return s;
  return text;
}

}  // namespace padless::serve::http
