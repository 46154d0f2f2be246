// Evaluator: walks the syntax tree of one template for one render.
//
// Scoping follows Jinja2: the template's top level is one scope; each loop
// iteration, {% with %} block and macro call opens a new one; {% if %} does
// not. A macro sees its parameters, the variables visible where it was
// defined (captured when defined inside a loop or macro), and the top level;
// not the variables of its caller. A {% call %} body sees the scope of the
// call site. Namespaces are the only values that can be changed in place.
//
// Limits (RenderOptions): output and every string value are bounded by
// max_output_bytes; loop iterations, macro calls and elements processed by
// filters together by max_loop_iterations; nested macro calls by
// max_recursion_depth. Breaking one throws TemplateError (kLimit).
#pragma once

#include <cstdint>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include "template/ast.h"
#include "template/error.h"
#include "template/parser.h"
#include "template/render_options.h"
#include "template/value.h"

namespace tern::jinja {

class Evaluator {
 public:
  // globals: one value per template symbol (context variables and builtin
  // functions; undefined for the others).
  Evaluator(const ParsedTemplate& tpl, const RenderOptions& options, std::vector<Value> globals);
  ~Evaluator();
  Evaluator(const Evaluator&) = delete;
  Evaluator& operator=(const Evaluator&) = delete;

  // Renders the whole template. Throws TemplateError.
  std::string Run();

  // --- used by builtins (filters, tests, methods, globals)
  Value Call(const Value& callee, CallArgs& args);
  // Jinja2 getattr: attribute first (methods of str/dict/list), then item.
  Value GetAttr(const Value& obj, std::string_view name, const std::string* name_for_errors = nullptr);
  // Jinja2 getitem: item first, then attribute.
  Value GetItem(const Value& obj, const Value& key);
  // Calls a method on a value (obj.name(args)); falls back to GetAttr + Call.
  Value CallMethod(const Value& obj, const std::string& name, CallArgs& args);
  // The elements of an iterable (list/tuple items, dict keys, string code
  // points); throws for non-iterables. Counts against the work budget.
  std::vector<Value> Iterate(const Value& v);
  // Charges `n` units of work (loop iterations, elements processed).
  void Tick(int64_t n = 1) {
    work_ += n;
    if (work_ > options_.max_loop_iterations) FailWorkLimit();
  }
  // Throws when a string or list of this many bytes/elements may not be built.
  void CheckSize(size_t n) const {
    if (n > options_.max_output_bytes) FailSizeLimit(n);
  }
  Value MakeString(std::string s) {
    CheckSize(s.size());
    if (s.size() > 4096) Tick(static_cast<int64_t>(s.size() / 4096));
    return Value::String(std::move(s));
  }
  bool ApplyTest(std::string_view name, const Value& v, CallArgs& args);
  Value ApplyFilter(std::string_view name, const Value& v, CallArgs& args);
  std::time_t Now() const;
  // Values that can take part in reference cycles (namespaces, macros with
  // captured scopes, containers changed in place): the evaluator empties them
  // when the render ends, so `{% set ns.me = ns %}` cannot leak memory.
  void TrackCyclic(const Value& v);
  const RenderOptions& options() const { return options_; }
  const std::vector<std::string>& symbols() const { return tpl_.symbols; }

  // --- macros (used by MacroObject)
  Value CallMacro(const MacroStmt& def, const std::vector<std::pair<int, Value>>& captured, int parent_frame,
                  uint64_t parent_frame_id, const Value& caller, CallArgs& args);
  // Renders a loop body again for `loop(items)` in recursive loops.
  Value RunRecursiveLoop(const ForStmt& stmt, const Value& items, int depth);

 private:
  enum class Flow { kNormal, kBreak, kContinue };

  Flow ExecBody(const Body& body);
  Flow Exec(const Stmt& s);
  Flow ExecIf(const IfStmt& s);
  Flow ExecFor(const ForStmt& s, const Value& iterable, int depth);
  void ExecMacroDef(const MacroStmt& s);
  void ExecCallBlock(const CallBlockStmt& s);
  std::string Capture(const Body& body);
  void Emit(std::string_view text);
  void EmitValue(const Value& v);

 public:
  Value Eval(const Expr& e);

 private:
  Value EvalInner(const Expr& e);
  Value EvalName(const NameExpr& e);
  Value EvalCall(const CallExpr& e);
  Value EvalFilter(const FilterExpr& e, const Value* block_output);
  Value EvalTest(const TestExpr& e);
  Value EvalCompare(const CompareExpr& e);
  Value EvalSlice(const SliceExpr& e);
  CallArgs EvalArgs(const CallArgExprs& a);
  Value MakeMacro(const MacroStmt& def, int parent_frame, uint64_t frame_id, bool capture);

  // Scopes: vars_ holds (symbol, value) pairs; frames_ mark where each scope
  // starts and in which scope lookup continues (parent, -1 for none).
  struct Frame {
    size_t start;
    int parent;
    uint64_t id;
  };
  void PushFrame(int parent);
  void PopFrame();
  int CurrentFrame() const { return static_cast<int>(frames_.size()) - 1; }
  size_t FrameEnd(int f) const {
    return static_cast<size_t>(f) + 1 < frames_.size() ? frames_[f + 1].start : vars_.size();
  }
  const Value* Lookup(int sym) const;
  void SetVar(int sym, Value v);
  void Assign(const Target& t, const Value& v);
  struct FrameGuard {
    FrameGuard(Evaluator* ev, int parent) : ev_(ev) { ev_->PushFrame(parent); }
    ~FrameGuard() { ev_->PopFrame(); }
    Evaluator* ev_;
  };

  [[noreturn]] void FailWorkLimit() const;
  [[noreturn]] void FailSizeLimit(size_t n) const;

  std::vector<Value> cyclic_;
  const ParsedTemplate& tpl_;
  const RenderOptions& options_;
  std::vector<Value> globals_;
  std::vector<std::pair<int, Value>> vars_;
  std::vector<Frame> frames_;
  uint64_t next_frame_id_ = 1;
  std::string* out_ = nullptr;
  int64_t work_ = 0;
  int macro_depth_ = 0;
  int depth_ = 0;  // nested Exec/Eval calls
  int loop_sym_ = -1, varargs_sym_ = -1, kwargs_sym_ = -1, caller_sym_ = -1;
  struct DepthGuard {
    explicit DepthGuard(Evaluator* ev) : ev_(ev) {
      if (++ev_->depth_ > kMaxEvalDepth) {
        --ev_->depth_;
        ThrowLimit("template nesting too deep while rendering (recursion)");
      }
    }
    ~DepthGuard() { --ev_->depth_; }
    Evaluator* ev_;
  };
  static constexpr int kMaxEvalDepth = 1500;
  friend class LoopObject;
};

// Error helpers shared by the builtins.
[[noreturn]] void FailUndefined(const Value& v);
// Arithmetic, comparison, ... on undefined fails like Jinja2's Undefined.
inline void CheckDefined(const Value& v) {
  if (v.is_undefined()) FailUndefined(v);
}

}  // namespace tern::jinja
