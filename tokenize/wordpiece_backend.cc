#include "wordpiece_backend.h"

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_replace.h"
#include "bert_pre_tokenizer.h"
#include "code_points.h"
#include "hf_export.h"

namespace padless::tokenize::internal {
namespace {

// tokenizers' decoders::wordpiece::cleanup, applied to each decoded token as tokenizers does.
std::string Cleanup(std::string token) {
  static const std::pair<const char*, const char*> kReplacements[] = {
      {" .", "."},   {" ?", "?"},     {" !", "!"},    {" ,", ","},
      {" ' ", "'"},  {" n't", "n't"}, {" 'm", "'m"},  {" do not", " don't"},
      {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
  for (const auto& [from, to] : kReplacements) {
    token = absl::StrReplaceAll(token, {{from, to}});
  }
  return token;
}

}  // namespace

WordPieceBackend::WordPieceBackend(WordPieceSpec spec) : spec_(std::move(spec)) {
  for (int32_t id = 0; id < static_cast<int32_t>(spec_.pieces.size()); ++id) {
    if (id < spec_.model_vocab_size) vocab_.emplace(spec_.pieces[id], id);
    all_pieces_.emplace(spec_.pieces[id], id);
  }
  for (const AddedToken& t : spec_.added_tokens) {
    all_pieces_.insert_or_assign(t.content, t.id);
    if (!t.content.empty()) added_by_length_.push_back(&t);
  }
  std::stable_sort(added_by_length_.begin(), added_by_length_.end(),
                   [](const AddedToken* a, const AddedToken* b) {
                     return a->content.size() > b->content.size();
                   });
}

int32_t WordPieceBackend::PieceToId(absl::string_view piece) const {
  const auto it = all_pieces_.find(piece);
  return it == all_pieces_.end() ? spec_.special_ids.unk : it->second;
}

absl::Status WordPieceBackend::Encode(absl::string_view text, std::vector<int32_t>* ids) const {
  ids->clear();
  size_t segment_start = 0;
  for (size_t i = 0; i < text.size();) {
    const AddedToken* match = nullptr;
    for (const AddedToken* t : added_by_length_) {
      if (absl::StartsWith(text.substr(i), t->content)) {
        match = t;
        break;
      }
    }
    if (match == nullptr) {
      ++i;
      continue;
    }
    EncodeSegment(text.substr(segment_start, i - segment_start), ids);
    ids->push_back(match->id);
    i += match->content.size();
    segment_start = i;
  }
  EncodeSegment(text.substr(segment_start), ids);
  return absl::OkStatus();
}

void WordPieceBackend::EncodeSegment(absl::string_view text, std::vector<int32_t>* ids) const {
  if (text.empty()) return;
  std::u32string chars = DecodeUtf8(text);
  if (spec_.has_normalizer) BertNormalize(spec_.normalizer, &chars);
  std::vector<std::u32string_view> words;
  BertPreTokenize(chars, &words);
  for (std::u32string_view word : words) EncodeWord(word, ids);
}

void WordPieceBackend::EncodeWord(std::u32string_view word, std::vector<int32_t>* ids) const {
  if (static_cast<int64_t>(word.size()) > spec_.max_input_chars_per_word) {
    ids->push_back(spec_.special_ids.unk);
    return;
  }
  // The UTF-8 of the word and the byte offset of each character (plus the end).
  std::string utf8;
  std::vector<size_t> offsets;
  offsets.reserve(word.size() + 1);
  for (char32_t c : word) {
    offsets.push_back(utf8.size());
    AppendUtf8(c, &utf8);
  }
  offsets.push_back(utf8.size());
  const size_t before = ids->size();
  std::string candidate;
  for (size_t start = 0; start < word.size();) {
    size_t end = word.size();
    int32_t found = -1;
    for (; end > start; --end) {
      candidate.assign(start > 0 ? spec_.continuing_subword_prefix : "");
      candidate.append(utf8, offsets[start], offsets[end] - offsets[start]);
      if (const auto it = vocab_.find(candidate); it != vocab_.end()) {
        found = it->second;
        break;
      }
    }
    if (found < 0) {
      ids->resize(before);
      ids->push_back(spec_.special_ids.unk);
      return;
    }
    ids->push_back(found);
    start = end;
  }
}

absl::StatusOr<std::string> WordPieceBackend::Decode(absl::Span<const int32_t> ids) const {
  std::string text;
  for (size_t i = 0; i < ids.size(); ++i) {
    std::string token = spec_.pieces[ids[i]];
    if (i > 0) {
      if (absl::StartsWith(token, spec_.continuing_subword_prefix)) {
        token.erase(0, spec_.continuing_subword_prefix.size());
      } else {
        token.insert(0, " ");
      }
    }
    if (spec_.decode_cleanup) token = Cleanup(std::move(token));
    text += token;
  }
  return text;
}

absl::Status WordPieceBackend::ExportHuggingFace(const std::string& dir) const {
  return WriteWordPieceHfFiles(spec_, dir);
}

}  // namespace padless::tokenize::internal
