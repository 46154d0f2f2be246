// Filters over sequences and mappings (registered in filters.cc).
#pragma once

#include "template/value.h"

namespace tern::jinja {

Value FilterFirst(Evaluator& ev, const Value& v, CallArgs& args);
Value FilterLast(Evaluator& ev, const Value& v, CallArgs& args);
Value FilterList(Evaluator& ev, const Value& v, CallArgs& args);
Value FilterJoin(Evaluator& ev, const Value& v, CallArgs& args);
Value FilterMap(Evaluator& ev, const Value& v, CallArgs& args);
Value FilterSelect(Evaluator& ev, const Value& v, CallArgs& args);
Value FilterReject(Evaluator& ev, const Value& v, CallArgs& args);
Value FilterSelectAttr(Evaluator& ev, const Value& v, CallArgs& args);
Value FilterRejectAttr(Evaluator& ev, const Value& v, CallArgs& args);
Value FilterItems(Evaluator& ev, const Value& v, CallArgs& args);
Value FilterDictSort(Evaluator& ev, const Value& v, CallArgs& args);
Value FilterUnique(Evaluator& ev, const Value& v, CallArgs& args);
Value FilterReverse(Evaluator& ev, const Value& v, CallArgs& args);
Value FilterSort(Evaluator& ev, const Value& v, CallArgs& args);
Value FilterSum(Evaluator& ev, const Value& v, CallArgs& args);
Value FilterMin(Evaluator& ev, const Value& v, CallArgs& args);
Value FilterMax(Evaluator& ev, const Value& v, CallArgs& args);
Value FilterBatch(Evaluator& ev, const Value& v, CallArgs& args);
Value FilterSlice(Evaluator& ev, const Value& v, CallArgs& args);

}  // namespace tern::jinja
