#include "padless/base/svg.h"

#include "absl/strings/str_format.h"

namespace padless::base {

std::string SvgHeader(int width, int height, int font_size, bool white_background) {
  std::string out = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
      "font-family=\"sans-serif\" font-size=\"%d\">\n",
      width, height, font_size);
  if (white_background) out += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  return out;
}

}  // namespace padless::base
