// The Python methods of dict and list that templates call
// (tool.items(), message.get(...), list.index(...)), bound methods, and the
// argument-binding helpers every builtin uses.
#include <algorithm>
#include <unordered_set>

#include <fmt/format.h>

#include "template/builtins.h"
#include "template/evaluator.h"
#include "template/utf8.h"

namespace tern::jinja {

ArgBinder::ArgBinder(std::string_view fn, CallArgs& args, std::initializer_list<std::string_view> names,
                     size_t required)
    : vals_(names.size()) {
  if (args.pos.size() > names.size()) {
    ThrowRender(fmt::format("{}() takes at most {} positional argument(s) ({} given)", fn, names.size(),
                            args.pos.size()));
  }
  for (size_t i = 0; i < args.pos.size(); ++i) vals_[i] = args.pos[i];
  for (auto& [k, v] : args.kw) {
    size_t i = 0;
    for (auto n : names) {
      if (n == k) break;
      ++i;
    }
    if (i == names.size()) ThrowRender(fmt::format("{}() got an unexpected keyword argument '{}'", fn, k));
    vals_[i] = v;
  }
  for (size_t i = 0; i < required; ++i) {
    if (vals_[i].is_undefined()) {
      ThrowRender(fmt::format("{}() missing required argument '{}'", fn, *(names.begin() + i)));
    }
  }
}

int64_t ToInt(const Value& v, std::string_view what) {
  if (v.is_int() || v.is_bool()) return v.as_int();
  CheckDefined(v);
  ThrowRender(fmt::format("{}: '{}' object cannot be interpreted as an integer", what, TypeName(v)));
}

std::string ToStr(const Value& v) { return PyStr(v); }

const std::string& RequireString(const Value& v, std::string_view what) {
  if (v.is_string()) return v.str();
  CheckDefined(v);
  ThrowRender(fmt::format("{} must be str, not {}", what, TypeName(v)));
}

namespace {

class BoundMethod : public Object {
 public:
  BoundMethod(Value self, std::string name) : self_(std::move(self)), name_(std::move(name)) {}
  std::string_view TypeName() const override { return "builtin_function_or_method"; }
  bool IsCallable() const override { return true; }
  Value Call(Evaluator& ev, CallArgs& args) const override {
    if (self_.is_object()) {
      Value out;
      if (self_.obj().CallMethod(ev, name_, args, &out)) return out;
      ThrowRender("'" + name_ + "' is not callable");
    }
    // Never ev.CallMethod: that falls back to GetAttr, which would make this
    // bound method again for a listed name that has no implementation.
    return CallBuiltinMethod(ev, self_, name_, args);
  }
  std::string Str() const override {
    return "<built-in method " + name_ + " of " + std::string(jinja::TypeName(self_)) + " object>";
  }

 private:
  Value self_;
  std::string name_;
};

constexpr std::string_view kStrMethods[] = {
    "capitalize", "casefold", "center", "count", "encode", "endswith", "expandtabs", "find", "format",
    "format_map", "index", "isalnum", "isalpha", "isascii", "isdecimal", "isdigit", "isidentifier",
    "islower", "isnumeric", "isprintable", "isspace", "istitle", "isupper", "join", "ljust", "lower",
    "lstrip", "maketrans", "partition", "removeprefix", "removesuffix", "replace", "rfind", "rindex",
    "rjust", "rpartition", "rsplit", "rstrip", "split", "splitlines", "startswith", "strip", "swapcase",
    "title", "translate", "upper", "zfill"};
constexpr std::string_view kDictMethods[] = {"clear", "copy", "fromkeys", "get", "items", "keys", "pop",
                                             "popitem", "setdefault", "update", "values"};
constexpr std::string_view kListMethods[] = {"append", "clear", "copy", "count", "extend", "index",
                                             "insert", "pop", "remove", "reverse", "sort"};
constexpr std::string_view kTupleMethods[] = {"count", "index"};

template <size_t N>
bool In(const std::string_view (&names)[N], std::string_view n) {
  return std::find(std::begin(names), std::end(names), n) != std::end(names);
}

[[noreturn]] void Unsafe(std::string_view name, std::string_view type) {
  ThrowRender(fmt::format("access to attribute '{}' of '{}' object is unsafe.", name, type));
}

}  // namespace

bool IsMethodName(const Value& obj, std::string_view name) {
  switch (obj.kind()) {
    case Kind::kString:
      return In(kStrMethods, name);
    case Kind::kDict:
      return !obj.is_namespace() && In(kDictMethods, name);
    case Kind::kList:
      return obj.is_tuple() ? In(kTupleMethods, name) : In(kListMethods, name);
    default:
      return false;
  }
}

Value CallBuiltinMethod(Evaluator& ev, const Value& obj, std::string_view name, CallArgs& args) {
  CheckDefined(obj);
  Value out;
  bool done = false;
  if (IsMethodName(obj, name)) {
    switch (obj.kind()) {
      case Kind::kString:
        done = CallStrMethod(ev, obj, name, args, &out);
        break;
      case Kind::kDict:
        done = CallDictMethod(ev, obj, name, args, &out);
        break;
      case Kind::kList:
        done = CallListMethod(ev, obj, name, args, &out);
        break;
      default:
        break;
    }
  }
  // A listed name without an implementation (str.encode: tern has no bytes)
  // or a value without methods.
  if (!done) ThrowRender(fmt::format("{}.{} is not supported", TypeName(obj), name));
  return out;
}

Value MakeBoundMethod(const Value& obj, std::string_view name) {
  return Value::Obj(std::make_shared<BoundMethod>(obj, std::string(name)));
}

bool CallDictMethod(Evaluator& ev, const Value& obj, std::string_view name, CallArgs& args, Value* out) {
  const DictObj& d = obj.dict();
  if (name == "get") {
    ArgBinder a("get", args, {"key", "default"}, 1);
    const Value* v = a[0].is_string() ? d.Find(a[0].str()) : nullptr;
    *out = v ? *v : (a.has(1) ? a[1] : Value::None());
    return true;
  }
  if (name == "items" || name == "keys" || name == "values") {
    ArgBinder a(name, args, {});
    std::vector<Value> r;
    r.reserve(d.entries.size());
    for (const auto& [k, v] : d.entries) {
      if (name == "items") {
        r.push_back(Value::List({Value::String(k), v}, true));
      } else {
        r.push_back(name == "keys" ? Value::String(k) : v);
      }
    }
    ev.Tick(static_cast<int64_t>(r.size()));
    *out = Value::List(std::move(r));
    return true;
  }
  if (name == "fromkeys") {
    // A class method: the new dict does not start from obj's entries. Every
    // key maps to the same value, so a repeated key changes nothing.
    ArgBinder a(name, args, {"iterable", "value"}, 1);
    const Value v = a.has(1) ? a[1] : Value::None();
    Value r = Value::NewDict();
    std::unordered_set<std::string> seen;
    for (const auto& k : ev.Iterate(a[0])) {
      if (k.is_list() && !k.is_tuple()) ThrowRender("unhashable type: 'list'");
      if (k.is_dict()) ThrowRender("unhashable type: 'dict'");
      CheckDefined(k);
      // Keys are strings, as in a dict literal (see README, known differences).
      std::string key = k.is_string() ? k.str() : PyStr(k);
      if (seen.insert(key).second) r.dict().Add(std::move(key), v);
    }
    *out = std::move(r);
    return true;
  }
  if (name == "copy") {
    auto c = std::make_shared<DictObj>(d);
    *out = Value::Dict(std::move(c));
    return true;
  }
  if (name == "update" || name == "pop" || name == "setdefault" || name == "clear" || name == "popitem") {
    if (!ev.options().allow_mutation) Unsafe(name, "dict");
    ev.TrackCyclic(obj);
    if (name == "update") {
      for (const auto& p : args.pos) {
        if (!p.is_dict()) ThrowRender("dict.update() needs a mapping");
        for (const auto& [k, v] : p.dict().entries) obj.dict().Set(k, v);
      }
      for (const auto& [k, v] : args.kw) obj.dict().Set(k, v);
      *out = Value::None();
      return true;
    }
    if (name == "setdefault") {
      ArgBinder a(name, args, {"key", "default"}, 1);
      const std::string& k = RequireString(a[0], "key");
      if (const Value* v = d.Find(k)) {
        *out = *v;
      } else {
        Value dv = a.has(1) ? a[1] : Value::None();
        obj.dict().Set(k, dv);
        *out = dv;
      }
      return true;
    }
    if (name == "pop") {
      ArgBinder a(name, args, {"key", "default"}, 1);
      const std::string& k = RequireString(a[0], "key");
      auto& entries = obj.dict().entries;
      for (auto it = entries.begin(); it != entries.end(); ++it) {
        if (it->first == k) {
          *out = it->second;
          entries.erase(it);
          return true;
        }
      }
      if (!a.has(1)) ThrowRender("KeyError: '" + k + "'");
      *out = a[1];
      return true;
    }
    if (name == "clear") {
      obj.dict().entries.clear();
      *out = Value::None();
      return true;
    }
    auto& entries = obj.dict().entries;
    if (entries.empty()) ThrowRender("popitem(): dictionary is empty");
    *out = Value::List({Value::String(entries.back().first), entries.back().second}, true);
    entries.pop_back();
    return true;
  }
  return false;
}

bool CallListMethod(Evaluator& ev, const Value& obj, std::string_view name, CallArgs& args, Value* out) {
  const auto& items = obj.list().items;
  if (name == "index" || name == "count") {
    ArgBinder a(name, args, {"value"}, 1);
    int64_t n = 0;
    for (size_t i = 0; i < items.size(); ++i) {
      if (!Equals(items[i], a[0])) continue;
      if (name == "index") {
        *out = Value::Int(static_cast<int64_t>(i));
        return true;
      }
      ++n;
    }
    if (name == "index") ThrowRender(PyRepr(a[0]) + " is not in list");
    *out = Value::Int(n);
    return true;
  }
  if (name == "copy") {
    *out = Value::List(items, obj.is_tuple());
    return true;
  }
  if (In(kListMethods, name) && !obj.is_tuple()) {
    if (!ev.options().allow_mutation) Unsafe(name, "list");
    ev.TrackCyclic(obj);
    auto& mut = obj.list().items;
    auto grow = [&](const Value& v) {
      const uint32_t d = DepthOf(v) + 1;
      if (d > obj.list().depth) {
        CheckDepth(d);
        obj.list().depth = d;
      }
    };
    if (name == "append") {
      ArgBinder a(name, args, {"object"}, 1);
      ev.CheckSize(mut.size() + 1);
      grow(a[0]);
      mut.push_back(a[0]);
    } else if (name == "extend") {
      ArgBinder a(name, args, {"iterable"}, 1);
      for (auto& v : ev.Iterate(a[0])) {
        grow(v);
        mut.push_back(std::move(v));
      }
      ev.CheckSize(mut.size());
    } else if (name == "insert") {
      ArgBinder a(name, args, {"index", "object"}, 2);
      int64_t i = ToInt(a[0], "index");
      const int64_t n = static_cast<int64_t>(mut.size());
      if (i < 0) i = std::max<int64_t>(0, i + n);
      if (i > n) i = n;
      grow(a[1]);
      mut.insert(mut.begin() + i, a[1]);
    } else if (name == "pop") {
      ArgBinder a(name, args, {"index"});
      if (mut.empty()) ThrowRender("pop from empty list");
      int64_t i = a.has(0) ? ToInt(a[0], "index") : -1;
      const int64_t n = static_cast<int64_t>(mut.size());
      if (i < 0) i += n;
      if (i < 0 || i >= n) ThrowRender("pop index out of range");
      *out = mut[static_cast<size_t>(i)];
      mut.erase(mut.begin() + i);
      return true;
    } else if (name == "remove") {
      ArgBinder a(name, args, {"value"}, 1);
      auto it = std::find_if(mut.begin(), mut.end(), [&](const Value& v) { return Equals(v, a[0]); });
      if (it == mut.end()) ThrowRender("list.remove(x): x not in list");
      mut.erase(it);
    } else if (name == "reverse") {
      std::reverse(mut.begin(), mut.end());
    } else if (name == "clear") {
      mut.clear();
    } else if (name == "sort") {
      // list.sort(*, key=None, reverse=False): the sort filter's stable sort,
      // case-sensitive as Python compares strings.
      if (!args.pos.empty()) ThrowRender("sort() takes no positional arguments");
      ArgBinder a(name, args, {"key", "reverse"});
      if (a.has(0) && !a[0].is_none()) ThrowRender("list.sort(key=...) is not supported; use the sort filter");
      CallArgs fa;
      fa.kw = {{"reverse", Value::Bool(a[1].Truthy())}, {"case_sensitive", Value::Bool(true)}};
      Value sorted = ev.ApplyFilter("sort", obj, fa);
      mut = sorted.list().items;
    } else {
      return false;
    }
    *out = Value::None();
    return true;
  }
  return false;
}

}  // namespace tern::jinja
