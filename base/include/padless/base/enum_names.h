// One mechanism for the enums that flags and files name as text ("--amp bf16", "pooling": "mean"):
// a table of (name, value) rows, parsed with ParseEnum and named with EnumToName. The first row of
// a value holds its canonical name (EnumToName's answer, and the one an error lists); further rows
// of the same value are accepted aliases ("fp32" for AmpMode::kOff).
//
//   constexpr base::EnumName<Pooling> kPoolings[] = {{"cls", Pooling::kCls},
//                                                    {"mean", Pooling::kMean}};
//   ParseEnum("pooling", "max", kPoolings)
//     -> InvalidArgument "unknown pooling 'max' (expected cls or mean)"
#ifndef PADLESS_BASE_ENUM_NAMES_H_
#define PADLESS_BASE_ENUM_NAMES_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace padless::base {

template <typename E>
struct EnumName {
  absl::string_view name;
  E value;
};

// The canonical names of `table`, in table order, as a sentence's list: "a", "a or b",
// "a, b or c".
template <typename E, size_t N>
std::string CanonicalNames(const EnumName<E> (&table)[N]) {
  std::vector<absl::string_view> names;
  for (size_t i = 0; i < N; ++i) {
    bool alias = false;
    for (size_t j = 0; j < i; ++j) alias = alias || table[j].value == table[i].value;
    if (!alias) names.push_back(table[i].name);
  }
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? " or " : ", ";
    absl::StrAppend(&out, names[i]);
  }
  return out;
}

// The value `name` stands for. InvalidArgument "unknown <what> '<name>' (expected <canonical
// names>)" when no row has it; `what` says what the name is of, e.g. "pooling".
template <typename E, size_t N>
absl::StatusOr<E> ParseEnum(absl::string_view what, absl::string_view name,
                            const EnumName<E> (&table)[N]) {
  for (const EnumName<E>& row : table) {
    if (row.name == name) return row.value;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown ", what, " '", name, "' (expected ", CanonicalNames(table), ")"));
}

// The canonical name of `value`: its first row. Every enumerator has a row, so "?" (no row) only
// answers a value cast from an out-of-range integer.
template <typename E, size_t N>
absl::string_view EnumToName(E value, const EnumName<E> (&table)[N]) {
  for (const EnumName<E>& row : table) {
    if (row.value == value) return row.name;
  }
  return "?";
}

}  // namespace padless::base

#endif  // PADLESS_BASE_ENUM_NAMES_H_
