// UTF-8 helpers with Python str semantics: templates index, slice and measure
// strings by code point, and Python's str methods (strip, split, upper, ...)
// classify characters with Unicode rules.
//
// Contract: input may be any byte string. A byte that does not start a valid
// UTF-8 sequence counts as one code point (U+FFFD for classification) so that
// nothing here can read out of bounds or loop forever on bad input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tern::jinja::utf8 {

// Decodes the code point starting at s[i]; sets *len to its byte length (>= 1).
char32_t Decode(std::string_view s, size_t i, size_t* len);
void Append(std::string& out, char32_t cp);

// Number of code points.
size_t Length(std::string_view s);
// Byte offsets of every code point start, plus s.size() at the end.
std::vector<size_t> Offsets(std::string_view s);
// True when every byte is ASCII (then byte index == code point index).
bool IsAscii(std::string_view s);

// Python str.isspace() for one code point.
bool IsSpace(char32_t cp);
bool IsAlpha(char32_t cp);
bool IsDigit(char32_t cp);
bool IsAlnum(char32_t cp);
bool IsUpper(char32_t cp);
bool IsLower(char32_t cp);
bool IsCased(char32_t cp);
// str.isprintable(): not in categories Cc, Cf, Cs, Co, Cn, Zl, Zp, Zs, except ' '.
bool IsPrintable(char32_t cp);
// str.isidentifier(): XID_Start or '_' first, XID_Continue after (from the
// general category plus Unicode's Other_ID_* and XID exception lists).
bool IsIdentifierStart(char32_t cp);
bool IsIdentifierContinue(char32_t cp);

std::string Upper(std::string_view s);
std::string Lower(std::string_view s);
// Python str.title(): first cased letter after a non-cased character is
// titlecased, the others lowercased.
std::string Title(std::string_view s);
// Python str.capitalize(): first character upper, the rest lower.
std::string Capitalize(std::string_view s);

// Python str.strip/lstrip/rstrip. chars == nullptr strips Unicode whitespace;
// otherwise strips any code point contained in *chars.
std::string_view Strip(std::string_view s, const std::string_view* chars, bool left, bool right);

}  // namespace tern::jinja::utf8
