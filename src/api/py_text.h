// Python-compatible text forms that SGLang's wire format and messages contain.
//
// SGLang builds tool-call arguments with Python's json.dumps(x,
// ensure_ascii=False) and error messages with f-strings over Python floats,
// so matching it byte for byte needs Python's float repr, json.dumps
// separators (", " and ": ") and repr() of strings.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace tern::api {

// repr(float): shortest round-trip digits; fixed notation with at least one
// fractional digit for 1e-4 <= |x| < 1e16 ("2.0", "0.0001", "-0.5"),
// otherwise exponent form ("1e-05", "1.5e+16"); "inf", "-inf", "nan".
std::string PyFloatRepr(double x);

// Appends `s` as a JSON string literal the way json.dumps(ensure_ascii=False)
// writes it: '"' and '\\' escaped, \n \r \t \b \f, other bytes < 0x20 as
// \u00XX, everything else (UTF-8 included) verbatim.
void AppendPyJsonString(std::string* out, std::string_view s);

// json.dumps(value, ensure_ascii=False): ", " and ": " separators, floats in
// repr form ("5.0"), non-finite floats as Infinity/-Infinity/NaN, object keys
// in the order of `value` (use nlohmann::ordered_json to keep input order).
std::string PyJsonDumps(const nlohmann::ordered_json& value);
void AppendPyJsonDumps(std::string* out, const nlohmann::ordered_json& value);

// repr(str): single quotes unless the text has ' and no ", backslash escapes
// for \\ \n \r \t, \xNN for other control bytes; UTF-8 kept.
std::string PyStrRepr(std::string_view s);

// repr() of the Python object json.loads would build: dicts {'k': v},
// lists [..], True/False/None, floats in repr form.
std::string PyRepr(const nlohmann::ordered_json& value);

}  // namespace tern::api
