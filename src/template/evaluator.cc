// Statements, scopes, loops and macros.
#include "template/evaluator.h"

#include <fmt/format.h>

#include "template/builtins.h"

namespace tern::jinja {

namespace {

// The `loop` variable of a for statement. One object per loop execution,
// updated in place each iteration.
class LoopObject : public Object {
 public:
  LoopObject(Evaluator* ev, const ForStmt* stmt, std::shared_ptr<std::vector<Value>> items, int depth)
      : ev_(ev), stmt_(stmt), items_(std::move(items)), depth_(depth) {}
  std::string_view TypeName() const override { return "LoopContext"; }
  bool IsCallable() const override { return stmt_->recursive; }
  Value Call(Evaluator& ev, CallArgs& args) const override {
    if (!stmt_->recursive) ThrowRender("loop is not recursive");
    ArgBinder a("loop", args, {"iterable"}, 1);
    return ev.RunRecursiveLoop(*stmt_, a[0], depth_ + 1);
  }
  Value GetAttr(std::string_view n) const override {
    const int64_t len = static_cast<int64_t>(items_->size());
    if (n == "index") return Value::Int(index_ + 1);
    if (n == "index0") return Value::Int(index_);
    if (n == "first") return Value::Bool(index_ == 0);
    if (n == "last") return Value::Bool(index_ == len - 1);
    if (n == "length") return Value::Int(len);
    if (n == "revindex") return Value::Int(len - index_);
    if (n == "revindex0") return Value::Int(len - index_ - 1);
    if (n == "depth") return Value::Int(depth_);
    if (n == "depth0") return Value::Int(depth_ - 1);
    if (n == "previtem") return index_ > 0 ? (*items_)[index_ - 1] : Value();
    if (n == "nextitem") return index_ + 1 < len ? (*items_)[index_ + 1] : Value();
    if (n == "cycle" || n == "changed") return MakeBoundMethod(self_, n);
    return Value();
  }
  bool CallMethod(Evaluator&, std::string_view n, CallArgs& args, Value* out) const override {
    if (n == "cycle") {
      if (args.pos.empty()) ThrowRender("no items for cycling given");
      *out = args.pos[static_cast<size_t>(index_) % args.pos.size()];
      return true;
    }
    if (n == "changed") {
      Value cur = Value::List(args.pos);
      const bool changed = !has_last_changed_ || !Equals(cur, last_changed_);
      last_changed_ = cur;
      has_last_changed_ = true;
      *out = Value::Bool(changed);
      return true;
    }
    return false;
  }

  Evaluator* ev_;
  const ForStmt* stmt_;
  std::shared_ptr<std::vector<Value>> items_;
  int depth_;
  int64_t index_ = 0;
  Value self_;  // weak in spirit: reset when the loop ends to break the cycle
  mutable Value last_changed_;
  mutable bool has_last_changed_ = false;
};

// A macro (or the body of a {% call %} block, named "caller").
class MacroObject : public Object {
 public:
  std::string_view TypeName() const override { return "Macro"; }
  bool IsCallable() const override { return true; }
  Value Call(Evaluator& ev, CallArgs& args) const override {
    return ev.CallMacro(*def, captured, parent_frame, parent_frame_id, caller, args);
  }
  Value GetAttr(std::string_view n) const override {
    if (n == "name") return Value::String(def->name);
    if (n == "arguments") {
      std::vector<Value> names;
      for (const auto& p : def->params) names.push_back(Value::String(p.name));
      return Value::List(std::move(names), true);
    }
    if (n == "catch_varargs") return Value::Bool(def->uses_varargs);
    if (n == "catch_kwargs") return Value::Bool(def->uses_kwargs);
    if (n == "caller") return Value::Bool(def->uses_caller);
    return Value();
  }
  std::string Str() const override { return "<Macro '" + def->name + "'>"; }
  void ClearReferences() override {
    captured.clear();
    caller = Value();
  }

  const MacroStmt* def = nullptr;
  std::vector<std::pair<int, Value>> captured;
  int parent_frame = 0;
  uint64_t parent_frame_id = 0;
  Value caller;
};

}  // namespace

Evaluator::Evaluator(const ParsedTemplate& tpl, const RenderOptions& options, std::vector<Value> globals)
    : tpl_(tpl), options_(options), globals_(std::move(globals)) {
  vars_.reserve(64);
  frames_.reserve(16);
  for (size_t i = 0; i < tpl_.symbols.size(); ++i) {
    const std::string& n = tpl_.symbols[i];
    if (n == "loop") loop_sym_ = static_cast<int>(i);
    if (n == "varargs") varargs_sym_ = static_cast<int>(i);
    if (n == "kwargs") kwargs_sym_ = static_cast<int>(i);
    if (n == "caller") caller_sym_ = static_cast<int>(i);
  }
}

Evaluator::~Evaluator() {
  for (auto& v : cyclic_) {
    if (v.is_dict()) {
      v.dict().entries.clear();
    } else if (v.is_list()) {
      v.list().items.clear();
    } else if (v.is_object()) {
      v.obj().ClearReferences();
    }
  }
}

void Evaluator::TrackCyclic(const Value& v) {
  if (!cyclic_.empty() && cyclic_.back().identity() == v.identity()) return;
  CheckSize(cyclic_.size());
  cyclic_.push_back(v);
}

std::string Evaluator::Run() {
  std::string out;
  out_ = &out;
  PushFrame(-1);
  ExecBody(tpl_.body);
  return out;
}

void Evaluator::PushFrame(int parent) { frames_.push_back({vars_.size(), parent, next_frame_id_++}); }

void Evaluator::PopFrame() {
  vars_.resize(frames_.back().start);
  frames_.pop_back();
}

const Value* Evaluator::Lookup(int sym) const {
  for (int f = CurrentFrame(); f >= 0; f = frames_[f].parent) {
    const size_t begin = frames_[f].start;
    for (size_t i = FrameEnd(f); i > begin; --i) {
      if (vars_[i - 1].first == sym) return &vars_[i - 1].second;
    }
  }
  const Value& g = globals_[sym];
  return g.is_undefined() ? nullptr : &g;
}

void Evaluator::SetVar(int sym, Value v) {
  const size_t begin = frames_.back().start;
  for (size_t i = vars_.size(); i > begin; --i) {
    if (vars_[i - 1].first == sym) {
      vars_[i - 1].second = std::move(v);
      return;
    }
  }
  vars_.emplace_back(sym, std::move(v));
}

void Evaluator::Assign(const Target& t, const Value& v) {
  switch (t.type) {
    case Target::Type::kName:
      SetVar(t.sym, v);
      return;
    case Target::Type::kNsAttr: {
      const Value* ns = Lookup(t.sym);
      if (ns == nullptr || !ns->is_namespace()) {
        ThrowRender("can't assign attribute '" + t.attr + "' on '" + t.name + "': not a namespace object");
      }
      ns->dict().Set(t.attr, v);
      return;
    }
    case Target::Type::kTuple: {
      std::vector<Value> items = Iterate(v);
      if (items.size() != t.items.size()) {
        ThrowRender(items.size() < t.items.size()
                        ? fmt::format("not enough values to unpack (expected {}, got {})", t.items.size(), items.size())
                        : fmt::format("too many values to unpack (expected {})", t.items.size()));
      }
      for (size_t i = 0; i < items.size(); ++i) Assign(t.items[i], items[i]);
      return;
    }
  }
}

void Evaluator::FailWorkLimit() const {
  ThrowLimit(fmt::format("template exceeded the work limit ({} loop iterations, macro calls and processed "
                         "elements)", options_.max_loop_iterations));
}

void Evaluator::FailSizeLimit(size_t n) const {
  ThrowLimit(fmt::format("template output or value of {} bytes exceeds the limit of {} bytes", n,
                         options_.max_output_bytes));
}

void Evaluator::Emit(std::string_view text) {
  if (out_->size() + text.size() > options_.max_output_bytes) FailSizeLimit(out_->size() + text.size());
  out_->append(text);
}

void Evaluator::EmitValue(const Value& v) {
  switch (v.kind()) {
    case Kind::kString:
      Emit(v.str());
      return;
    case Kind::kUndefined:
      return;
    default: {
      std::string s;
      AppendPyStr(s, v);
      Emit(s);
    }
  }
}

std::string Evaluator::Capture(const Body& body) {
  std::string buf;
  std::string* saved = out_;
  out_ = &buf;
  try {
    ExecBody(body);
  } catch (...) {
    out_ = saved;
    throw;
  }
  out_ = saved;
  return buf;
}

Evaluator::Flow Evaluator::ExecBody(const Body& body) {
  for (const auto& s : body) {
    const Flow f = Exec(*s);
    if (f != Flow::kNormal) return f;
  }
  return Flow::kNormal;
}

Evaluator::Flow Evaluator::Exec(const Stmt& s) {
  DepthGuard depth(this);
  try {
    switch (s.kind) {
      case StmtKind::kText:
        Emit(static_cast<const TextStmt&>(s).text);
        return Flow::kNormal;
      case StmtKind::kOutput:
        EmitValue(Eval(*static_cast<const OutputStmt&>(s).expr));
        return Flow::kNormal;
      case StmtKind::kIf:
        return ExecIf(static_cast<const IfStmt&>(s));
      case StmtKind::kFor: {
        const auto& f = static_cast<const ForStmt&>(s);
        ExecFor(f, Eval(*f.iter), 1);
        return Flow::kNormal;
      }
      case StmtKind::kSet: {
        const auto& st = static_cast<const SetStmt&>(s);
        Assign(st.target, Eval(*st.value));
        return Flow::kNormal;
      }
      case StmtKind::kSetBlock: {
        const auto& st = static_cast<const SetBlockStmt&>(s);
        Value v = MakeString(Capture(st.body));
        if (st.filters) v = EvalFilter(static_cast<const FilterExpr&>(*st.filters), &v);
        Assign(st.target, v);
        return Flow::kNormal;
      }
      case StmtKind::kMacro:
        ExecMacroDef(static_cast<const MacroStmt&>(s));
        return Flow::kNormal;
      case StmtKind::kCallBlock:
        ExecCallBlock(static_cast<const CallBlockStmt&>(s));
        return Flow::kNormal;
      case StmtKind::kFilterBlock: {
        const auto& st = static_cast<const FilterBlockStmt&>(s);
        Value body = MakeString(Capture(st.body));
        EmitValue(EvalFilter(static_cast<const FilterExpr&>(*st.filters), &body));
        return Flow::kNormal;
      }
      case StmtKind::kWith: {
        const auto& st = static_cast<const WithStmt&>(s);
        // Values are evaluated in the outer scope, then bound in the new one.
        std::vector<Value> vals;
        for (const auto& [t, e] : st.assignments) vals.push_back(Eval(*e));
        FrameGuard g(this, CurrentFrame());
        for (size_t i = 0; i < vals.size(); ++i) Assign(st.assignments[i].first, vals[i]);
        return ExecBody(st.body);
      }
      case StmtKind::kBreak:
        return Flow::kBreak;
      case StmtKind::kContinue:
        return Flow::kContinue;
      case StmtKind::kScope: {
        const auto& st = static_cast<const ScopeStmt&>(s);
        if (!st.new_scope) return ExecBody(st.body);
        FrameGuard g(this, CurrentFrame());
        return ExecBody(st.body);
      }
    }
  } catch (TemplateError& e) {
    if (e.line == 0) {
      e.line = s.line;
      e.col = s.col;
    }
    throw;
  }
  return Flow::kNormal;
}

Evaluator::Flow Evaluator::ExecIf(const IfStmt& s) {
  for (const auto& [cond, body] : s.branches) {
    if (Eval(*cond).Truthy()) return ExecBody(body);
  }
  return ExecBody(s.else_body);
}

Evaluator::Flow Evaluator::ExecFor(const ForStmt& s, const Value& iterable, int depth) {
  auto items = std::make_shared<std::vector<Value>>(Iterate(iterable));
  if (s.filter) {
    std::vector<Value> kept;
    for (auto& item : *items) {
      Tick();
      FrameGuard g(this, CurrentFrame());
      Assign(s.target, item);
      if (Eval(*s.filter).Truthy()) kept.push_back(std::move(item));
    }
    *items = std::move(kept);
  }
  if (items->empty()) {
    ExecBody(s.else_body);
    return Flow::kNormal;
  }
  auto loop = std::make_shared<LoopObject>(this, &s, items, depth);
  Value loop_value = Value::Obj(loop);
  loop->self_ = loop_value;
  const int sym = loop_sym_;
  struct SelfReset {
    LoopObject* l;
    ~SelfReset() { l->self_ = Value(); }
  } reset{loop.get()};
  for (size_t i = 0; i < items->size(); ++i) {
    Tick();
    loop->index_ = static_cast<int64_t>(i);
    FrameGuard g(this, CurrentFrame());
    if (sym >= 0) SetVar(sym, loop_value);
    Assign(s.target, (*items)[i]);
    if (ExecBody(s.body) == Flow::kBreak) break;
  }
  return Flow::kNormal;
}

Value Evaluator::RunRecursiveLoop(const ForStmt& stmt, const Value& items, int depth) {
  std::string buf;
  std::string* saved = out_;
  out_ = &buf;
  try {
    ExecFor(stmt, items, depth);
  } catch (...) {
    out_ = saved;
    throw;
  }
  out_ = saved;
  return MakeString(std::move(buf));
}

Value Evaluator::MakeMacro(const MacroStmt& def, int parent_frame, uint64_t frame_id, bool capture) {
  auto m = std::make_shared<MacroObject>();
  m->def = &def;
  m->parent_frame = parent_frame;
  m->parent_frame_id = frame_id;
  if (capture) {
    // Snapshot of the variables visible here, outside the top-level scope
    // (which macros always see live).
    for (int f = CurrentFrame(); f > 0; f = frames_[f].parent) {
      for (size_t i = FrameEnd(f); i > frames_[f].start; --i) {
        const auto& var = vars_[i - 1];
        bool seen = false;
        for (const auto& c : m->captured) seen = seen || c.first == var.first;
        if (!seen) m->captured.push_back(var);
      }
    }
  }
  Value v = Value::Obj(m);
  if (!m->captured.empty()) TrackCyclic(v);
  return v;
}

void Evaluator::ExecMacroDef(const MacroStmt& s) {
  SetVar(s.sym, MakeMacro(s, 0, frames_[0].id, CurrentFrame() != 0));
}

void Evaluator::ExecCallBlock(const CallBlockStmt& s) {
  // The caller body runs in the call site's scope, which stays on the frame
  // stack while the macro runs.
  Value caller = MakeMacro(*s.caller, CurrentFrame(), frames_.back().id, false);
  Value callee = Eval(*s.call->callee);
  CallArgs args = EvalArgs(s.call->args);
  args.kw.emplace_back("caller", caller);
  EmitValue(Call(callee, args));
}

Value Evaluator::CallMacro(const MacroStmt& def, const std::vector<std::pair<int, Value>>& captured,
                           int parent_frame, uint64_t parent_frame_id, const Value& caller, CallArgs& args) {
  if (parent_frame >= static_cast<int>(frames_.size()) || frames_[parent_frame].id != parent_frame_id) {
    ThrowRender("'" + def.name + "' called outside of the scope it was defined in");
  }
  if (macro_depth_ >= options_.max_recursion_depth) {
    ThrowLimit(fmt::format("macro recursion deeper than {} calls", options_.max_recursion_depth));
  }
  Tick();
  // Bind arguments before opening the frame (they were evaluated by the caller).
  std::vector<Value> extra_pos;
  if (args.pos.size() > def.params.size()) {
    if (!def.uses_varargs) {
      ThrowRender(fmt::format("macro '{}' takes not more than {} argument(s)", def.name, def.params.size()));
    }
    extra_pos.assign(args.pos.begin() + static_cast<std::ptrdiff_t>(def.params.size()), args.pos.end());
  }
  std::vector<Value> bound(def.params.size());
  std::vector<bool> given(def.params.size(), false);
  for (size_t i = 0; i < args.pos.size() && i < def.params.size(); ++i) {
    bound[i] = args.pos[i];
    given[i] = true;
  }
  Value extra_kw;  // built only when the macro takes **kwargs
  Value call_caller = caller;
  for (auto& [k, v] : args.kw) {
    bool matched = false;
    for (size_t i = 0; i < def.params.size(); ++i) {
      if (def.params[i].name == k) {
        if (given[i]) ThrowRender(fmt::format("macro '{}' got multiple values for argument '{}'", def.name, k));
        bound[i] = v;
        given[i] = true;
        matched = true;
        break;
      }
    }
    if (matched) continue;
    if (k == "caller") {
      call_caller = v;
      continue;
    }
    if (!def.uses_kwargs) ThrowRender(fmt::format("macro '{}' takes no keyword argument '{}'", def.name, k));
    if (extra_kw.is_undefined()) extra_kw = Value::NewDict();
    extra_kw.dict().Set(k, v);
  }

  ++macro_depth_;
  struct DepthReset {
    int* d;
    ~DepthReset() { --*d; }
  } depth_reset{&macro_depth_};
  FrameGuard g(this, parent_frame);
  for (const auto& c : captured) SetVar(c.first, c.second);
  for (size_t i = 0; i < def.params.size(); ++i) {
    const auto& p = def.params[i];
    if (given[i]) {
      SetVar(p.sym, bound[i]);
    } else if (p.default_value) {
      SetVar(p.sym, Eval(*p.default_value));
    } else {
      SetVar(p.sym, Value::UndefinedNamed(&p.name));
    }
  }
  if (def.uses_varargs && varargs_sym_ >= 0) SetVar(varargs_sym_, Value::List(std::move(extra_pos), true));
  if (def.uses_kwargs && kwargs_sym_ >= 0) SetVar(kwargs_sym_, extra_kw.is_undefined() ? Value::NewDict() : extra_kw);
  if (!call_caller.is_undefined() && caller_sym_ >= 0) SetVar(caller_sym_, call_caller);
  return MakeString(Capture(def.body));
}

}  // namespace tern::jinja
