#include "byte_level_alphabet.h"

#include <array>

#include "code_points.h"

namespace padless::tokenize::internal {
namespace {

// The bytes GPT-2 keeps as their own character: '!'..'~', '¡'..'¬', '®'..'ÿ'.
bool KeepsItsOwnChar(int byte) {
  return (byte >= 0x21 && byte <= 0x7E) || (byte >= 0xA1 && byte <= 0xAC) ||
         (byte >= 0xAE && byte <= 0xFF);
}

std::array<char32_t, 256> BuildTable() {
  std::array<char32_t, 256> table{};
  char32_t next = 0x100;
  for (int byte = 0; byte < 256; ++byte) {
    table[byte] = KeepsItsOwnChar(byte) ? static_cast<char32_t>(byte) : next++;
  }
  return table;
}

const std::array<char32_t, 256>& Table() {
  static const std::array<char32_t, 256> table = BuildTable();
  return table;
}

}  // namespace

char32_t ByteToChar(uint8_t byte) { return Table()[byte]; }

int CharToByte(char32_t c) {
  // The table is the identity on the kept bytes and increasing on the others, all below U+0144.
  if (c < 0x100) return KeepsItsOwnChar(static_cast<int>(c)) ? static_cast<int>(c) : -1;
  for (int byte = 0; byte < 256; ++byte) {
    if (Table()[byte] == c) return byte;
  }
  return -1;
}

std::string BytesToByteLevel(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char b : bytes) AppendUtf8(ByteToChar(static_cast<uint8_t>(b)), &out);
  return out;
}

}  // namespace padless::tokenize::internal
