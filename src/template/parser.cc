// Statement parsing: {% if %}, {% for %}, {% set %}, {% macro %}, ...
#include "template/parser_impl.h"

namespace tern::jinja {

ParsedTemplate ParseTemplate(std::string_view source) {
  ParsedTemplate out;
  Parser parser(Tokenize(source), &out.symbols);
  out.body = parser.ParseAll();
  return out;
}

int Parser::Intern(const std::string& name) {
  auto [it, inserted] = sym_index_.emplace(name, static_cast<int>(symbols_->size()));
  if (inserted) symbols_->push_back(name);
  return it->second;
}

std::string Parser::Describe(const Token& t) {
  switch (t.type) {
    case TokenType::kEof: return "end of template";
    case TokenType::kVarEnd: return "end of print statement";
    case TokenType::kBlockEnd: return "end of statement block";
    case TokenType::kVarBegin: return "begin of print statement";
    case TokenType::kBlockBegin: return "begin of statement block";
    case TokenType::kText: return "template data";
    case TokenType::kString: return "string";
    default: return t.text;
  }
}

void Parser::ExpectOp(std::string_view op) {
  if (!IsOp(op)) Fail("expected token '" + std::string(op) + "', got '" + Describe(Cur()) + "'");
  Next();
}

std::string Parser::ExpectName() {
  if (Cur().type != TokenType::kName) Fail("expected name, got '" + Describe(Cur()) + "'");
  return Next().text;
}

void Parser::ExpectBlockEnd() {
  if (Cur().type != TokenType::kBlockEnd) Fail("expected end of statement block, got '" + Describe(Cur()) + "'");
  Next();
}

void Parser::ExpectEndTag(std::string_view name) {
  // Current token is the end keyword (ParseBody stopped on it).
  if (!IsName(name)) Fail("expected '" + std::string(name) + "'");
  Next();
  ExpectBlockEnd();
}

Body Parser::ParseAll() {
  Body body = ParseBody({});
  if (Cur().type != TokenType::kEof) Fail("unexpected '" + Describe(Cur()) + "'");
  return body;
}

Body Parser::ParseBody(std::initializer_list<std::string_view> ends) {
  DepthGuard guard(this);
  Body body;
  while (true) {
    const Token& t = Cur();
    switch (t.type) {
      case TokenType::kEof: {
        if (ends.size() == 0) return body;
        std::string want;
        for (auto e : ends) want += (want.empty() ? "'" : " or '") + std::string(e) + "'";
        Fail("unexpected end of template, expected " + want);
      }
      case TokenType::kText: {
        auto s = Make<TextStmt>(t);
        s->text = Next().text;
        body.push_back(std::move(s));
        break;
      }
      case TokenType::kVarBegin: {
        auto s = Make<OutputStmt>(t);
        Next();
        s->expr = ParseTuple(true, {});
        if (Cur().type != TokenType::kVarEnd) Fail("expected end of print statement, got '" + Describe(Cur()) + "'");
        Next();
        body.push_back(std::move(s));
        break;
      }
      case TokenType::kBlockBegin: {
        const Token& kw = Look();
        if (kw.type == TokenType::kName) {
          for (auto e : ends) {
            if (kw.text == e) {
              Next();  // leave the keyword as the current token
              return body;
            }
          }
        }
        Next();
        body.push_back(ParseStatement());
        break;
      }
      default:
        Fail("unexpected '" + Describe(t) + "'");
    }
  }
}

StmtPtr Parser::ParseStatement() {
  const Token& t = Cur();
  if (t.type != TokenType::kName) Fail("tag name expected");
  const std::string& kw = t.text;
  if (kw == "if") return ParseIf();
  if (kw == "for") return ParseFor();
  if (kw == "set") return ParseSet();
  if (kw == "macro") return ParseMacro();
  if (kw == "call") return ParseCallBlock();
  if (kw == "filter") return ParseFilterBlock();
  if (kw == "with") return ParseWith();
  if (kw == "block") return ParseScopeBlock("endblock");
  if (kw == "generation") return ParseScopeBlock("endgeneration");
  if (kw == "break" || kw == "continue") {
    if (loop_depth_ == 0) Fail("'" + kw + "' outside of a loop");
    auto s = std::make_unique<LoopControlStmt>(kw == "break" ? StmtKind::kBreak : StmtKind::kContinue);
    s->line = t.line;
    s->col = t.col;
    Next();
    ExpectBlockEnd();
    return s;
  }
  if (kw == "include" || kw == "import" || kw == "from" || kw == "extends") {
    Fail("tag '" + kw + "' needs a template loader, which chat templates do not have");
  }
  Fail("encountered unknown tag '" + kw + "'");
}

StmtPtr Parser::ParseIf() {
  auto s = Make<IfStmt>(Cur());
  Next();  // if
  while (true) {
    ExprPtr cond = ParseTuple(false, {});
    ExpectBlockEnd();
    Body body = ParseBody({"elif", "else", "endif"});
    s->branches.emplace_back(std::move(cond), std::move(body));
    if (SkipName("elif")) continue;
    if (SkipName("else")) {
      ExpectBlockEnd();
      s->else_body = ParseBody({"endif"});
    }
    ExpectEndTag("endif");
    return s;
  }
}

struct ParserLoopGuard {
  ParserLoopGuard(int* depth, int value) : depth_(depth), saved_(*depth) { *depth = value; }
  ~ParserLoopGuard() { *depth_ = saved_; }
  int* depth_;
  int saved_;
};

StmtPtr Parser::ParseFor() {
  auto s = Make<ForStmt>(Cur());
  Next();  // for
  s->target = ParseAssignTarget(false, {"in"});
  if (!SkipName("in")) Fail("expected 'in', got '" + Describe(Cur()) + "'");
  s->iter = ParseTuple(false, {"recursive"});
  if (SkipName("if")) s->filter = ParseExpression();
  if (SkipName("recursive")) s->recursive = true;
  ExpectBlockEnd();
  {
    ParserLoopGuard loop(&loop_depth_, loop_depth_ + 1);
    s->body = ParseBody({"endfor", "else"});
  }
  if (SkipName("else")) {
    ExpectBlockEnd();
    s->else_body = ParseBody({"endfor"});
  }
  ExpectEndTag("endfor");
  return s;
}

Target Parser::ParseAssignTarget(bool with_namespace, std::initializer_list<std::string_view> extra_end) {
  auto one = [&]() {
    Target t;
    const Token tok = Cur();
    if (with_namespace && tok.type == TokenType::kName && Look().type == TokenType::kOp && Look().text == ".") {
      t.type = Target::Type::kNsAttr;
      t.name = Next().text;
      t.sym = Intern(t.name);
      Next();  // .
      t.attr = ExpectName();
      return t;
    }
    if (tok.type != TokenType::kName) Fail("can't assign to '" + Describe(tok) + "'");
    static const char* kConsts[] = {"true", "false", "none", "True", "False", "None"};
    for (const char* c : kConsts) {
      if (tok.text == c) Fail("can't assign to constant '" + tok.text + "'");
    }
    t.name = Next().text;
    t.sym = Intern(t.name);
    return t;
  };
  if (with_namespace) {
    Target first = one();
    if (first.type == Target::Type::kNsAttr || !IsOp(",")) return first;
    Target tuple;
    tuple.type = Target::Type::kTuple;
    tuple.items.push_back(std::move(first));
    while (SkipOp(",")) {
      if (IsOp("=")) break;
      tuple.items.push_back(one());
    }
    return tuple;
  }
  const bool parens = SkipOp("(");
  Target tuple;
  tuple.type = Target::Type::kTuple;
  bool is_tuple = parens;
  while (true) {
    if (!tuple.items.empty()) {
      if (!SkipOp(",")) break;
      is_tuple = true;
    }
    if (IsOp(")") || Cur().type == TokenType::kBlockEnd) break;
    bool end = false;
    for (auto e : extra_end) end = end || IsName(e);
    if (end) break;
    tuple.items.push_back(one());
  }
  if (parens) ExpectOp(")");
  if (tuple.items.empty()) Fail("expected assignment target");
  if (!is_tuple) return std::move(tuple.items[0]);
  return tuple;
}

StmtPtr Parser::ParseSet() {
  const Token at = Next();  // set
  Target target = ParseAssignTarget(true, {});
  if (SkipOp("=")) {
    auto s = Make<SetStmt>(at);
    s->target = std::move(target);
    s->value = ParseTuple(true, {});
    ExpectBlockEnd();
    return s;
  }
  auto s = Make<SetBlockStmt>(at);
  if (target.type == Target::Type::kTuple) Fail("block set needs a single target");
  s->target = std::move(target);
  if (IsOp("|")) s->filters = ParseFilter(nullptr, false);
  ExpectBlockEnd();
  s->body = ParseBody({"endset"});
  ExpectEndTag("endset");
  return s;
}

void Parser::ParseMacroSignature(MacroStmt* m) {
  ExpectOp("(");
  while (!IsOp(")")) {
    if (!m->params.empty()) ExpectOp(",");
    if (IsOp(")")) break;
    MacroParam p;
    p.name = ExpectName();
    p.sym = Intern(p.name);
    if (SkipOp("=")) {
      p.default_value = ParseExpression();
    } else if (!m->params.empty() && m->params.back().default_value) {
      Fail("non-default argument follows default argument");
    }
    m->params.push_back(std::move(p));
  }
  ExpectOp(")");
}

StmtPtr Parser::ParseMacro() {
  auto m = Make<MacroStmt>(Cur());
  Next();  // macro
  m->name = ExpectName();
  m->sym = Intern(m->name);
  ParseMacroSignature(m.get());
  ExpectBlockEnd();
  open_macros_.push_back(m.get());
  {
    ParserLoopGuard loop(&loop_depth_, 0);
    m->body = ParseBody({"endmacro"});
  }
  open_macros_.pop_back();
  ExpectEndTag("endmacro");
  return m;
}

StmtPtr Parser::ParseCallBlock() {
  auto s = Make<CallBlockStmt>(Cur());
  Next();  // call
  auto caller = Make<MacroStmt>(Cur());
  caller->name = "caller";
  caller->sym = Intern("caller");
  if (IsOp("(")) ParseMacroSignature(caller.get());
  const Token at = Cur();
  ExprPtr call = ParseExpression();
  if (call->kind != ExprKind::kCall) Fail("expected call", at);
  s->call.reset(static_cast<CallExpr*>(call.release()));
  ExpectBlockEnd();
  open_macros_.push_back(caller.get());
  {
    ParserLoopGuard loop(&loop_depth_, 0);
    caller->body = ParseBody({"endcall"});
  }
  open_macros_.pop_back();
  ExpectEndTag("endcall");
  s->caller = std::move(caller);
  return s;
}

StmtPtr Parser::ParseFilterBlock() {
  auto s = Make<FilterBlockStmt>(Cur());
  Next();  // filter
  s->filters = ParseFilter(nullptr, true);
  ExpectBlockEnd();
  s->body = ParseBody({"endfilter"});
  ExpectEndTag("endfilter");
  return s;
}

StmtPtr Parser::ParseWith() {
  auto s = Make<WithStmt>(Cur());
  Next();  // with
  while (Cur().type != TokenType::kBlockEnd) {
    if (!s->assignments.empty()) ExpectOp(",");
    Target t = ParseAssignTarget(false, {});
    ExpectOp("=");
    s->assignments.emplace_back(std::move(t), ParseExpression());
  }
  ExpectBlockEnd();
  s->body = ParseBody({"endwith"});
  ExpectEndTag("endwith");
  return s;
}

StmtPtr Parser::ParseScopeBlock(std::string_view end) {
  auto s = Make<ScopeStmt>(Cur());
  const bool is_block = Next().text == "block";
  if (is_block) {
    ExpectName();  // block name
    SkipName("scoped");
    SkipName("required");
  }
  ExpectBlockEnd();
  // A block renders in its own scope; so does transformers' {% generation %},
  // which is a call block underneath.
  s->new_scope = true;
  s->body = ParseBody({end});
  Next();  // end keyword
  if (is_block && Cur().type == TokenType::kName) Next();  // {% endblock name %}
  ExpectBlockEnd();
  return s;
}

}  // namespace tern::jinja
