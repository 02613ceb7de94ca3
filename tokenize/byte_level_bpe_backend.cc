#include "byte_level_bpe_backend.h"

#include <functional>
#include <queue>
#include <tuple>
#include <utility>

#include "bert_char_classes.h"
#include "byte_level_alphabet.h"
#include "byte_level_pre_tokenizer.h"
#include "code_points.h"
#include "hf_export.h"

namespace padless::tokenize::internal {
namespace {

// A piece of the text between added tokens, or an added token (index into the spec's list).
struct Segment {
  std::u32string_view text;
  int64_t added_token = -1;
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
void StripAroundAddedTokens(const std::vector<AddedToken>& tokens, std::vector<Segment>* segments) {
  for (size_t i = 0; i < segments->size(); ++i) {
    const int64_t t = (*segments)[i].added_token;
    if (t < 0) continue;
    if (tokens[t].lstrip && i > 0 && (*segments)[i - 1].added_token < 0) {
      (*segments)[i - 1].text = TrimTrailingWhitespace((*segments)[i - 1].text);
    }
    if (tokens[t].rstrip && i + 1 < segments->size() && (*segments)[i + 1].added_token < 0) {
      (*segments)[i + 1].text = TrimLeadingWhitespace((*segments)[i + 1].text);
    }
  }
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
    const std::string& content = spec_.added_tokens[i].content;
    if (!content.empty()) added_.emplace_back(DecodeUtf8(content), i);
  }
  LongestFirst(&added_);
}

absl::Status ByteLevelBpeBackend::Encode(absl::string_view text, std::vector<int32_t>* ids) const {
  ids->clear();
  const std::u32string chars = DecodeUtf8(text);
  std::vector<Segment> segments;
  SplitAtAddedTokens(
      std::u32string_view(chars), added_,
      [&](std::u32string_view s) {
        segments.push_back({s, -1});
      },
      [&](size_t token) {
        segments.push_back({{}, static_cast<int64_t>(added_[token].second)});
      });
  StripAroundAddedTokens(spec_.added_tokens, &segments);
  for (const Segment& s : segments) {
    if (s.added_token >= 0) {
      ids->push_back(spec_.added_tokens[s.added_token].id);
    } else {
      EncodeSegment(s.text, ids);
    }
  }
  return absl::OkStatus();
}

void ByteLevelBpeBackend::EncodeSegment(std::u32string_view text, std::vector<int32_t>* ids) const {
  // tokenizers drops empty segments before pre-tokenizing, so they get no prefix space either.
  if (text.empty()) return;
  std::u32string prefixed;
  if (spec_.add_prefix_space && text.front() != U' ') {
    prefixed.reserve(text.size() + 1);
    prefixed.push_back(U' ');
    prefixed.append(text);
    text = prefixed;
  }
  std::vector<std::u32string_view> words;
  SplitGpt2Words(text, &words);
  for (std::u32string_view word : words) EncodeWord(BytesToByteLevel(EncodeUtf8(word)), ids);
}

void ByteLevelBpeBackend::EncodeWord(std::string_view word, std::vector<int32_t>* ids) const {
  if (spec_.ignore_merges) {
    const auto it = index_.model_vocab.find(absl::string_view(word.data(), word.size()));
    if (it != index_.model_vocab.end()) {
      ids->push_back(it->second);
      return;
    }
  }
  std::vector<int32_t> symbols = CharacterIds(word);
  ApplyMerges(&symbols);
  ids->insert(ids->end(), symbols.begin(), symbols.end());
}

std::vector<int32_t> ByteLevelBpeBackend::CharacterIds(std::string_view word) const {
  std::vector<int32_t> symbols;
  std::string piece;
  bool last_was_unk = false;
  for (char32_t c : DecodeUtf8(absl::string_view(word.data(), word.size()))) {
    piece.clear();
    AppendUtf8(c, &piece);
    if (const auto it = index_.model_vocab.find(piece); it != index_.model_vocab.end()) {
      symbols.push_back(it->second);
      last_was_unk = false;
      continue;
    }
    if (model_unk_ < 0) continue;
    if (!(spec_.fuse_unk && last_was_unk)) symbols.push_back(model_unk_);
    last_was_unk = true;
  }
  return symbols;
}

// tokenizers' Word::merge_all: a queue of candidate merges, lowest rank first, then leftmost;
// a candidate whose pair has changed since is skipped unless the pair still merges into the same
// piece, exactly as tokenizers checks it (so ties between two ways of spelling one piece come out
// the same). O(n log n) in the length of the word, which matters for long words without spaces.
void ByteLevelBpeBackend::ApplyMerges(std::vector<int32_t>* symbols) const {
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
    alive[right] = false;
    next[left] = next[right];
    if (next[right] >= 0) prev[next[right]] = left;
    push_pair(prev[left]);
    push_pair(left);
  }
  int64_t kept = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (alive[i]) (*symbols)[kept++] = (*symbols)[i];
  }
  symbols->resize(static_cast<size_t>(kept));
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
