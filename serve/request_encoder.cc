#include "request_encoder.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace padless::serve::internal {
namespace {

// [CLS] text [SEP] or [CLS] text [SEP] pair [SEP], cut to max_len unless the request forbids it.
absl::StatusOr<tokenize::Encoding> EncodeWhole(const tokenize::Tokenizer& tokenizer,
                                               const EngineRequest& request, int64_t max_len,
                                               tokenize::Truncation truncation) {
  tokenize::EncodeOptions options;
  options.truncation = request.truncation.value_or(truncation);
  options.pair_truncation = tokenize::PairTruncation::kLongestFirst;
  options.max_length = request.truncate ? max_len : 0;  // 0: no limit, to measure the text
  absl::StatusOr<tokenize::Encoding> e =
      request.pair.has_value() ? tokenizer.EncodePair(request.text, *request.pair, options)
                               : tokenizer.Encode(request.text, options);
  if (!e.ok()) return e.status();
  const int64_t length = static_cast<int64_t>(e->ids.size());
  if (length > max_len) {
    return absl::InvalidArgumentError(absl::StrCat(
        "input of ", length, " tokens is longer than max_len ", max_len, " and truncate is false"));
  }
  return e;
}

// Token ids given by the client: checked against the vocabulary, cut to max_len from the end
// the truncation names (kHead keeps the first ids, otherwise the last ones).
absl::StatusOr<tokenize::Encoding> EncodeIds(const tokenize::Tokenizer& tokenizer,
                                             const EngineRequest& request, int64_t max_len,
                                             tokenize::Truncation truncation) {
  const int64_t vocab = tokenizer.vocab_size();
  for (int32_t id : request.ids) {
    if (id < 0 || id >= vocab) {
      return absl::InvalidArgumentError(
          absl::StrCat("token id ", id, " is outside the vocabulary [0, ", vocab, ")"));
    }
  }
  const int64_t length = static_cast<int64_t>(request.ids.size());
  if (length > max_len && !request.truncate) {
    return absl::InvalidArgumentError(absl::StrCat("input of ", length,
                                                   " tokens is longer than max_len ", max_len,
                                                   " and truncate is false"));
  }
  tokenize::Encoding e;
  const bool keep_first = request.truncation.value_or(truncation) == tokenize::Truncation::kHead;
  const int64_t kept = std::min(length, max_len);
  const auto first = request.ids.begin() + (keep_first ? 0 : length - kept);
  e.ids.assign(first, first + kept);
  return e;
}

}  // namespace

absl::StatusOr<std::vector<tokenize::Encoding>> EncodeRequest(const tokenize::Tokenizer& tokenizer,
                                                              const EngineRequest& request,
                                                              const RequestEncoding& options) {
  std::vector<tokenize::Encoding> out;
  if (!request.ids.empty()) {
    absl::StatusOr<tokenize::Encoding> given =
        EncodeIds(tokenizer, request, options.max_len, options.truncation);
    if (!given.ok()) return given.status();
    out.push_back(*std::move(given));
    return out;
  }
  if (options.long_text == LongText::kWindows && !request.pair.has_value()) {
    absl::StatusOr<std::vector<tokenize::Encoding>> windows =
        tokenizer.EncodeWindows(request.text, options.max_len, options.window_stride);
    if (!windows.ok()) return windows.status();
    out = std::move(*windows);
  }
  // Pairs have no windows; an empty text may have none either: it is [CLS][SEP].
  if (out.empty()) {
    absl::StatusOr<tokenize::Encoding> whole =
        EncodeWhole(tokenizer, request, options.max_len, options.truncation);
    if (!whole.ok()) return whole.status();
    out.push_back(std::move(*whole));
  }
  return out;
}

}  // namespace padless::serve::internal
