// Expression parsing, precedence climbing as Jinja2's parser does it.
#include <cerrno>
#include <cstdlib>

#include "template/builtins.h"
#include "template/parser_impl.h"

namespace tern::jinja {

bool Parser::IsTupleEnd(std::initializer_list<std::string_view> extra_end) const {
  const auto type = Cur().type;
  if (type == TokenType::kVarEnd || type == TokenType::kBlockEnd || IsOp(")")) return true;
  for (auto e : extra_end) {
    if (IsName(e)) return true;
  }
  return false;
}

ExprPtr Parser::ParseExpression(bool with_condexpr) {
  DepthGuard guard(this);
  return with_condexpr ? ParseCondExpr() : ParseOr();
}

ExprPtr Parser::ParseTuple(bool with_condexpr, std::initializer_list<std::string_view> extra_end,
                           bool explicit_parens) {
  const Token at = Cur();
  std::vector<ExprPtr> items;
  bool is_tuple = false;
  while (true) {
    if (!items.empty()) ExpectOp(",");
    if (IsTupleEnd(extra_end)) break;
    items.push_back(ParseExpression(with_condexpr));
    if (IsOp(",")) {
      is_tuple = true;
    } else {
      break;
    }
  }
  if (!is_tuple) {
    if (!items.empty()) return std::move(items[0]);
    if (!explicit_parens) Fail("expected an expression, got '" + Describe(Cur()) + "'");
  }
  auto t = Make<ListExpr>(at);
  t->items = std::move(items);
  t->is_tuple = true;
  return t;
}

ExprPtr Parser::ParseCondExpr() {
  ExprPtr expr = ParseOr();
  while (IsName("if")) {
    const Token at = Next();
    auto c = Make<CondExpr>(at);
    c->then_expr = std::move(expr);
    c->test = ParseOr();
    if (SkipName("else")) c->else_expr = ParseCondExpr();
    expr = std::move(c);
  }
  return expr;
}

ExprPtr Parser::ParseOr() {
  ExprPtr left = ParseAnd();
  while (IsName("or")) {
    auto b = Make<BinaryExpr>(Next());
    b->op = BinaryOp::kOr;
    b->left = std::move(left);
    b->right = ParseAnd();
    left = std::move(b);
  }
  return left;
}

ExprPtr Parser::ParseAnd() {
  ExprPtr left = ParseNot();
  while (IsName("and")) {
    auto b = Make<BinaryExpr>(Next());
    b->op = BinaryOp::kAnd;
    b->left = std::move(left);
    b->right = ParseNot();
    left = std::move(b);
  }
  return left;
}

ExprPtr Parser::ParseNot() {
  if (IsName("not")) {
    DepthGuard guard(this);
    auto u = Make<UnaryExpr>(Next());
    u->op = UnaryOp::kNot;
    u->operand = ParseNot();
    return u;
  }
  return ParseCompare();
}

ExprPtr Parser::ParseCompare() {
  const Token at = Cur();
  ExprPtr first = ParseMath1();
  std::vector<std::pair<CmpOp, ExprPtr>> rest;
  while (true) {
    CmpOp op;
    if (IsOp("==")) op = CmpOp::kEq;
    else if (IsOp("!=")) op = CmpOp::kNe;
    else if (IsOp("<")) op = CmpOp::kLt;
    else if (IsOp("<=")) op = CmpOp::kLe;
    else if (IsOp(">")) op = CmpOp::kGt;
    else if (IsOp(">=")) op = CmpOp::kGe;
    else if (IsName("in")) op = CmpOp::kIn;
    else if (IsName("not") && Look().type == TokenType::kName && Look().text == "in") {
      Next();
      op = CmpOp::kNotIn;
    } else {
      break;
    }
    Next();
    rest.emplace_back(op, ParseMath1());
  }
  if (rest.empty()) return first;
  auto c = Make<CompareExpr>(at);
  c->first = std::move(first);
  c->rest = std::move(rest);
  return c;
}

ExprPtr Parser::ParseMath1() {
  ExprPtr left = ParseConcat();
  while (IsOp("+") || IsOp("-")) {
    const Token at = Next();
    auto b = Make<BinaryExpr>(at);
    b->op = at.text == "+" ? BinaryOp::kAdd : BinaryOp::kSub;
    b->left = std::move(left);
    b->right = ParseConcat();
    left = std::move(b);
  }
  return left;
}

ExprPtr Parser::ParseConcat() {
  const Token at = Cur();
  ExprPtr first = ParseMath2();
  if (!IsOp("~")) return first;
  auto c = Make<ConcatExpr>(at);
  c->parts.push_back(std::move(first));
  while (SkipOp("~")) c->parts.push_back(ParseMath2());
  return c;
}

ExprPtr Parser::ParseMath2() {
  ExprPtr left = ParsePow();
  while (IsOp("*") || IsOp("/") || IsOp("//") || IsOp("%")) {
    const Token at = Next();
    auto b = Make<BinaryExpr>(at);
    b->op = at.text == "*" ? BinaryOp::kMul : at.text == "/" ? BinaryOp::kDiv
            : at.text == "//" ? BinaryOp::kFloorDiv : BinaryOp::kMod;
    b->left = std::move(left);
    b->right = ParsePow();
    left = std::move(b);
  }
  return left;
}

ExprPtr Parser::ParsePow() {
  ExprPtr left = ParseUnary(true);
  while (IsOp("**")) {
    auto b = Make<BinaryExpr>(Next());
    b->op = BinaryOp::kPow;
    b->left = std::move(left);
    b->right = ParseUnary(true);
    left = std::move(b);
  }
  return left;
}

ExprPtr Parser::ParseUnary(bool with_filter) {
  DepthGuard guard(this);
  ExprPtr node;
  if (IsOp("-") || IsOp("+")) {
    auto u = Make<UnaryExpr>(Cur());
    u->op = Next().text == "-" ? UnaryOp::kNeg : UnaryOp::kPos;
    u->operand = ParseUnary(false);
    node = std::move(u);
  } else {
    node = ParsePrimary();
  }
  node = ParsePostfix(std::move(node));
  if (with_filter) node = ParseFilterExpr(std::move(node));
  return node;
}

ExprPtr Parser::ParsePrimary() {
  const Token at = Cur();
  switch (at.type) {
    case TokenType::kName: {
      Next();
      const std::string& n = at.text;
      if (n == "true" || n == "True" || n == "false" || n == "False" || n == "none" || n == "None") {
        auto c = Make<ConstExpr>(at);
        c->value = (n == "none" || n == "None") ? Value::None() : Value::Bool(n[0] == 't' || n[0] == 'T');
        return c;
      }
      auto e = Make<NameExpr>(at);
      e->name = n;
      e->sym = Intern(n);
      if (!open_macros_.empty()) {
        if (n == "varargs") open_macros_.back()->uses_varargs = true;
        if (n == "kwargs") open_macros_.back()->uses_kwargs = true;
        if (n == "caller") open_macros_.back()->uses_caller = true;
      }
      return e;
    }
    case TokenType::kString: {
      std::string s = Next().text;
      while (Cur().type == TokenType::kString) s += Next().text;  // "a" "b" concatenates
      auto c = Make<ConstExpr>(at);
      c->value = Value::String(std::move(s));
      return c;
    }
    case TokenType::kInt: {
      Next();
      errno = 0;
      const long long v = std::strtoll(at.text.c_str(), nullptr, 10);
      if (errno == ERANGE) Fail("integer literal too large", at);
      auto c = Make<ConstExpr>(at);
      c->value = Value::Int(v);
      return c;
    }
    case TokenType::kFloat: {
      Next();
      auto c = Make<ConstExpr>(at);
      c->value = Value::Float(std::strtod(at.text.c_str(), nullptr));
      return c;
    }
    case TokenType::kOp: {
      if (at.text == "(") {
        Next();
        ExprPtr e = ParseTuple(true, {}, true);
        ExpectOp(")");
        return e;
      }
      if (at.text == "[") {
        Next();
        auto l = Make<ListExpr>(at);
        while (!IsOp("]")) {
          if (!l->items.empty()) ExpectOp(",");
          if (IsOp("]")) break;
          l->items.push_back(ParseExpression());
        }
        ExpectOp("]");
        return l;
      }
      if (at.text == "{") {
        Next();
        auto d = Make<DictExpr>(at);
        while (!IsOp("}")) {
          if (!d->items.empty()) ExpectOp(",");
          if (IsOp("}")) break;
          ExprPtr k = ParseExpression();
          ExpectOp(":");
          ExprPtr v = ParseExpression();
          d->items.emplace_back(std::move(k), std::move(v));
        }
        ExpectOp("}");
        return d;
      }
      break;
    }
    default:
      break;
  }
  Fail("unexpected '" + Describe(at) + "'");
}

ExprPtr Parser::ParsePostfix(ExprPtr node) {
  while (true) {
    if (IsOp(".") || IsOp("[")) {
      node = ParseSubscript(std::move(node));
    } else if (IsOp("(")) {
      const Token at = Next();
      auto c = Make<CallExpr>(at);
      c->callee = std::move(node);
      c->args = ParseCallArgs();
      node = std::move(c);
    } else {
      return node;
    }
  }
}

ExprPtr Parser::ParseFilterExpr(ExprPtr node) {
  while (true) {
    if (IsOp("|")) {
      node = ParseFilter(std::move(node), false);
    } else if (IsName("is")) {
      node = ParseTest(std::move(node));
    } else if (IsOp("(")) {
      const Token at = Next();
      auto c = Make<CallExpr>(at);
      c->callee = std::move(node);
      c->args = ParseCallArgs();
      node = std::move(c);
    } else {
      return node;
    }
  }
}

ExprPtr Parser::ParseSubscript(ExprPtr node) {
  const Token at = Next();
  if (at.text == ".") {
    const Token attr = Next();
    if (attr.type == TokenType::kName) {
      auto g = Make<GetAttrExpr>(at);
      g->obj = std::move(node);
      g->name = attr.text;
      return g;
    }
    if (attr.type != TokenType::kInt) Fail("expected name or number", attr);
    auto g = Make<GetItemExpr>(at);
    g->obj = std::move(node);
    auto c = Make<ConstExpr>(attr);
    c->value = Value::Int(std::strtoll(attr.text.c_str(), nullptr, 10));
    g->index = std::move(c);
    return g;
  }
  // [ subscript(, subscript)* ]
  std::vector<ExprPtr> args;
  while (!IsOp("]")) {
    if (!args.empty()) ExpectOp(",");
    args.push_back(ParseSubscribed());
  }
  ExpectOp("]");
  if (args.empty()) Fail("expected subscript expression", at);
  if (args.size() == 1 && args[0]->kind == ExprKind::kSlice) {
    auto* s = static_cast<SliceExpr*>(args[0].get());
    s->obj = std::move(node);
    return std::move(args[0]);
  }
  auto g = Make<GetItemExpr>(at);
  g->obj = std::move(node);
  if (args.size() == 1) {
    g->index = std::move(args[0]);
  } else {
    // x[a:b, c]: Python's key is a tuple holding a slice object, which no
    // str, list or dict accepts (Jinja2 gives undefined). tern has no slice
    // values: each slice becomes the tuple of its bounds, which evaluates
    // them as Jinja2 does and is no valid key either.
    for (auto& a : args) {
      if (a->kind != ExprKind::kSlice) continue;
      auto* s = static_cast<SliceExpr*>(a.get());
      auto bounds = Make<ListExpr>(at);
      bounds->is_tuple = true;
      for (ExprPtr* b : {&s->start, &s->stop, &s->step}) {
        if (*b) {
          bounds->items.push_back(std::move(*b));
        } else {
          auto none = Make<ConstExpr>(at);
          none->value = Value::None();
          bounds->items.push_back(std::move(none));
        }
      }
      a = std::move(bounds);
    }
    auto t = Make<ListExpr>(at);
    t->is_tuple = true;
    t->items = std::move(args);
    g->index = std::move(t);
  }
  return g;
}

ExprPtr Parser::ParseSubscribed() {
  const Token at = Cur();
  ExprPtr start;
  if (!IsOp(":")) {
    start = ParseExpression();
    if (!IsOp(":")) return start;
  }
  Next();  // first ':'
  auto s = Make<SliceExpr>(at);
  s->start = std::move(start);
  if (!IsOp(":") && !IsOp("]") && !IsOp(",")) s->stop = ParseExpression();
  if (SkipOp(":")) {
    if (!IsOp("]") && !IsOp(",")) s->step = ParseExpression();
  }
  return s;
}

CallArgExprs Parser::ParseCallArgs() {
  // The '(' has been consumed.
  CallArgExprs a;
  bool need_comma = false;
  while (!IsOp(")")) {
    if (need_comma) {
      ExpectOp(",");
      if (IsOp(")")) break;
    }
    if (SkipOp("*")) {
      if (a.star || a.star_star) Fail("invalid syntax for function call expression");
      a.star = ParseExpression();
    } else if (SkipOp("**")) {
      if (a.star_star) Fail("invalid syntax for function call expression");
      a.star_star = ParseExpression();
    } else if (Cur().type == TokenType::kName && Look().type == TokenType::kOp && Look().text == "=") {
      if (a.star_star) Fail("invalid syntax for function call expression");
      std::string key = Next().text;
      Next();  // =
      a.kw.emplace_back(std::move(key), ParseExpression());
    } else {
      if (a.star || a.star_star || !a.kw.empty()) Fail("invalid syntax for function call expression");
      a.pos.push_back(ParseExpression());
    }
    need_comma = true;
  }
  ExpectOp(")");
  return a;
}

ExprPtr Parser::ParseFilter(ExprPtr node, bool start_inline) {
  while (IsOp("|") || start_inline) {
    if (!start_inline) Next();
    start_inline = false;
    const Token at = Cur();
    auto f = Make<FilterExpr>(at);
    f->name = ExpectName();
    while (SkipOp(".")) f->name += "." + ExpectName();
    if (SkipOp("(")) f->args = ParseCallArgs();
    f->fn = FindFilter(f->name);
    f->operand = std::move(node);
    node = std::move(f);
  }
  return node;
}

ExprPtr Parser::ParseTest(ExprPtr node) {
  const Token at = Next();  // is
  const bool negated = SkipName("not");
  auto t = Make<TestExpr>(at);
  t->name = ExpectName();
  while (SkipOp(".")) t->name += "." + ExpectName();
  if (SkipOp("(")) {
    t->args = ParseCallArgs();
  } else {
    const auto type = Cur().type;
    const bool arg_start = type == TokenType::kName || type == TokenType::kString || type == TokenType::kInt ||
                           type == TokenType::kFloat || IsOp("(") || IsOp("[") || IsOp("{");
    if (arg_start && !IsName("else") && !IsName("or") && !IsName("and")) {
      if (IsName("is")) Fail("you cannot chain multiple tests with is");
      t->args.pos.push_back(ParsePostfix(ParsePrimary()));
    }
  }
  t->fn = FindTest(t->name);
  t->operand = std::move(node);
  if (!negated) return t;
  auto u = Make<UnaryExpr>(at);
  u->op = UnaryOp::kNot;
  u->operand = std::move(t);
  return u;
}

}  // namespace tern::jinja
