// EBNF expressions for bounded JSON integers and numbers (internal to json_schema.cc).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace tern::grammar::internal {

struct Bound {
  int64_t value;
  bool exclusive = false;
};

// Integers in [lo, hi] (either end open when nullopt), as JSON text.
std::string IntegerRange(std::optional<int64_t> lo, std::optional<int64_t> hi);
// Numbers x with lo <(=) x <(=) hi for integer bounds, without exponent; ""
// when no number qualifies.
std::string NumberRange(std::optional<Bound> lo, std::optional<Bound> hi);

}  // namespace tern::grammar::internal
