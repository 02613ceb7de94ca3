// Text escaping shared by every report writer (CSV tables, SVG charts): escaping for XML/SVG text
// and quoting for CSV fields. The files themselves are written by atomic_file_writer.h.
#ifndef PADLESS_BASE_TEXT_OUTPUT_H_
#define PADLESS_BASE_TEXT_OUTPUT_H_

#include <string>

#include "absl/strings/string_view.h"

namespace padless::base {

// Escapes &, <, > and " for use in XML/SVG text and attribute values.
std::string XmlEscape(absl::string_view s);

// Returns `s` as one CSV field: unchanged unless it holds a comma, a quote or a newline, in which
// case it is quoted with inner quotes doubled (RFC 4180).
std::string CsvField(absl::string_view s);

}  // namespace padless::base

#endif  // PADLESS_BASE_TEXT_OUTPUT_H_
