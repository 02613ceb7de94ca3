#include "request_encoder.h"

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

}  // namespace

absl::StatusOr<std::vector<tokenize::Encoding>> EncodeRequest(const tokenize::Tokenizer& tokenizer,
                                                              const EngineRequest& request,
                                                              const RequestEncoding& options) {
  std::vector<tokenize::Encoding> out;
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
