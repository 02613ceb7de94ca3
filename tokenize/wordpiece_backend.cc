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

WordPieceBackend::WordPieceBackend(WordPieceSpec spec) : HfTokenizerJsonBackend(std::move(spec)) {
  for (const AddedToken& t : spec_.added_tokens) {
    if (!t.normalized) {
      if (!t.content.empty()) raw_added_.emplace_back(t.content, t.id);
      continue;
    }
    // tokenizers normalizes the content of a normalized added token with the tokenizer's own
    // normalizer and matches that.
    std::u32string content = DecodeUtf8(t.content);
    if (spec_.has_normalizer) BertNormalize(spec_.normalizer, &content);
    if (!content.empty()) normalized_added_.emplace_back(std::move(content), t.id);
  }
  LongestFirst(&raw_added_);
  LongestFirst(&normalized_added_);
}

absl::Status WordPieceBackend::Encode(absl::string_view text, std::vector<int32_t>* ids) const {
  EncodeText(std::string_view(text.data(), text.size()), ids, nullptr);
  return absl::OkStatus();
}

absl::Status WordPieceBackend::EncodeWithOffsets(absl::string_view text, std::vector<int32_t>* ids,
                                                 std::vector<ByteSpan>* spans) const {
  spans->clear();
  EncodeText(std::string_view(text.data(), text.size()), ids, spans);
  return absl::OkStatus();
}

void WordPieceBackend::EncodeText(std::string_view text, std::vector<int32_t>* ids,
                                  std::vector<ByteSpan>* spans) const {
  ids->clear();
  size_t cursor = 0;  // the end of the last segment, where a matched token starts
  SplitAtAddedTokens(
      text, raw_added_,
      [&](std::string_view segment) {
        const auto base = static_cast<size_t>(segment.data() - text.data());
        EncodeSegment(segment, base, ids, spans);
        cursor = base + segment.size();
      },
      [&](size_t token) {
        ids->push_back(raw_added_[token].second);
        if (spans != nullptr) spans->push_back({cursor, cursor + raw_added_[token].first.size()});
      });
}

void WordPieceBackend::EncodeSegment(std::string_view text, size_t base, std::vector<int32_t>* ids,
                                     std::vector<ByteSpan>* spans) const {
  if (text.empty()) return;
  const absl::string_view view(text.data(), text.size());
  std::vector<ByteSpan> alignment;  // filled only for offsets
  std::vector<ByteSpan>* aligned = spans != nullptr ? &alignment : nullptr;
  std::u32string chars = aligned != nullptr ? DecodeUtf8(view, base, aligned) : DecodeUtf8(view);
  if (spec_.has_normalizer) BertNormalize(spec_.normalizer, &chars, aligned);
  const std::u32string_view normalized(chars);
  size_t cursor = 0;  // in characters, as above
  SplitAtAddedTokens(
      normalized, normalized_added_,
      [&](std::u32string_view words) {
        const auto first = static_cast<size_t>(words.data() - normalized.data());
        EncodeWords(words, aligned != nullptr ? alignment.data() + first : nullptr, ids, spans);
        cursor = first + words.size();
      },
      [&](size_t token) {
        ids->push_back(normalized_added_[token].second);
        if (spans == nullptr) return;
        const size_t last = cursor + normalized_added_[token].first.size() - 1;
        spans->push_back(Cover(alignment[cursor], alignment[last]));
      });
}

void WordPieceBackend::EncodeWords(std::u32string_view text, const ByteSpan* alignment,
                                   std::vector<int32_t>* ids, std::vector<ByteSpan>* spans) const {
  std::vector<std::u32string_view> words;
  BertPreTokenize(text, &words);
  std::vector<size_t> piece_ends;
  for (std::u32string_view word : words) {
    EncodeWord(word, ids, spans != nullptr ? &piece_ends : nullptr);
    if (spans == nullptr) continue;
    // "##" continuation pieces span their own characters: the prefix is not in the text.
    const ByteSpan* chars = alignment + (word.data() - text.data());
    size_t start = 0;
    for (size_t end : piece_ends) {
      spans->push_back(Cover(chars[start], chars[end - 1]));
      start = end;
    }
  }
}

void WordPieceBackend::EncodeWord(std::u32string_view word, std::vector<int32_t>* ids,
                                  std::vector<size_t>* piece_ends) const {
  if (piece_ends != nullptr) piece_ends->clear();
  const auto unknown_word = [&] {
    ids->push_back(spec_.special_ids.unk);
    if (piece_ends != nullptr) piece_ends->assign(1, word.size());
  };
  if (static_cast<int64_t>(word.size()) > spec_.max_input_chars_per_word) {
    unknown_word();
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
      if (const auto it = index_.model_vocab.find(candidate); it != index_.model_vocab.end()) {
        found = it->second;
        break;
      }
    }
    if (found < 0) {
      ids->resize(before);
      unknown_word();
      return;
    }
    ids->push_back(found);
    if (piece_ends != nullptr) piece_ends->push_back(end);
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
