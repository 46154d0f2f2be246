// Global functions: Jinja2's range, dict, namespace, cycler, joiner and the
// two that transformers adds, raise_exception and strftime_now.
#include <ctime>
#include <string_view>

#include <fmt/format.h>

#include "template/builtins.h"
#include "template/evaluator.h"

namespace tern::jinja {

namespace {

using GlobalFn = Value (*)(Evaluator&, CallArgs&);

class BuiltinFunction : public Object {
 public:
  BuiltinFunction(std::string_view name, GlobalFn fn) : name_(name), fn_(fn) {}
  std::string_view TypeName() const override { return "builtin_function_or_method"; }
  bool IsCallable() const override { return true; }
  Value Call(Evaluator& ev, CallArgs& args) const override { return fn_(ev, args); }
  std::string Str() const override { return "<built-in function " + std::string(name_) + ">"; }

 private:
  std::string_view name_;
  GlobalFn fn_;
};

// Jinja2's sandbox refuses ranges longer than this.
constexpr int64_t kMaxRange = 100000;

Value Range(Evaluator& ev, CallArgs& args) {
  if (!args.kw.empty()) ThrowRender("range() takes no keyword arguments");
  if (args.pos.empty() || args.pos.size() > 3) {
    ThrowRender(fmt::format("range expected at most 3 arguments, got {}", args.pos.size()));
  }
  int64_t start = 0, stop, step = 1;
  if (args.pos.size() == 1) {
    stop = ToInt(args.pos[0], "range");
  } else {
    start = ToInt(args.pos[0], "range");
    stop = ToInt(args.pos[1], "range");
    if (args.pos.size() == 3) step = ToInt(args.pos[2], "range");
  }
  if (step == 0) ThrowRender("range() arg 3 must not be zero");
  const int64_t n = step > 0 ? (stop > start ? (stop - start + step - 1) / step : 0)
                             : (start > stop ? (start - stop - step - 1) / -step : 0);
  if (n > kMaxRange) {
    ThrowLimit("Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
  }
  ev.Tick(n);
  std::vector<Value> out;
  out.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out.push_back(Value::Int(start + i * step));
  return Value::List(std::move(out));
}

Value DictFromArgs(CallArgs& args, bool is_namespace) {
  auto d = std::make_shared<DictObj>();
  d->is_namespace = is_namespace;
  if (args.pos.size() > 1) ThrowRender("expected at most 1 positional argument");
  if (!args.pos.empty()) {
    const Value& src = args.pos[0];
    if (src.is_dict()) {
      d->entries = src.dict().entries;
      d->depth = src.dict().depth;
    } else if (src.is_list()) {
      for (const auto& item : src.list().items) {
        if (!item.is_list() || item.list().items.size() != 2 || !item.list().items[0].is_string()) {
          ThrowRender("dictionary update sequence element must be a (str, value) pair");
        }
        d->Set(item.list().items[0].str(), item.list().items[1]);
      }
    } else if (!src.is_undefined()) {
      ThrowRender("'" + std::string(TypeName(src)) + "' object is not iterable");
    }
  }
  for (auto& [k, v] : args.kw) d->Set(k, v);
  return Value::Dict(std::move(d));
}

Value Dict(Evaluator&, CallArgs& args) { return DictFromArgs(args, false); }
Value Namespace(Evaluator& ev, CallArgs& args) {
  Value ns = DictFromArgs(args, true);
  ev.TrackCyclic(ns);
  return ns;
}

Value RaiseException(Evaluator&, CallArgs& args) {
  std::string msg = args.pos.empty() ? "" : PyStr(args.pos[0]);
  throw TemplateError{TemplateError::Type::kRaised, std::move(msg), 0, 0};
}

Value StrftimeNow(Evaluator& ev, CallArgs& args) {
  ArgBinder a("strftime_now", args, {"format"}, 1);
  const std::string& fmt_str = RequireString(a[0], "strftime_now() format");
  if (fmt_str.size() > 256) ThrowRender("strftime_now() format too long");
  const std::time_t t = ev.Now();
  std::tm tm{};
  if (ev.options().local_time) {
    localtime_r(&t, &tm);
  } else {
    gmtime_r(&t, &tm);
  }
  // strftime returns 0 both for "buffer too small" and for an empty result;
  // a guard character tells them apart.
  const std::string f = fmt_str + "\x01";
  std::string buf(f.size() * 16 + 64, '\0');
  const size_t n = std::strftime(buf.data(), buf.size(), f.c_str(), &tm);
  if (n == 0) ThrowRender("strftime_now() result too long");
  buf.resize(n - 1);
  return Value::String(std::move(buf));
}

class Cycler : public Object {
 public:
  explicit Cycler(std::vector<Value> items) : items_(std::move(items)) {}
  std::string_view TypeName() const override { return "Cycler"; }
  Value GetAttr(std::string_view n) const override {
    if (n == "current") return items_[pos_];
    if (n == "next" || n == "reset") return MakeBoundMethod(self_.lock() ? Value::Obj(self_.lock()) : Value(), n);
    return Value();
  }
  bool CallMethod(Evaluator&, std::string_view name, CallArgs&, Value* out) const override {
    if (name == "next") {
      *out = items_[pos_];
      pos_ = (pos_ + 1) % items_.size();
      return true;
    }
    if (name == "reset") {
      pos_ = 0;
      *out = Value::None();
      return true;
    }
    return false;
  }
  std::weak_ptr<Object> self_;

 private:
  std::vector<Value> items_;
  mutable size_t pos_ = 0;
};

Value MakeCycler(Evaluator&, CallArgs& args) {
  if (args.pos.empty()) ThrowRender("cycler() needs at least one item");
  auto c = std::make_shared<Cycler>(args.pos);
  c->self_ = c;
  return Value::Obj(c);
}

class Joiner : public Object {
 public:
  explicit Joiner(std::string sep) : sep_(std::move(sep)) {}
  std::string_view TypeName() const override { return "Joiner"; }
  bool IsCallable() const override { return true; }
  Value Call(Evaluator&, CallArgs&) const override {
    if (!used_) {
      used_ = true;
      return Value::String("");
    }
    return Value::String(sep_);
  }

 private:
  std::string sep_;
  mutable bool used_ = false;
};

Value MakeJoiner(Evaluator&, CallArgs& args) {
  ArgBinder a("joiner", args, {"sep"});
  return Value::Obj(std::make_shared<Joiner>(a.has(0) ? PyStr(a[0]) : ", "));
}

struct GlobalEntry {
  std::string_view name;
  GlobalFn fn;
};
constexpr GlobalEntry kGlobals[] = {
    {"range", Range},
    {"dict", Dict},
    {"namespace", Namespace},
    {"raise_exception", RaiseException},
    {"strftime_now", StrftimeNow},
    {"cycler", MakeCycler},
    {"joiner", MakeJoiner},
};

}  // namespace

Value FindGlobal(std::string_view name) {
  for (const auto& g : kGlobals) {
    if (g.name == name) {
      // One immutable object per builtin, shared by all renders.
      static std::vector<Value>* cache = [] {
        auto* v = new std::vector<Value>();
        for (const auto& e : kGlobals) v->push_back(Value::Obj(std::make_shared<BuiltinFunction>(e.name, e.fn)));
        return v;
      }();
      return (*cache)[static_cast<size_t>(&g - kGlobals)];
    }
  }
  return Value();
}

}  // namespace tern::jinja
