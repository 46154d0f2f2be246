// Internal: the recursive-descent parser shared by parser.cc (statements) and
// parser_expr.cc (expressions).
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "template/ast.h"
#include "template/error.h"
#include "template/lexer.h"
#include "template/parser.h"

namespace tern::jinja {

class Parser {
 public:
  Parser(std::vector<Token> tokens, std::vector<std::string>* symbols)
      : toks_(std::move(tokens)), symbols_(symbols) {}

  Body ParseAll();

  // --- statements (parser.cc)
  // Parses statements until a block tag whose keyword is in `ends` (left
  // unconsumed: the current token is that keyword) or the end of input
  // (an error when `ends` is not empty).
  Body ParseBody(std::initializer_list<std::string_view> ends);
  StmtPtr ParseStatement();
  StmtPtr ParseIf();
  StmtPtr ParseFor();
  StmtPtr ParseSet();
  StmtPtr ParseMacro();
  StmtPtr ParseCallBlock();
  StmtPtr ParseFilterBlock();
  StmtPtr ParseWith();
  StmtPtr ParseScopeBlock(std::string_view end);
  void ParseMacroSignature(MacroStmt* m);
  Target ParseAssignTarget(bool with_namespace, std::initializer_list<std::string_view> extra_end);
  void ExpectBlockEnd();
  void ExpectEndTag(std::string_view name);

  // --- expressions (parser_expr.cc)
  ExprPtr ParseExpression(bool with_condexpr = true);
  ExprPtr ParseTuple(bool with_condexpr, std::initializer_list<std::string_view> extra_end,
                     bool explicit_parens = false);
  ExprPtr ParseCondExpr();
  ExprPtr ParseOr();
  ExprPtr ParseAnd();
  ExprPtr ParseNot();
  ExprPtr ParseCompare();
  ExprPtr ParseMath1();
  ExprPtr ParseConcat();
  ExprPtr ParseMath2();
  ExprPtr ParsePow();
  ExprPtr ParseUnary(bool with_filter);
  ExprPtr ParsePrimary();
  ExprPtr ParsePostfix(ExprPtr node);
  ExprPtr ParseFilterExpr(ExprPtr node);
  ExprPtr ParseSubscript(ExprPtr node);
  ExprPtr ParseSubscribed();
  ExprPtr ParseFilter(ExprPtr node, bool start_inline);
  ExprPtr ParseTest(ExprPtr node);
  CallArgExprs ParseCallArgs();

  // --- token helpers
  const Token& Cur() const { return toks_[pos_]; }
  const Token& Look(size_t k = 1) const { return toks_[std::min(pos_ + k, toks_.size() - 1)]; }
  Token Next() {
    Token t = toks_[pos_];
    if (pos_ + 1 < toks_.size()) ++pos_;
    return t;
  }
  bool IsOp(std::string_view op) const { return Cur().type == TokenType::kOp && Cur().text == op; }
  bool IsName(std::string_view n) const { return Cur().type == TokenType::kName && Cur().text == n; }
  bool SkipOp(std::string_view op) {
    if (!IsOp(op)) return false;
    Next();
    return true;
  }
  bool SkipName(std::string_view n) {
    if (!IsName(n)) return false;
    Next();
    return true;
  }
  void ExpectOp(std::string_view op);
  std::string ExpectName();
  bool IsTupleEnd(std::initializer_list<std::string_view> extra_end) const;
  [[noreturn]] void Fail(const std::string& msg) const { ThrowSyntax(msg, Cur().line, Cur().col); }
  [[noreturn]] void Fail(const std::string& msg, const Token& at) const { ThrowSyntax(msg, at.line, at.col); }
  static std::string Describe(const Token& t);

  int Intern(const std::string& name);
  template <typename T>
  std::unique_ptr<T> Make(const Token& at) {
    auto n = std::make_unique<T>();
    n->line = at.line;
    n->col = at.col;
    return n;
  }

  // Nesting guard for recursion (expressions and blocks).
  struct DepthGuard {
    explicit DepthGuard(Parser* p) : p_(p) {
      if (++p_->depth_ > kMaxParseDepth) p_->Fail("template nesting too deep");
    }
    ~DepthGuard() { --p_->depth_; }
    Parser* p_;
  };

 private:
  std::vector<Token> toks_;
  size_t pos_ = 0;
  std::vector<std::string>* symbols_;
  std::unordered_map<std::string, int> sym_index_;
  int depth_ = 0;
  int loop_depth_ = 0;
  std::vector<MacroStmt*> open_macros_;
  friend struct ParserLoopGuard;
};

}  // namespace tern::jinja
