// The syntax tree that the parser builds and the evaluator walks. Nodes are
// plain structs tagged with a kind; the evaluator switches on it.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "template/value.h"

namespace tern::jinja {

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

enum class ExprKind {
  kConst,      // literal number, string, bool, none
  kName,       // variable
  kGetAttr,    // obj.name
  kGetItem,    // obj[index]
  kSlice,      // obj[start:stop:step]
  kCall,       // callee(args)
  kFilter,     // operand | name(args)
  kTest,       // operand is name(args)
  kUnary,      // not / - / +
  kBinary,     // + - * / // % ** and or
  kConcat,     // a ~ b ~ c
  kCompare,    // a < b == c, in, not in
  kCondExpr,   // a if cond else b
  kList,       // [a, b] or (a, b)
  kDict,       // {k: v}
};

struct Expr {
  explicit Expr(ExprKind k) : kind(k) {}
  virtual ~Expr() = default;
  ExprKind kind;
  int line = 0;
  int col = 0;
};

struct ConstExpr : Expr {
  ConstExpr() : Expr(ExprKind::kConst) {}
  Value value;
};

struct NameExpr : Expr {
  NameExpr() : Expr(ExprKind::kName) {}
  std::string name;
  int sym = -1;  // index in the template's symbol table
};

struct GetAttrExpr : Expr {
  GetAttrExpr() : Expr(ExprKind::kGetAttr) {}
  ExprPtr obj;
  std::string name;
};

struct GetItemExpr : Expr {
  GetItemExpr() : Expr(ExprKind::kGetItem) {}
  ExprPtr obj;
  ExprPtr index;
};

struct SliceExpr : Expr {
  SliceExpr() : Expr(ExprKind::kSlice) {}
  ExprPtr obj;
  ExprPtr start, stop, step;  // each may be null
};

struct CallArgExprs {
  std::vector<ExprPtr> pos;
  std::vector<std::pair<std::string, ExprPtr>> kw;
  ExprPtr star;        // *args
  ExprPtr star_star;   // **kwargs
};

struct CallExpr : Expr {
  CallExpr() : Expr(ExprKind::kCall) {}
  ExprPtr callee;
  CallArgExprs args;
};

// Builtin filters and tests, resolved by name when parsing (null when the
// name is unknown: evaluating it is then an error, as in Jinja2 where an
// unknown filter inside an untaken branch does no harm).
using FilterFn = Value (*)(Evaluator& ev, const Value& operand, CallArgs& args);
using TestFn = bool (*)(Evaluator& ev, const Value& operand, CallArgs& args);

struct FilterExpr : Expr {
  FilterExpr() : Expr(ExprKind::kFilter) {}
  ExprPtr operand;  // null inside a {% filter %} block: the block's output
  std::string name;
  CallArgExprs args;
  FilterFn fn = nullptr;
};

struct TestExpr : Expr {
  TestExpr() : Expr(ExprKind::kTest) {}
  ExprPtr operand;
  std::string name;
  CallArgExprs args;
  TestFn fn = nullptr;
};

enum class UnaryOp { kNot, kNeg, kPos };
struct UnaryExpr : Expr {
  UnaryExpr() : Expr(ExprKind::kUnary) {}
  UnaryOp op;
  ExprPtr operand;
};

enum class BinaryOp { kAdd, kSub, kMul, kDiv, kFloorDiv, kMod, kPow, kAnd, kOr };
struct BinaryExpr : Expr {
  BinaryExpr() : Expr(ExprKind::kBinary) {}
  BinaryOp op;
  ExprPtr left, right;
};

struct ConcatExpr : Expr {
  ConcatExpr() : Expr(ExprKind::kConcat) {}
  std::vector<ExprPtr> parts;
};

enum class CmpOp { kEq, kNe, kLt, kLe, kGt, kGe, kIn, kNotIn };
struct CompareExpr : Expr {
  CompareExpr() : Expr(ExprKind::kCompare) {}
  ExprPtr first;
  std::vector<std::pair<CmpOp, ExprPtr>> rest;
};

struct CondExpr : Expr {
  CondExpr() : Expr(ExprKind::kCondExpr) {}
  ExprPtr test, then_expr, else_expr;  // else_expr may be null
};

struct ListExpr : Expr {
  ListExpr() : Expr(ExprKind::kList) {}
  std::vector<ExprPtr> items;
  bool is_tuple = false;
};

struct DictExpr : Expr {
  DictExpr() : Expr(ExprKind::kDict) {}
  std::vector<std::pair<ExprPtr, ExprPtr>> items;
};

// Assignment target: a name, a tuple of targets, or namespace.attr.
struct Target {
  enum class Type { kName, kTuple, kNsAttr } type = Type::kName;
  std::string name;
  int sym = -1;
  std::string attr;             // kNsAttr
  std::vector<Target> items;    // kTuple
};

enum class StmtKind {
  kText, kOutput, kIf, kFor, kSet, kSetBlock, kMacro, kCallBlock, kFilterBlock,
  kWith, kBreak, kContinue, kScope,
};

struct Stmt {
  explicit Stmt(StmtKind k) : kind(k) {}
  virtual ~Stmt() = default;
  StmtKind kind;
  int line = 0;
  int col = 0;
};

struct TextStmt : Stmt {
  TextStmt() : Stmt(StmtKind::kText) {}
  std::string text;
};

struct OutputStmt : Stmt {
  OutputStmt() : Stmt(StmtKind::kOutput) {}
  ExprPtr expr;
};

struct IfStmt : Stmt {
  IfStmt() : Stmt(StmtKind::kIf) {}
  std::vector<std::pair<ExprPtr, Body>> branches;  // if, elif...
  Body else_body;
};

struct ForStmt : Stmt {
  ForStmt() : Stmt(StmtKind::kFor) {}
  Target target;
  ExprPtr iter;
  ExprPtr filter;  // for x in y if cond
  Body body;
  Body else_body;
  bool recursive = false;
};

struct SetStmt : Stmt {
  SetStmt() : Stmt(StmtKind::kSet) {}
  Target target;
  ExprPtr value;
};

// {% set x | filters %}body{% endset %}; filters is a FilterExpr chain whose
// innermost operand is null (the rendered body), or null.
struct SetBlockStmt : Stmt {
  SetBlockStmt() : Stmt(StmtKind::kSetBlock) {}
  Target target;
  ExprPtr filters;
  Body body;
};

struct MacroParam {
  std::string name;
  int sym = -1;
  ExprPtr default_value;  // may be null
};

struct MacroStmt : Stmt {
  MacroStmt() : Stmt(StmtKind::kMacro) {}
  std::string name;
  int sym = -1;
  std::vector<MacroParam> params;
  Body body;
  // Whether the body mentions these names (Jinja2 decides by the same test
  // whether extra arguments are accepted).
  bool uses_varargs = false;
  bool uses_kwargs = false;
  bool uses_caller = false;
};

// {% call(params) macro(args) %}body{% endcall %}
struct CallBlockStmt : Stmt {
  CallBlockStmt() : Stmt(StmtKind::kCallBlock) {}
  std::unique_ptr<CallExpr> call;
  std::unique_ptr<MacroStmt> caller;  // params + body, name "caller"
};

struct FilterBlockStmt : Stmt {
  FilterBlockStmt() : Stmt(StmtKind::kFilterBlock) {}
  ExprPtr filters;  // FilterExpr chain, innermost operand null
  Body body;
};

struct WithStmt : Stmt {
  WithStmt() : Stmt(StmtKind::kWith) {}
  std::vector<std::pair<Target, ExprPtr>> assignments;
  Body body;
};

struct LoopControlStmt : Stmt {
  explicit LoopControlStmt(StmtKind k) : Stmt(k) {}
};

// A body rendered in place: {% block name %}, transformers' {% generation %}.
struct ScopeStmt : Stmt {
  ScopeStmt() : Stmt(StmtKind::kScope) {}
  Body body;
  bool new_scope = false;
};

}  // namespace tern::jinja
