#include "byte_level_bpe_backend.h"

#include <functional>
#include <queue>
#include <tuple>
#include <utility>

#include "bert_char_classes.h"
#include "byte_level_alphabet.h"
#include "byte_level_offsets.h"
#include "byte_level_pre_tokenizer.h"
#include "code_points.h"
#include "hf_export.h"
#include "nfc_normalizer.h"

namespace padless::tokenize::internal {
namespace {

// A piece of the text between added tokens, or an added token (index into the spec's list) with
// the characters [begin, end) it took, the whitespace of lstrip / rstrip included.
struct Segment {
  std::u32string_view text;
  int64_t added_token = -1;
  size_t begin = 0;
  size_t end = 0;
};

std::u32string_view TrimTrailingWhitespace(std::u32string_view s) {
  while (!s.empty() && IsWhitespace(s.back())) s.remove_suffix(1);
  return s;
}

std::u32string_view TrimLeadingWhitespace(std::u32string_view s) {
  while (!s.empty() && IsWhitespace(s.front())) s.remove_prefix(1);
  return s;
}

// An lstrip / rstrip token takes the whitespace next to it, which its neighbours then lack.
// `chars` is the text the segments view.
void StripAroundAddedTokens(const std::vector<AddedToken>& tokens, const char32_t* chars,
                            std::vector<Segment>* segments) {
  for (size_t i = 0; i < segments->size(); ++i) {
    Segment& token = (*segments)[i];
    if (token.added_token < 0) continue;
    if (tokens[token.added_token].lstrip && i > 0 && (*segments)[i - 1].added_token < 0) {
      std::u32string_view& before = (*segments)[i - 1].text;
      before = TrimTrailingWhitespace(before);
      token.begin = static_cast<size_t>(before.data() + before.size() - chars);
    }
    if (tokens[token.added_token].rstrip && i + 1 < segments->size() &&
        (*segments)[i + 1].added_token < 0) {
      std::u32string_view& after = (*segments)[i + 1].text;
      after = TrimLeadingWhitespace(after);
      token.end = static_cast<size_t>(after.data() - chars);
    }
  }
}

// The UTF-8 of `word` and, per byte, the index of its character in the word.
std::string WordBytes(std::u32string_view word, std::vector<size_t>* byte_chars) {
  std::string bytes;
  byte_chars->clear();
  for (size_t i = 0; i < word.size(); ++i) {
    AppendUtf8(word[i], &bytes);
    byte_chars->resize(bytes.size(), i);
  }
  return bytes;
}

// The ByteLevel decoder for one piece: its bytes when every character is a byte-level one, else
// the piece as it is (an added token such as "<unk>" written with other characters).
std::string PieceBytes(const std::string& piece) {
  std::string bytes;
  for (char32_t c : DecodeUtf8(piece)) {
    const int byte = CharToByte(c);
    if (byte < 0) return piece;
    bytes.push_back(static_cast<char>(byte));
  }
  return bytes;
}

}  // namespace

ByteLevelBpeBackend::ByteLevelBpeBackend(ByteLevelBpeSpec spec)
    : HfTokenizerJsonBackend(std::move(spec)) {
  const absl::flat_hash_map<std::string, int32_t>& vocab = index_.model_vocab;
  if (spec_.unk_token.has_value()) {
    const auto it = vocab.find(*spec_.unk_token);
    model_unk_ = it == vocab.end() ? -1 : it->second;
  }
  for (size_t rank = 0; rank < spec_.merges.size(); ++rank) {
    const auto& [left, right] = spec_.merges[rank];
    const auto l = vocab.find(left), r = vocab.find(right), m = vocab.find(left + right);
    if (l == vocab.end() || r == vocab.end() || m == vocab.end()) continue;  // validated
    // tokenizers collects the merges into a map, so a repeated pair keeps its last rank.
    merges_.insert_or_assign(PairKey(l->second, r->second),
                             Merge{static_cast<int32_t>(rank), m->second});
  }
  for (size_t i = 0; i < spec_.added_tokens.size(); ++i) {
    const AddedToken& token = spec_.added_tokens[i];
    if (token.content.empty()) continue;
    std::u32string content = DecodeUtf8(token.content);
    if (!spec_.nfc || !token.normalized) {
      raw_added_.emplace_back(std::move(content), i);
      continue;
    }
    NfcNormalize(&content);  // tokenizers matches a normalized token's normalized content
    normalized_added_.emplace_back(std::move(content), i);
  }
  LongestFirst(&raw_added_);
  LongestFirst(&normalized_added_);
}

absl::Status ByteLevelBpeBackend::Encode(absl::string_view text, std::vector<int32_t>* ids) const {
  EncodeText(text, ids, nullptr);
  return absl::OkStatus();
}

absl::Status ByteLevelBpeBackend::EncodeWithOffsets(absl::string_view text,
                                                    std::vector<int32_t>* ids,
                                                    std::vector<ByteSpan>* spans) const {
  spans->clear();
  EncodeText(text, ids, spans);
  return absl::OkStatus();
}

struct ByteLevelBpeBackend::Output {
  std::vector<int32_t>* ids;
  std::vector<ByteSpan>* spans;    // null without offsets
  std::vector<EdgeSpaces>* edges;  // the spaces at the ends of each token, for trim_offsets
};

void ByteLevelBpeBackend::EncodeText(absl::string_view text, std::vector<int32_t>* ids,
                                     std::vector<ByteSpan>* spans) const {
  ids->clear();
  std::vector<EdgeSpaces> edge_spaces;
  Output out{ids, spans, spans != nullptr && spec_.trim_offsets ? &edge_spaces : nullptr};
  std::vector<ByteSpan> alignment;  // the bytes of each character, only for offsets
  const std::u32string chars =
      spans != nullptr ? DecodeUtf8(text, 0, &alignment) : DecodeUtf8(text);
  EncodePiece(chars, spans != nullptr ? alignment.data() : nullptr, raw_added_, spec_.nfc, &out);
  if (out.edges != nullptr) {
    TrimByteLevelOffsets(alignment, edge_spaces, spec_.trim_add_prefix_space, spans);
  }
}

void ByteLevelBpeBackend::EncodePiece(std::u32string_view text, const ByteSpan* alignment,
                                      const AddedList& tokens, bool normalize, Output* out) const {
  std::vector<Segment> segments;
  size_t cursor = 0;  // the end of the last text segment, where a matched token starts
  SplitAtAddedTokens(
      text, tokens,
      [&](std::u32string_view s) {
        segments.push_back({s, -1});
        cursor = static_cast<size_t>(s.data() - text.data()) + s.size();
      },
      [&](size_t token) {
        const auto index = static_cast<int64_t>(tokens[token].second);
        segments.push_back({{}, index, cursor, cursor + tokens[token].first.size()});
      });
  StripAroundAddedTokens(spec_.added_tokens, text.data(), &segments);
  for (const Segment& s : segments) {
    if (s.added_token >= 0) {
      out->ids->push_back(spec_.added_tokens[s.added_token].id);
      if (out->spans != nullptr) {
        out->spans->push_back(Cover(alignment[s.begin], alignment[s.end - 1]));
      }
      // The Encoding's token of an added token is the text it matched, stripped whitespace
      // included.
      if (out->edges != nullptr) {
        out->edges->push_back(CountEdgeSpaces(text.substr(s.begin, s.end - s.begin)));
      }
      continue;
    }
    const ByteSpan* piece_alignment =
        alignment != nullptr ? alignment + (s.text.data() - text.data()) : nullptr;
    if (normalize) {
      std::u32string normalized(s.text);
      std::vector<ByteSpan> normalized_alignment;
      if (piece_alignment != nullptr) {
        normalized_alignment.assign(piece_alignment, piece_alignment + s.text.size());
      }
      NfcNormalize(&normalized, piece_alignment != nullptr ? &normalized_alignment : nullptr);
      EncodePiece(normalized, piece_alignment != nullptr ? normalized_alignment.data() : nullptr,
                  normalized_added_, /*normalize=*/false, out);
      continue;
    }
    const size_t first_id = out->ids->size();
    EncodeSegment(s.text, piece_alignment, out->ids, out->spans);
    // The Encoding's token of a model piece is the piece itself.
    for (size_t i = first_id; out->edges != nullptr && i < out->ids->size(); ++i) {
      out->edges->push_back(CountEdgeSpaces(DecodeUtf8(spec_.pieces[(*out->ids)[i]])));
    }
  }
}

void ByteLevelBpeBackend::EncodeSegment(std::u32string_view text, const ByteSpan* alignment,
                                        std::vector<int32_t>* ids,
                                        std::vector<ByteSpan>* spans) const {
  // tokenizers drops empty segments before pre-tokenizing, so they get no prefix space either.
  if (text.empty()) return;
  std::u32string prefixed;
  std::vector<ByteSpan> prefixed_alignment;
  if (spec_.add_prefix_space && text.front() != U' ') {
    prefixed.reserve(text.size() + 1);
    prefixed.push_back(U' ');
    prefixed.append(text);
    if (alignment != nullptr) {
      // tokenizers' prepend gives the space the alignment of the character it precedes.
      prefixed_alignment.push_back(alignment[0]);
      prefixed_alignment.insert(prefixed_alignment.end(), alignment, alignment + text.size());
      alignment = prefixed_alignment.data();
    }
    text = prefixed;
  }
  std::vector<std::u32string_view> words;
  SplitGpt2Words(text, &words);
  std::vector<ByteSpan> ranges;
  std::vector<size_t> byte_chars;
  for (std::u32string_view word : words) {
    if (spans == nullptr) {
      EncodeWord(BytesToByteLevel(EncodeUtf8(word)), ids, nullptr);
      continue;
    }
    EncodeWord(BytesToByteLevel(WordBytes(word, &byte_chars)), ids, &ranges);
    // A piece spans the characters of its first and last bytes, whole.
    const ByteSpan* chars = alignment + (word.data() - text.data());
    for (const ByteSpan& r : ranges) {
      spans->push_back(Cover(chars[byte_chars[r.start]], chars[byte_chars[r.stop - 1]]));
    }
  }
}

void ByteLevelBpeBackend::EncodeWord(std::string_view word, std::vector<int32_t>* ids,
                                     std::vector<ByteSpan>* ranges) const {
  if (ranges != nullptr) ranges->clear();
  if (spec_.ignore_merges) {
    const auto it = index_.model_vocab.find(absl::string_view(word.data(), word.size()));
    if (it != index_.model_vocab.end()) {
      ids->push_back(it->second);
      if (ranges != nullptr) {
        ranges->push_back({0, DecodeUtf8(absl::string_view(word.data(), word.size())).size()});
      }
      return;
    }
  }
  std::vector<int32_t> symbols = CharacterIds(word, ranges);
  ApplyMerges(&symbols, ranges);
  ids->insert(ids->end(), symbols.begin(), symbols.end());
}

std::vector<int32_t> ByteLevelBpeBackend::CharacterIds(std::string_view word,
                                                       std::vector<ByteSpan>* ranges) const {
  std::vector<int32_t> symbols;
  std::string piece;
  bool last_was_unk = false;
  const std::u32string chars = DecodeUtf8(absl::string_view(word.data(), word.size()));
  for (size_t i = 0; i < chars.size(); ++i) {
    piece.clear();
    AppendUtf8(chars[i], &piece);
    if (const auto it = index_.model_vocab.find(piece); it != index_.model_vocab.end()) {
      symbols.push_back(it->second);
      if (ranges != nullptr) ranges->push_back({i, i + 1});
      last_was_unk = false;
      continue;
    }
    if (model_unk_ < 0) continue;
    if (spec_.fuse_unk && last_was_unk) {
      if (ranges != nullptr) ranges->back().stop = i + 1;
    } else {
      symbols.push_back(model_unk_);
      if (ranges != nullptr) ranges->push_back({i, i + 1});
    }
    last_was_unk = true;
  }
  return symbols;
}

// tokenizers' Word::merge_all: a queue of candidate merges, lowest rank first, then leftmost;
// a candidate whose pair has changed since is skipped unless the pair still merges into the same
// piece, exactly as tokenizers checks it (so ties between two ways of spelling one piece come out
// the same). O(n log n) in the length of the word, which matters for long words without spaces.
void ByteLevelBpeBackend::ApplyMerges(std::vector<int32_t>* symbols,
                                      std::vector<ByteSpan>* ranges) const {
  const auto n = static_cast<int64_t>(symbols->size());
  std::vector<int64_t> prev(n), next(n);
  std::vector<bool> alive(n, true);
  for (int64_t i = 0; i < n; ++i) {
    prev[i] = i - 1;
    next[i] = i + 1 < n ? i + 1 : -1;
  }
  using Candidate = std::tuple<int32_t, int64_t, int32_t>;  // rank, left position, merged id
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> queue;
  const auto push_pair = [&](int64_t left) {
    if (left < 0 || next[left] < 0) return;
    const auto it = merges_.find(PairKey((*symbols)[left], (*symbols)[next[left]]));
    if (it != merges_.end()) queue.emplace(it->second.rank, left, it->second.merged_id);
  };
  for (int64_t i = 0; i + 1 < n; ++i) push_pair(i);
  while (!queue.empty()) {
    const auto [rank, left, merged_id] = queue.top();
    queue.pop();
    if (!alive[left] || next[left] < 0) continue;
    const int64_t right = next[left];
    const auto it = merges_.find(PairKey((*symbols)[left], (*symbols)[right]));
    if (it == merges_.end() || it->second.merged_id != merged_id) continue;
    (*symbols)[left] = merged_id;
    if (ranges != nullptr) (*ranges)[left].stop = (*ranges)[right].stop;
    alive[right] = false;
    next[left] = next[right];
    if (next[right] >= 0) prev[next[right]] = left;
    push_pair(prev[left]);
    push_pair(left);
  }
  int64_t kept = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (!alive[i]) continue;
    (*symbols)[kept] = (*symbols)[i];
    if (ranges != nullptr) (*ranges)[kept] = (*ranges)[i];
    ++kept;
  }
  symbols->resize(static_cast<size_t>(kept));
  if (ranges != nullptr) ranges->resize(static_cast<size_t>(kept));
}

absl::StatusOr<std::string> ByteLevelBpeBackend::Decode(absl::Span<const int32_t> ids) const {
  std::string bytes;
  for (int32_t id : ids) bytes += PieceBytes(spec_.pieces[id]);
  // Pieces may end inside a character; like tokenizers' from_utf8_lossy, invalid bytes become
  // U+FFFD (here one per invalid byte, where Rust writes one per invalid sequence).
  return EncodeUtf8(DecodeUtf8(bytes));
}

absl::Status ByteLevelBpeBackend::ExportHuggingFace(const std::string& dir) const {
  return WriteByteLevelBpeHfFiles(spec_, dir);
}

}  // namespace padless::tokenize::internal
