// Text-output helpers shared by every report writer (CSV tables, SVG charts, caches, models):
// escaping for XML/SVG text, quoting for CSV fields, and writing a file through a temporary and a
// rename, so a crash or a full disk never leaves a half-written file where a reader would trust it.
#ifndef PADLESS_REPORT_TEXT_OUTPUT_H_
#define PADLESS_REPORT_TEXT_OUTPUT_H_

#include <functional>
#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace padless::report {

// Escapes &, <, > and " for use in XML/SVG text and attribute values.
std::string XmlEscape(absl::string_view s);

// Returns `s` as one CSV field: unchanged unless it holds a comma, a quote or a newline, in which
// case it is quoted with inner quotes doubled (RFC 4180).
std::string CsvField(absl::string_view s);

// Calls `write` on a binary stream to `path`.tmp, then renames it over `path`. On failure the
// temporary is removed and `path` is left as it was: UnavailableError when the file cannot be
// opened or renamed, DataLossError when a write fails (e.g. a full disk).
absl::Status WriteFileAtomically(const std::string& path,
                                 const std::function<void(std::ostream&)>& write);

// The same for content already in memory.
absl::Status WriteFileAtomically(const std::string& path, absl::string_view content);

}  // namespace padless::report

#endif  // PADLESS_REPORT_TEXT_OUTPUT_H_
