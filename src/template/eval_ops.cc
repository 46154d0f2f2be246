#include "template/eval_ops.h"

#include <cmath>

#include <fmt/format.h>

#include "template/builtins.h"
#include "template/evaluator.h"
#include "template/utf8.h"

namespace tern::jinja {

namespace {

[[noreturn]] void Unsupported(const char* op, const Value& l, const Value& r) {
  ThrowRender(fmt::format("unsupported operand type(s) for {}: '{}' and '{}'", op, TypeName(l), TypeName(r)));
}

bool IsIntLike(const Value& v) { return v.is_int() || v.is_bool(); }

Value Repeat(Evaluator& ev, const Value& seq, int64_t n) {
  if (n < 0) n = 0;
  if (seq.is_string()) {
    const std::string& s = seq.str();
    if (!s.empty() && static_cast<uint64_t>(n) > ev.options().max_output_bytes / s.size()) {
      ev.CheckSize(ev.options().max_output_bytes + 1);
    }
    std::string out;
    out.reserve(s.size() * static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) out += s;
    return ev.MakeString(std::move(out));
  }
  const auto& items = seq.list().items;
  if (!items.empty() && static_cast<uint64_t>(n) > ev.options().max_output_bytes / items.size()) {
    ev.CheckSize(ev.options().max_output_bytes + 1);
  }
  ev.Tick(static_cast<int64_t>(items.size()) * n);
  std::vector<Value> out;
  for (int64_t i = 0; i < n; ++i) out.insert(out.end(), items.begin(), items.end());
  return Value::List(std::move(out), seq.is_tuple());
}

double FloorDiv(double a, double b) { return std::floor(a / b); }

Value IntPow(int64_t base, int64_t exp) {
  int64_t result = 1;
  int64_t b = base;
  while (exp > 0) {
    if (exp & 1) {
      if (__builtin_mul_overflow(result, b, &result)) ThrowRender("integer overflow in **");
    }
    exp >>= 1;
    if (exp > 0 && __builtin_mul_overflow(b, b, &b)) ThrowRender("integer overflow in **");
  }
  return Value::Int(result);
}

}  // namespace

Value UnaryMinusPlus(const Value& v, bool negate) {
  CheckDefined(v);
  if (IsIntLike(v)) {
    if (!negate) return Value::Int(v.as_int());
    if (v.as_int() == INT64_MIN) ThrowRender("integer overflow");
    return Value::Int(-v.as_int());
  }
  if (v.is_float()) return Value::Float(negate ? -v.as_double() : v.as_double());
  ThrowRender(fmt::format("bad operand type for unary {}: '{}'", negate ? '-' : '+', TypeName(v)));
}

Value BinaryOpValues(Evaluator& ev, BinaryOp op, const Value& l, const Value& r) {
  CheckDefined(l);
  if (!(op == BinaryOp::kMod && l.is_string())) CheckDefined(r);
  const bool ints = IsIntLike(l) && IsIntLike(r);
  const bool nums = l.is_number() && r.is_number();
  switch (op) {
    case BinaryOp::kAdd: {
      if (ints) {
        int64_t out;
        if (__builtin_add_overflow(l.as_int(), r.as_int(), &out)) ThrowRender("integer overflow in +");
        return Value::Int(out);
      }
      if (nums) return Value::Float(l.as_double() + r.as_double());
      if (l.is_string() && r.is_string()) {
        ev.CheckSize(l.str().size() + r.str().size());
        return ev.MakeString(l.str() + r.str());
      }
      if (l.is_list() && r.is_list() && l.is_tuple() == r.is_tuple()) {
        ev.CheckSize(l.list().items.size() + r.list().items.size());
        std::vector<Value> items = l.list().items;
        items.insert(items.end(), r.list().items.begin(), r.list().items.end());
        ev.Tick(static_cast<int64_t>(items.size()));
        return Value::List(std::move(items), l.is_tuple());
      }
      if (l.is_string() || l.is_list()) {
        ThrowRender(fmt::format("can only concatenate {} (not \"{}\") to {}", TypeName(l), TypeName(r), TypeName(l)));
      }
      Unsupported("+", l, r);
    }
    case BinaryOp::kSub:
      if (ints) {
        int64_t out;
        if (__builtin_sub_overflow(l.as_int(), r.as_int(), &out)) ThrowRender("integer overflow in -");
        return Value::Int(out);
      }
      if (nums) return Value::Float(l.as_double() - r.as_double());
      Unsupported("-", l, r);
    case BinaryOp::kMul:
      if (ints) {
        int64_t out;
        if (__builtin_mul_overflow(l.as_int(), r.as_int(), &out)) ThrowRender("integer overflow in *");
        return Value::Int(out);
      }
      if (nums) return Value::Float(l.as_double() * r.as_double());
      if ((l.is_string() || l.is_list()) && IsIntLike(r)) return Repeat(ev, l, r.as_int());
      if ((r.is_string() || r.is_list()) && IsIntLike(l)) return Repeat(ev, r, l.as_int());
      if (l.is_string() || l.is_list() || r.is_string() || r.is_list()) {
        ThrowRender(fmt::format("can't multiply sequence by non-int of type '{}'",
                                TypeName(l.is_string() || l.is_list() ? r : l)));
      }
      Unsupported("*", l, r);
    case BinaryOp::kDiv:
      if (nums) {
        if (r.as_double() == 0.0) ThrowRender(ints ? "division by zero" : "float division by zero");
        return Value::Float(l.as_double() / r.as_double());
      }
      Unsupported("/", l, r);
    case BinaryOp::kFloorDiv:
      if (ints) {
        const int64_t a = l.as_int(), b = r.as_int();
        if (b == 0) ThrowRender("integer division or modulo by zero");
        if (a == INT64_MIN && b == -1) ThrowRender("integer overflow in //");
        int64_t q = a / b;
        if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
        return Value::Int(q);
      }
      if (nums) {
        if (r.as_double() == 0.0) ThrowRender("float floor division by zero");
        return Value::Float(FloorDiv(l.as_double(), r.as_double()));
      }
      Unsupported("//", l, r);
    case BinaryOp::kMod:
      if (l.is_string()) return ev.MakeString(PyPercentFormat(ev, l.str(), r));
      if (ints) {
        const int64_t a = l.as_int(), b = r.as_int();
        if (b == 0) ThrowRender("integer modulo by zero");
        if (b == -1) return Value::Int(0);
        int64_t m = a % b;
        if (m != 0 && ((m < 0) != (b < 0))) m += b;
        return Value::Int(m);
      }
      if (nums) {
        const double a = l.as_double(), b = r.as_double();
        if (b == 0.0) ThrowRender("float modulo");
        double m = std::fmod(a, b);
        if (m != 0.0 && ((m < 0) != (b < 0))) m += b;
        if (m == 0.0) m = std::copysign(0.0, b);
        return Value::Float(m);
      }
      Unsupported("%", l, r);
    case BinaryOp::kPow:
      if (ints && r.as_int() >= 0) return IntPow(l.as_int(), r.as_int());
      if (nums) {
        if (l.as_double() == 0.0 && r.as_double() < 0) ThrowRender("0.0 cannot be raised to a negative power");
        return Value::Float(std::pow(l.as_double(), r.as_double()));
      }
      Unsupported("** or pow()", l, r);
    case BinaryOp::kAnd:
    case BinaryOp::kOr:
      break;  // short-circuit, handled by the evaluator
  }
  return Value();
}

bool Contains(const Value& haystack, const Value& needle) {
  switch (haystack.kind()) {
    case Kind::kUndefined:
      return false;
    case Kind::kString:
      if (!needle.is_string()) {
        CheckDefined(needle);
        ThrowRender(fmt::format("'in <string>' requires string as left operand, not {}", TypeName(needle)));
      }
      return haystack.str().find(needle.str()) != std::string::npos;
    case Kind::kList:
      for (const auto& v : haystack.list().items) {
        if (Equals(v, needle)) return true;
      }
      return false;
    case Kind::kDict:
      if (needle.is_string()) return haystack.dict().Find(needle.str()) != nullptr;
      return false;
    default:
      ThrowRender(fmt::format("argument of type '{}' is not iterable", TypeName(haystack)));
  }
}

bool CompareValues(CmpOp op, const Value& l, const Value& r) {
  switch (op) {
    case CmpOp::kEq:
      return Equals(l, r);
    case CmpOp::kNe:
      return !Equals(l, r);
    case CmpOp::kIn:
      return Contains(r, l);
    case CmpOp::kNotIn:
      return !Contains(r, l);
    default:
      break;
  }
  CheckDefined(l);
  CheckDefined(r);
  bool ok;
  bool result;
  const char* sym = "<";
  switch (op) {
    case CmpOp::kLt:
      result = LessThan(l, r, &ok);
      break;
    case CmpOp::kGt:
      sym = ">";
      result = LessThan(r, l, &ok);
      break;
    case CmpOp::kLe:
      sym = "<=";
      result = !LessThan(r, l, &ok);
      break;
    default:
      sym = ">=";
      result = !LessThan(l, r, &ok);
      break;
  }
  if (!ok) {
    ThrowRender(fmt::format("'{}' not supported between instances of '{}' and '{}'", sym, TypeName(l), TypeName(r)));
  }
  // NaN compares false every way.
  if ((l.is_float() && std::isnan(l.as_double())) || (r.is_float() && std::isnan(r.as_double()))) return false;
  return result;
}

Value SliceValue(Evaluator& ev, const Value& obj, std::optional<int64_t> start_opt, std::optional<int64_t> stop_opt,
                 std::optional<int64_t> step_opt) {
  // Jinja2 compiles slices to a plain Python subscript (not through its
  // forgiving getitem), so slicing anything else is a TypeError.
  if (obj.is_dict()) ThrowRender("unhashable type: 'slice'");
  if (!obj.is_string() && !obj.is_list()) {
    ThrowRender(fmt::format("'{}' object is not subscriptable", TypeName(obj)));
  }
  const int64_t step = step_opt.value_or(1);
  if (step == 0) ThrowRender("slice step cannot be zero");
  std::vector<size_t> offs;
  const bool ascii = obj.is_string() && utf8::IsAscii(obj.str());
  int64_t len;
  if (obj.is_list()) {
    len = static_cast<int64_t>(obj.list().items.size());
  } else if (ascii) {
    len = static_cast<int64_t>(obj.str().size());
  } else {
    offs = utf8::Offsets(obj.str());
    len = static_cast<int64_t>(offs.size()) - 1;
  }
  const int64_t lower = step > 0 ? 0 : -1;
  const int64_t upper = step > 0 ? len : len - 1;
  auto norm = [&](std::optional<int64_t> v, int64_t dflt) {
    if (!v) return dflt;
    int64_t x = *v;
    if (x < 0) {
      x += len;
      if (x < lower) x = lower;
    } else if (x > upper) {
      x = upper;
    }
    return x;
  };
  const int64_t start = norm(start_opt, step > 0 ? lower : upper);
  const int64_t stop = norm(stop_opt, step > 0 ? upper : lower);
  if (obj.is_list()) {
    std::vector<Value> out;
    const auto& items = obj.list().items;
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) out.push_back(items[static_cast<size_t>(i)]);
    ev.Tick(static_cast<int64_t>(out.size()));
    return Value::List(std::move(out), obj.is_tuple());
  }
  const std::string& s = obj.str();
  if (step == 1) {
    if (start >= stop) return Value::String("");
    if (ascii) return Value::String(s.substr(start, stop - start));
    return Value::String(s.substr(offs[start], offs[stop] - offs[start]));
  }
  std::string out;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    if (ascii) {
      out += s[static_cast<size_t>(i)];
    } else {
      out.append(s, offs[i], offs[i + 1] - offs[i]);
    }
  }
  return ev.MakeString(std::move(out));
}

}  // namespace tern::jinja
