// Linear-time JSON for request bodies and what is built from them.
//
// Json is nlohmann::ordered_json (key order is kept: tool schemas reach
// the chat template as sent). Its object is a vector that nlohmann's own
// parser fills through operator[], a linear scan for a duplicate per key, so
// a body of 100k keys took 16 s to parse. ParseJsonLinear builds the same
// value with one pass over each object's keys (a hash set, only for objects
// of more than a few keys), and the helpers below keep code that builds
// objects from a client's keys linear too.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace tern {

// Parses `text` into `out`; the same value nlohmann::ordered_json::parse
// gives, duplicate keys included (the first one's place, the last one's
// value). On a syntax error returns false with the byte offset (1-based, as
// nlohmann's parse_error::byte) and the message.
bool ParseJsonLinear(std::string_view text, nlohmann::ordered_json* out, size_t* error_byte = nullptr, std::string* error = nullptr);

// The deepest nesting of '[' and '{' outside string literals in JSON text.
// Checked before parsing untrusted text, so that the recursive walks over the
// parsed value (dump, copies) stay shallow: request bodies nesting deeper than
// 1000 are rejected, as Python's json module would hit its recursion limit,
// and tern check refuses such replies.
int JsonNestingDepth(std::string_view text);

// Appends key/value to an object without looking for `key`: the caller
// knows it is not there (keys copied from another object).
void AppendNewKey(nlohmann::ordered_json& object, std::string key, nlohmann::ordered_json value);

// dst[k] = v for every member of `src`, in src's order, in time linear in
// the sizes of both (nlohmann's operator[] per key is quadratic).
void MergeObject(nlohmann::ordered_json& dst, const nlohmann::ordered_json& src);

}  // namespace tern
