// GPT-2's byte-to-unicode table (tokenizers' pre_tokenizers/byte_level.rs bytes_char): every byte
// gets a printable character, so byte-level BPE pieces are ordinary strings without spaces or
// control characters. Printable Latin-1 bytes map to themselves; the other 68 (controls, space,
// DEL, NBSP, soft hyphen) map to U+0100 on, in byte order (space is 'Ġ', newline 'Ċ').
#ifndef PADLESS_TOKENIZE_BYTE_LEVEL_ALPHABET_H_
#define PADLESS_TOKENIZE_BYTE_LEVEL_ALPHABET_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace padless::tokenize::internal {

char32_t ByteToChar(uint8_t byte);
// The byte of a character of the table, or -1 for any other character.
int CharToByte(char32_t c);
// The byte-level characters of every byte of `bytes`, as UTF-8.
std::string BytesToByteLevel(std::string_view bytes);

}  // namespace padless::tokenize::internal

#endif  // PADLESS_TOKENIZE_BYTE_LEVEL_ALPHABET_H_
