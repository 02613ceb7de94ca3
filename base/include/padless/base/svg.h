// The opening every hand-written SVG chart of padless shares (padding report, memory profile,
// end-to-end bench, token-length histogram), so the charts look alike and need no plotting library.
#ifndef PADLESS_BASE_SVG_H_
#define PADLESS_BASE_SVG_H_

#include <string>

namespace padless::base {

// `<svg ...>` of width x height pixels with sans-serif text at font_size, followed by a white
// full-size background rect when `white_background` (so viewers with a dark theme stay readable).
// The caller appends the chart and closes it with "</svg>\n".
std::string SvgHeader(int width, int height, int font_size, bool white_background = true);

}  // namespace padless::base

#endif  // PADLESS_BASE_SVG_H_
