// Parsers for the Python value syntaxes SGLang's qwen3_coder parameter
// conversion relies on: int(), float() and ast.literal_eval().
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace tern::api {

// Python int(text) for base 10: surrounding whitespace, a sign, digits with
// single underscores between them. Returns the canonical decimal ("007" ->
// "7", "-0" -> "0"), any size; nullopt if Python would raise.
std::optional<std::string> PyIntText(std::string_view text);

// Python float(text): surrounding whitespace, sign, digits with underscores,
// optional fraction and exponent, "inf"/"infinity"/"nan" in any case.
std::optional<double> PyFloatText(std::string_view text);

// ast.literal_eval(text) for the literals that map onto JSON: dicts (keys
// str/int/float/bool/None, converted the way json.dumps converts them),
// lists and tuples (as arrays), str (quotes, escapes, adjacent-literal
// concatenation), int (decimal/hex/octal/binary, underscores), float,
// True/False/None, unary +/-. Anything else (sets, bytes, complex, names,
// calls, nesting deeper than 200) returns nullopt.
std::optional<nlohmann::ordered_json> PyLiteralEval(std::string_view text);

}  // namespace tern::api
