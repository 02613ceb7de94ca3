#include "padless/serve/http/float_json.h"

#include <charconv>
#include <cmath>
#include <cstring>

namespace padless::serve::http {
namespace {

// std::to_chars's shortest form of a float has at most 15 characters ("-1.17549435e-38"); ".0"
// is added only to integral values written without an exponent, which are shorter.
constexpr size_t kMaxFloatChars = 24;

// Writes `value` (finite) at `at` and returns the end.
char* WriteFloat(float value, char* at) {
  const std::to_chars_result written = std::to_chars(at, at + kMaxFloatChars, value);
  char* end = written.ptr;
  bool has_point_or_exponent = false;
  for (const char* c = at; c != end; ++c) {
    if (*c == '.' || *c == 'e') {
      has_point_or_exponent = true;
      break;
    }
  }
  if (!has_point_or_exponent) {
    std::memcpy(end, ".0", 2);
    end += 2;
  }
  return end;
}

}  // namespace

bool AppendJsonFloat(float value, std::string* out) {
  if (!std::isfinite(value)) return false;
  char buffer[kMaxFloatChars + 2];
  out->append(buffer, WriteFloat(value, buffer));
  return true;
}

bool AppendJsonFloatArray(const float* values, size_t size, std::string* out) {
  const size_t start = out->size();
  // One resize for the whole array (every value with its comma, room for to_chars's range past
  // the last one, the brackets), trimmed at the end.
  out->resize(start + (size + 1) * (kMaxFloatChars + 3));
  char* at = out->data() + start;
  *at++ = '[';
  for (size_t i = 0; i < size; ++i) {
    if (!std::isfinite(values[i])) {
      out->resize(start);
      return false;
    }
    if (i > 0) *at++ = ',';
    at = WriteFloat(values[i], at);
  }
  *at++ = ']';
  out->resize(static_cast<size_t>(at - out->data()));
  return true;
}

}  // namespace padless::serve::http
