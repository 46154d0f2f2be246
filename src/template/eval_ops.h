// Python operator semantics on Values: arithmetic (int stays int, / is true
// division, // and % floor toward -inf, int overflow is an error), string and
// list concatenation and repetition, comparisons, `in`, slicing by code point.
#pragma once

#include <cstdint>
#include <optional>

#include "template/ast.h"
#include "template/value.h"

namespace tern::jinja {

class Evaluator;

Value UnaryMinusPlus(const Value& v, bool negate);
Value BinaryOpValues(Evaluator& ev, BinaryOp op, const Value& l, const Value& r);
// One comparison of a chain; throws for unorderable types.
bool CompareValues(CmpOp op, const Value& l, const Value& r);
// Python `needle in haystack`.
bool Contains(const Value& haystack, const Value& needle);
// obj[start:stop:step] for strings (code points), lists and tuples.
Value SliceValue(Evaluator& ev, const Value& obj, std::optional<int64_t> start, std::optional<int64_t> stop,
                 std::optional<int64_t> step);

}  // namespace tern::jinja
