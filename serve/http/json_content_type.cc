#include "padless/serve/http/json_content_type.h"

#include <algorithm>
#include <cstddef>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace padless::serve::http {
namespace {

// RFC 9110 5.6.2: tchar.
bool IsTokenChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) ||
         absl::string_view("!#$%&'*+-.^_`|~").find(c) != absl::string_view::npos;
}

bool IsToken(absl::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), IsTokenChar);
}

// The header comes from the client: quoted in a message, it stays short.
constexpr size_t kMaxQuoted = 64;

}  // namespace

bool IsJsonContentType(absl::string_view content_type) {
  const absl::string_view media_type =
      absl::StripAsciiWhitespace(content_type.substr(0, content_type.find(';')));
  const size_t slash = media_type.find('/');
  if (slash == absl::string_view::npos) return false;
  const absl::string_view type = media_type.substr(0, slash);
  const absl::string_view subtype = media_type.substr(slash + 1);
  if (!IsToken(type) || !IsToken(subtype) || !absl::EqualsIgnoreCase(type, "application")) {
    return false;
  }
  constexpr absl::string_view kSuffix = "+json";
  return absl::EqualsIgnoreCase(subtype, "json") ||
         (subtype.size() > kSuffix.size() && absl::EndsWithIgnoreCase(subtype, kSuffix));
}

std::optional<ApiError> CheckJsonContentType(std::optional<absl::string_view> content_type) {
  // axum's message, which TEI clients may already match on, then what was sent.
  constexpr absl::string_view kExpected = "Expected request with `Content-Type: application/json`";
  if (!content_type) return UnsupportedMediaType(absl::StrCat(kExpected, " (no Content-Type)"));
  if (IsJsonContentType(*content_type)) return std::nullopt;
  const absl::string_view quoted = content_type->substr(0, kMaxQuoted);
  return UnsupportedMediaType(absl::StrCat(kExpected, " (got `", quoted,
                                           quoted.size() < content_type->size() ? "...`)" : "`)"));
}

}  // namespace padless::serve::http
