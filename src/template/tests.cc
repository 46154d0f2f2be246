// Jinja2's builtin tests (`x is defined`, `n is divisibleby 3`, ...).
#include <string_view>
#include <utility>

#include "template/builtins.h"
#include "template/eval_ops.h"
#include "template/evaluator.h"
#include "template/utf8.h"

namespace tern::jinja {

namespace {

const Value& Arg0(std::string_view test, CallArgs& args) {
  if (args.pos.empty()) ThrowRender("test '" + std::string(test) + "' needs an argument");
  return args.pos[0];
}

bool IsLowerStr(const std::string& s, bool want_lower) {
  bool cased = false;
  for (size_t i = 0; i < s.size();) {
    size_t len;
    const char32_t c = utf8::Decode(s, i, &len);
    i += len;
    if (want_lower ? utf8::IsUpper(c) : utf8::IsLower(c)) return false;
    if (utf8::IsCased(c)) cased = true;
  }
  return cased;
}

bool Compare(CmpOp op, const Value& v, CallArgs& args, std::string_view name) {
  return CompareValues(op, v, Arg0(name, args));
}

int64_t IntOf(const Value& v) {
  CheckDefined(v);
  if (!v.is_int() && !v.is_bool()) {
    if (v.is_float()) return static_cast<int64_t>(v.as_double());
    ThrowRender("unsupported operand type(s) for %: '" + std::string(TypeName(v)) + "' and 'int'");
  }
  return v.as_int();
}

bool Defined(Evaluator&, const Value& v, CallArgs&) { return !v.is_undefined(); }
bool Undefined(Evaluator&, const Value& v, CallArgs&) { return v.is_undefined(); }
bool None(Evaluator&, const Value& v, CallArgs&) { return v.is_none(); }
bool Boolean(Evaluator&, const Value& v, CallArgs&) { return v.is_bool(); }
bool False(Evaluator&, const Value& v, CallArgs&) { return v.is_bool() && !v.as_bool(); }
bool True(Evaluator&, const Value& v, CallArgs&) { return v.is_bool() && v.as_bool(); }
bool Integer(Evaluator&, const Value& v, CallArgs&) { return v.is_int(); }
bool Float(Evaluator&, const Value& v, CallArgs&) { return v.is_float(); }
bool Number(Evaluator&, const Value& v, CallArgs&) { return v.is_number(); }
bool String(Evaluator&, const Value& v, CallArgs&) { return v.is_string(); }
bool Mapping(Evaluator&, const Value& v, CallArgs&) { return v.is_dict() && !v.is_namespace(); }
bool Iterable(Evaluator&, const Value& v, CallArgs&) {
  return v.is_undefined() || v.is_string() || v.is_list() || (v.is_dict() && !v.is_namespace());
}
bool Sequence(Evaluator&, const Value& v, CallArgs&) {
  return v.is_undefined() || v.is_string() || v.is_list() || (v.is_dict() && !v.is_namespace());
}
// Jinja2's Undefined defines __call__ (to fail), so it counts as callable.
bool Callable(Evaluator&, const Value& v, CallArgs&) {
  return v.is_undefined() || (v.is_object() && v.obj().IsCallable());
}
bool SameAs(Evaluator&, const Value& v, CallArgs& a) {
  const Value& o = Arg0("sameas", a);
  if (v.kind() != o.kind()) return false;
  switch (v.kind()) {
    case Kind::kUndefined:
    case Kind::kNone:
      return true;
    case Kind::kBool:
      return v.as_bool() == o.as_bool();
    case Kind::kInt:
      return v.as_int() == o.as_int();
    case Kind::kFloat:
      return v.as_double() == o.as_double();
    default:
      return v.identity() == o.identity();
  }
}
bool Escaped(Evaluator&, const Value&, CallArgs&) { return false; }
bool Odd(Evaluator&, const Value& v, CallArgs&) { return (IntOf(v) % 2) != 0; }
bool Even(Evaluator&, const Value& v, CallArgs&) { return (IntOf(v) % 2) == 0; }
bool DivisibleBy(Evaluator&, const Value& v, CallArgs& a) {
  const int64_t d = IntOf(Arg0("divisibleby", a));
  if (d == 0) ThrowRender("integer division or modulo by zero");
  return IntOf(v) % d == 0;
}
bool Eq(Evaluator&, const Value& v, CallArgs& a) { return Compare(CmpOp::kEq, v, a, "eq"); }
bool Ne(Evaluator&, const Value& v, CallArgs& a) { return Compare(CmpOp::kNe, v, a, "ne"); }
bool Lt(Evaluator&, const Value& v, CallArgs& a) { return Compare(CmpOp::kLt, v, a, "lt"); }
bool Le(Evaluator&, const Value& v, CallArgs& a) { return Compare(CmpOp::kLe, v, a, "le"); }
bool Gt(Evaluator&, const Value& v, CallArgs& a) { return Compare(CmpOp::kGt, v, a, "gt"); }
bool Ge(Evaluator&, const Value& v, CallArgs& a) { return Compare(CmpOp::kGe, v, a, "ge"); }
bool In(Evaluator&, const Value& v, CallArgs& a) { return Contains(Arg0("in", a), v); }
bool Lower(Evaluator&, const Value& v, CallArgs&) { return IsLowerStr(PyStr(v), true); }
bool Upper(Evaluator&, const Value& v, CallArgs&) { return IsLowerStr(PyStr(v), false); }
bool FilterTest(Evaluator&, const Value& v, CallArgs&) { return v.is_string() && FindFilter(v.str()) != nullptr; }
bool TestTest(Evaluator&, const Value& v, CallArgs&) { return v.is_string() && FindTest(v.str()) != nullptr; }

constexpr std::pair<std::string_view, TestFn> kTests[] = {
    {"defined", Defined},   {"undefined", Undefined}, {"none", None},          {"boolean", Boolean},
    {"false", False},       {"true", True},           {"integer", Integer},    {"float", Float},
    {"number", Number},     {"string", String},       {"mapping", Mapping},    {"iterable", Iterable},
    {"sequence", Sequence}, {"callable", Callable},   {"sameas", SameAs},      {"escaped", Escaped},
    {"odd", Odd},           {"even", Even},           {"divisibleby", DivisibleBy},
    {"eq", Eq},             {"equalto", Eq},          {"==", Eq},              {"ne", Ne},
    {"!=", Ne},             {"lt", Lt},               {"lessthan", Lt},        {"<", Lt},
    {"le", Le},             {"<=", Le},               {"gt", Gt},              {"greaterthan", Gt},
    {">", Gt},              {"ge", Ge},               {">=", Ge},              {"in", In},
    {"lower", Lower},       {"upper", Upper},         {"filter", FilterTest},  {"test", TestTest},
};

}  // namespace

TestFn FindTest(std::string_view name) {
  for (const auto& [n, fn] : kTests) {
    if (n == name) return fn;
  }
  return nullptr;
}

}  // namespace tern::jinja
