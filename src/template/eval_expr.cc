// Expressions: names, attribute and item access, calls, filters, tests,
// comparisons. Arithmetic lives in eval_ops.cc.
#include <fmt/format.h>

#include "template/builtins.h"
#include "template/eval_ops.h"
#include "template/evaluator.h"
#include "template/utf8.h"

namespace tern::jinja {

void FailUndefined(const Value& v) {
  const std::string* name = v.undefined_name();
  if (name == nullptr) ThrowRender("value is undefined");
  if (v.undefined_owner() == Kind::kUndefined) ThrowRender("'" + *name + "' is undefined");
  const std::string owner = v.undefined_owner() == Kind::kNone ? "'None'"
                            : "'" + std::string(v.undefined_owner() == Kind::kDict ? "dict"
                                                : v.undefined_owner() == Kind::kList ? "list"
                                                : v.undefined_owner() == Kind::kString ? "str"
                                                : "object") + " object'";
  ThrowRender(owner + " has no attribute '" + *name + "'");
}

Value Evaluator::Eval(const Expr& e) {
  DepthGuard depth(this);
  try {
    return EvalInner(e);
  } catch (TemplateError& err) {
    if (err.line == 0) {
      err.line = e.line;
      err.col = e.col;
    }
    throw;
  }
}

Value Evaluator::EvalInner(const Expr& e) {
  switch (e.kind) {
    case ExprKind::kConst:
      return static_cast<const ConstExpr&>(e).value;
    case ExprKind::kName:
      return EvalName(static_cast<const NameExpr&>(e));
    case ExprKind::kGetAttr: {
      const auto& g = static_cast<const GetAttrExpr&>(e);
      return GetAttr(Eval(*g.obj), g.name, &g.name);
    }
    case ExprKind::kGetItem: {
      const auto& g = static_cast<const GetItemExpr&>(e);
      Value obj = Eval(*g.obj);
      if (g.index->kind == ExprKind::kConst) {
        const Value& key = static_cast<const ConstExpr&>(*g.index).value;
        Value r = GetItem(obj, key);
        if (r.is_undefined() && key.is_string()) return Value::UndefinedNamed(&key.str(), obj.kind());
        return r;
      }
      return GetItem(obj, Eval(*g.index));
    }
    case ExprKind::kSlice:
      return EvalSlice(static_cast<const SliceExpr&>(e));
    case ExprKind::kCall:
      return EvalCall(static_cast<const CallExpr&>(e));
    case ExprKind::kFilter:
      return EvalFilter(static_cast<const FilterExpr&>(e), nullptr);
    case ExprKind::kTest:
      return EvalTest(static_cast<const TestExpr&>(e));
    case ExprKind::kUnary: {
      const auto& u = static_cast<const UnaryExpr&>(e);
      Value v = Eval(*u.operand);
      if (u.op == UnaryOp::kNot) return Value::Bool(!v.Truthy());
      return UnaryMinusPlus(v, u.op == UnaryOp::kNeg);
    }
    case ExprKind::kBinary: {
      const auto& b = static_cast<const BinaryExpr&>(e);
      if (b.op == BinaryOp::kAnd) {
        Value l = Eval(*b.left);
        return l.Truthy() ? Eval(*b.right) : l;
      }
      if (b.op == BinaryOp::kOr) {
        Value l = Eval(*b.left);
        return l.Truthy() ? l : Eval(*b.right);
      }
      Value l = Eval(*b.left);
      Value r = Eval(*b.right);
      if (b.op == BinaryOp::kAdd && r.is_string()) {
        // 'a' + x + 'b' + ...: append to the temporary left operand.
        if (std::string* s = l.unique_str()) {
          CheckSize(s->size() + r.str().size());
          s->append(r.str());
          return l;
        }
      }
      return BinaryOpValues(*this, b.op, l, r);
    }
    case ExprKind::kConcat: {
      std::string s;
      for (const auto& p : static_cast<const ConcatExpr&>(e).parts) {
        AppendPyStr(s, Eval(*p));
        CheckSize(s.size());
      }
      return MakeString(std::move(s));
    }
    case ExprKind::kCompare:
      return EvalCompare(static_cast<const CompareExpr&>(e));
    case ExprKind::kCondExpr: {
      const auto& c = static_cast<const CondExpr&>(e);
      if (Eval(*c.test).Truthy()) return Eval(*c.then_expr);
      return c.else_expr ? Eval(*c.else_expr) : Value();
    }
    case ExprKind::kList: {
      const auto& l = static_cast<const ListExpr&>(e);
      std::vector<Value> items;
      items.reserve(l.items.size());
      for (const auto& it : l.items) items.push_back(Eval(*it));
      return Value::List(std::move(items), l.is_tuple);
    }
    case ExprKind::kDict: {
      auto d = Value::NewDict();
      for (const auto& [k, v] : static_cast<const DictExpr&>(e).items) {
        Value key = Eval(*k);
        if (!key.is_string()) {
          if (key.is_undefined()) FailUndefined(key);
          // Dicts keep string keys (all a chat template gets from JSON);
          // other keys are stored by their str(), as tojson would write them.
          key = Value::String(PyStr(key));
        }
        d.dict().Set(key.str(), Eval(*v));
      }
      return d;
    }
  }
  return Value();
}

Value Evaluator::EvalName(const NameExpr& e) {
  const Value* v = Lookup(e.sym);
  if (v != nullptr) return *v;
  return Value::UndefinedNamed(&e.name);
}

CallArgs Evaluator::EvalArgs(const CallArgExprs& a) {
  CallArgs args;
  args.pos.reserve(a.pos.size());
  for (const auto& p : a.pos) args.pos.push_back(Eval(*p));
  if (a.star) {
    for (auto& v : Iterate(Eval(*a.star))) args.pos.push_back(std::move(v));
  }
  for (const auto& [k, v] : a.kw) args.kw.emplace_back(k, Eval(*v));
  if (a.star_star) {
    Value d = Eval(*a.star_star);
    if (!d.is_dict()) ThrowRender("argument after ** must be a mapping, not " + std::string(TypeName(d)));
    for (const auto& [k, v] : d.dict().entries) args.kw.emplace_back(k, v);
  }
  return args;
}

Value Evaluator::EvalCall(const CallExpr& e) {
  if (e.callee->kind == ExprKind::kGetAttr) {
    // obj.method(args): call the method directly, without a bound object.
    const auto& g = static_cast<const GetAttrExpr&>(*e.callee);
    Value obj = Eval(*g.obj);
    CallArgs args = EvalArgs(e.args);
    return CallMethod(obj, g.name, args);
  }
  Value callee = Eval(*e.callee);
  CallArgs args = EvalArgs(e.args);
  return Call(callee, args);
}

Value Evaluator::Call(const Value& callee, CallArgs& args) {
  if (callee.is_object() && callee.obj().IsCallable()) return callee.obj().Call(*this, args);
  if (callee.is_undefined()) FailUndefined(callee);
  ThrowRender("'" + std::string(TypeName(callee)) + "' object is not callable");
}

Value Evaluator::CallMethod(const Value& obj, const std::string& name, CallArgs& args) {
  // A method of str/dict/list is called, or fails, here: falling back to
  // GetAttr + Call for it would make a bound method that calls back here.
  if (IsMethodName(obj, name)) return CallBuiltinMethod(*this, obj, name, args);
  if (obj.is_object()) {
    Value out;
    if (obj.obj().CallMethod(*this, name, args, &out)) return out;
  }
  return Call(GetAttr(obj, name, &name), args);
}

Value Evaluator::GetAttr(const Value& obj, std::string_view name, const std::string* name_for_errors) {
  switch (obj.kind()) {
    case Kind::kUndefined:
      FailUndefined(obj);
    case Kind::kDict: {
      if (IsMethodName(obj, name)) return MakeBoundMethod(obj, name);
      if (const Value* v = obj.dict().Find(name)) return *v;
      break;
    }
    case Kind::kString:
    case Kind::kList:
      if (IsMethodName(obj, name)) return MakeBoundMethod(obj, name);
      break;
    case Kind::kObject:
      return obj.obj().GetAttr(name);
    default:
      break;
  }
  return Value::UndefinedNamed(name_for_errors, obj.kind());
}

static bool ToIndex(const Value& key, int64_t* out) {
  if (key.is_int() || key.is_bool()) {
    *out = key.as_int();
    return true;
  }
  return false;
}

Value Evaluator::GetItem(const Value& obj, const Value& key) {
  switch (obj.kind()) {
    case Kind::kUndefined:
      FailUndefined(obj);
    case Kind::kDict:
      if (key.is_string()) {
        if (const Value* v = obj.dict().Find(key.str())) return *v;
        if (obj.is_namespace()) return Value();
        if (IsMethodName(obj, key.str())) return MakeBoundMethod(obj, key.str());
      } else if (key.is_undefined()) {
        FailUndefined(key);
      }
      return Value();
    case Kind::kList: {
      int64_t i;
      if (ToIndex(key, &i)) {
        const auto& items = obj.list().items;
        const int64_t n = static_cast<int64_t>(items.size());
        if (i < 0) i += n;
        if (i < 0 || i >= n) return Value();
        return items[static_cast<size_t>(i)];
      }
      if (key.is_string()) return GetAttr(obj, key.str());
      return Value();
    }
    case Kind::kString: {
      int64_t i;
      if (ToIndex(key, &i)) {
        const std::string& s = obj.str();
        if (utf8::IsAscii(s)) {
          const int64_t n = static_cast<int64_t>(s.size());
          if (i < 0) i += n;
          if (i < 0 || i >= n) return Value();
          return Value::String(std::string(1, s[static_cast<size_t>(i)]));
        }
        const auto offs = utf8::Offsets(s);
        const int64_t n = static_cast<int64_t>(offs.size()) - 1;
        if (i < 0) i += n;
        if (i < 0 || i >= n) return Value();
        return Value::String(s.substr(offs[i], offs[i + 1] - offs[i]));
      }
      if (key.is_string()) return GetAttr(obj, key.str());
      return Value();
    }
    case Kind::kObject:
      if (key.is_string()) return obj.obj().GetAttr(key.str());
      return Value();
    default:
      return Value();
  }
}

std::vector<Value> Evaluator::Iterate(const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined:
      return {};
    case Kind::kList:
      Tick(static_cast<int64_t>(v.list().items.size()));
      return v.list().items;
    case Kind::kDict: {
      const auto& d = v.dict();
      if (d.is_namespace) break;
      Tick(static_cast<int64_t>(d.entries.size()));
      std::vector<Value> keys;
      keys.reserve(d.entries.size());
      for (const auto& [k, val] : d.entries) keys.push_back(Value::String(k));
      return keys;
    }
    case Kind::kString: {
      const std::string& s = v.str();
      std::vector<Value> chars;
      for (size_t i = 0; i < s.size();) {
        size_t len;
        utf8::Decode(s, i, &len);
        chars.push_back(Value::String(s.substr(i, len)));
        i += len;
      }
      Tick(static_cast<int64_t>(chars.size()));
      return chars;
    }
    default:
      break;
  }
  ThrowRender("'" + std::string(TypeName(v)) + "' object is not iterable");
}

Value Evaluator::EvalSlice(const SliceExpr& e) {
  // (Jinja2's compile-time constant folding makes some slices of literals,
  // like `not 0.1[1:]`, evaluate to undefined instead of failing; tern
  // always fails on slicing a non-sequence.)
  Value obj = Eval(*e.obj);
  CheckDefined(obj);
  auto bound = [&](const ExprPtr& x) -> std::optional<int64_t> {
    if (!x) return std::nullopt;
    Value v = Eval(*x);
    if (v.is_none()) return std::nullopt;
    CheckDefined(v);
    if (!v.is_int() && !v.is_bool()) ThrowRender("slice indices must be integers or None");
    return v.as_int();
  };
  const auto start = bound(e.start);
  const auto stop = bound(e.stop);
  const auto step = bound(e.step);
  return SliceValue(*this, obj, start, stop, step);
}

Value Evaluator::EvalCompare(const CompareExpr& e) {
  Value left = Eval(*e.first);
  for (const auto& [op, expr] : e.rest) {
    Value right = Eval(*expr);
    if (!CompareValues(op, left, right)) return Value::Bool(false);
    left = std::move(right);
  }
  return Value::Bool(true);
}

Value Evaluator::EvalFilter(const FilterExpr& e, const Value* block_output) {
  Value operand = block_output ? *block_output : Value();
  if (e.operand) {
    operand = e.operand->kind == ExprKind::kFilter && block_output
                  ? EvalFilter(static_cast<const FilterExpr&>(*e.operand), block_output)
                  : Eval(*e.operand);
  }
  if (e.fn == nullptr) ThrowRender("no filter named '" + e.name + "'");
  CallArgs args = EvalArgs(e.args);
  Tick();
  return e.fn(*this, operand, args);
}

Value Evaluator::EvalTest(const TestExpr& e) {
  Value operand = Eval(*e.operand);
  if (e.fn == nullptr) ThrowRender("no test named '" + e.name + "'");
  CallArgs args = EvalArgs(e.args);
  return Value::Bool(e.fn(*this, operand, args));
}

bool Evaluator::ApplyTest(std::string_view name, const Value& v, CallArgs& args) {
  TestFn fn = FindTest(name);
  if (fn == nullptr) ThrowRender("no test named '" + std::string(name) + "'");
  return fn(*this, v, args);
}

Value Evaluator::ApplyFilter(std::string_view name, const Value& v, CallArgs& args) {
  FilterFn fn = FindFilter(name);
  if (fn == nullptr) ThrowRender("no filter named '" + std::string(name) + "'");
  return fn(*this, v, args);
}

std::time_t Evaluator::Now() const { return options_.now ? options_.now() : std::time(nullptr); }

}  // namespace tern::jinja
