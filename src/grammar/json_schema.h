// JSON Schema (draft 2020-12 semantics) to an EBNF grammar (ebnf_parser.h)
// whose strings are the JSON serializations of the instances the schema
// accepts, in one canonical form: properties in the schema's order, then
// additional ones; no exponent on bounded numbers.
//
// Supported: type (the seven types and lists of them), properties, required,
// additionalProperties (false / true / a schema), enum, const, items,
// prefixItems, minItems, maxItems, minLength, maxLength, pattern, format
// (date, time, date-time, uuid, email, ipv4, hostname), minimum, maximum,
// exclusiveMinimum, exclusiveMaximum (integers; numbers with integer-valued
// bounds), anyOf, oneOf (as anyOf: exclusivity is not enforced), allOf of
// mergeable schemas, $ref to "#..." JSON pointers ($defs / definitions,
// recursion included), nullable (OpenAPI). Annotations (title,
// description, default, examples, $comment, $schema, $id, ...) are ignored.
// Any other keyword is an error naming it and where it is, never ignored.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace tern::grammar {

struct JsonSchemaOptions {
  enum class Whitespace {
    kCompact,  // {"a":1,"b":[1,2]}
    kSpaced,   // {"a": 1, "b": [1, 2]}  (Python json.dumps, what chat templates show models)
    kAny,      // up to 16 spaces, tabs or newlines wherever JSON allows white space
  };
  Whitespace whitespace = Whitespace::kCompact;
  // xgrammar's strict mode (what SGLang serves): a missing
  // additionalProperties means false, a missing `items` beside prefixItems
  // means no more items, and a schema without `type` takes the type its
  // keywords imply. Off: the schema's exact JSON Schema meaning.
  bool strict = true;
  int max_depth = 64;  // nested (non-$ref) subschemas
};

// Rules are named `prefix` + ..., the start rule `prefix` + "root".
Result<std::string> JsonSchemaToEbnf(const nlohmann::ordered_json& schema, const JsonSchemaOptions& options = {},
                                     std::string_view prefix = "");

}  // namespace tern::grammar
