// Sequence filters. Jinja2 returns generators from map/select/reverse...;
// here they return lists, which behave the same in loops, |list, |join and
// |length (where Jinja2 would fail on a generator).
#include "template/filters_seq.h"

#include <algorithm>

#include <fmt/format.h>

#include "template/builtins.h"
#include "template/eval_ops.h"
#include "template/evaluator.h"
#include "template/utf8.h"

namespace tern::jinja {

namespace {

// Jinja2's make_attrgetter: "a.b.0" looks up item a, then b, then index 0.
class AttrGetter {
 public:
  AttrGetter(const Value& attribute, bool lower_strings, Value dflt = Value())
      : lower_(lower_strings), default_(std::move(dflt)) {
    if (attribute.is_undefined() || attribute.is_none()) return;
    active_ = true;
    if (!attribute.is_string()) {
      parts_.push_back(attribute);
      return;
    }
    const std::string& s = attribute.str();
    size_t start = 0;
    while (true) {
      const size_t dot = s.find('.', start);
      const std::string part = s.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
      const bool digits = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
      parts_.push_back(digits && part.size() < 18 ? Value::Int(std::stoll(part)) : Value::String(part));
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
  }
  Value operator()(Evaluator& ev, const Value& item) const {
    Value v = item;
    for (const auto& p : parts_) {
      v = ev.GetItem(v, p);
      if (v.is_undefined() && !default_.is_undefined()) v = default_;
    }
    if (lower_ && v.is_string()) return Value::String(utf8::Lower(v.str()));
    return v;
  }

 private:
  bool active_ = false;
  bool lower_;
  Value default_;
  std::vector<Value> parts_;
};

Value LowerIf(const Value& v, bool lower) {
  return lower && v.is_string() ? Value::String(utf8::Lower(v.str())) : v;
}

bool Less(const Value& a, const Value& b) {
  bool ok;
  const bool r = LessThan(a, b, &ok);
  if (!ok) {
    CheckDefined(a);
    CheckDefined(b);
    ThrowRender(fmt::format("'<' not supported between instances of '{}' and '{}'", TypeName(a), TypeName(b)));
  }
  return r;
}

// Shared by select/reject/selectattr/rejectattr.
Value SelectOrReject(Evaluator& ev, const Value& v, CallArgs& args, bool select, bool lookup_attr) {
  if (!v.Truthy()) return Value::List({});  // Jinja2: `if value:` before iterating
  size_t off = 0;
  AttrGetter getter(Value(), false);
  if (lookup_attr) {
    if (args.pos.empty()) ThrowRender("Missing parameter for attribute name");
    getter = AttrGetter(args.pos[0], false);
    off = 1;
  }
  const bool has_test = args.pos.size() > off;
  std::string test = has_test ? RequireString(args.pos[off], "test name") : "";
  CallArgs test_args;
  if (has_test) {
    test_args.pos.assign(args.pos.begin() + static_cast<std::ptrdiff_t>(off + 1), args.pos.end());
    test_args.kw = args.kw;
  }
  std::vector<Value> out;
  for (auto& item : ev.Iterate(v)) {
    Value x = lookup_attr ? getter(ev, item) : item;
    bool ok;
    if (has_test) {
      CallArgs a = test_args;
      ok = ev.ApplyTest(test, x, a);
    } else {
      ok = x.Truthy();
    }
    if (ok == select) out.push_back(std::move(item));
  }
  return Value::List(std::move(out));
}

Value MinMax(Evaluator& ev, const Value& v, CallArgs& args, bool want_max) {
  ArgBinder a(want_max ? "max" : "min", args, {"case_sensitive", "attribute"});
  AttrGetter key(a[1], !a[0].Truthy());
  std::vector<Value> items = ev.Iterate(v);
  if (items.empty()) return Value();
  size_t best = 0;
  Value best_key = a.has(1) ? key(ev, items[0]) : LowerIf(items[0], !a[0].Truthy());
  for (size_t i = 1; i < items.size(); ++i) {
    Value k = a.has(1) ? key(ev, items[i]) : LowerIf(items[i], !a[0].Truthy());
    if (want_max ? Less(best_key, k) : Less(k, best_key)) {
      best = i;
      best_key = k;
    }
  }
  return items[best];
}

}  // namespace

Value FilterFirst(Evaluator& ev, const Value& v, CallArgs& args) {
  ArgBinder("first", args, {});
  if (v.is_list()) return v.list().items.empty() ? Value() : v.list().items[0];
  std::vector<Value> items = ev.Iterate(v);
  return items.empty() ? Value() : items[0];
}

Value FilterLast(Evaluator& ev, const Value& v, CallArgs& args) {
  ArgBinder("last", args, {});
  if (v.is_list()) return v.list().items.empty() ? Value() : v.list().items.back();
  std::vector<Value> items = ev.Iterate(v);
  return items.empty() ? Value() : items.back();
}

Value FilterList(Evaluator& ev, const Value& v, CallArgs& args) {
  ArgBinder("list", args, {});
  return Value::List(ev.Iterate(v));
}

Value FilterJoin(Evaluator& ev, const Value& v, CallArgs& args) {
  ArgBinder a("join", args, {"d", "attribute"});
  const std::string sep = a.has(0) ? PyStr(a[0]) : "";
  AttrGetter getter(a[1], false);
  std::string out;
  bool first = true;
  for (const auto& item : ev.Iterate(v)) {
    if (!first) out += sep;
    first = false;
    AppendPyStr(out, a.has(1) ? getter(ev, item) : item);
    ev.CheckSize(out.size());
  }
  return ev.MakeString(std::move(out));
}

Value FilterMap(Evaluator& ev, const Value& v, CallArgs& args) {
  std::vector<Value> out;
  if (!v.Truthy()) return Value::List({});  // Jinja2: `if value:` before iterating
  if (args.pos.empty()) {
    Value attribute, dflt;
    for (const auto& [k, val] : args.kw) {
      if (k == "attribute") attribute = val;
      else if (k == "default") dflt = val;
      else ThrowRender("Unexpected keyword argument '" + k + "'");
    }
    if (attribute.is_undefined()) ThrowRender("map requires a filter argument");
    AttrGetter getter(attribute, false, dflt);
    for (const auto& item : ev.Iterate(v)) out.push_back(getter(ev, item));
    return Value::List(std::move(out));
  }
  const std::string name = RequireString(args.pos[0], "filter name");
  CallArgs rest;
  rest.pos.assign(args.pos.begin() + 1, args.pos.end());
  rest.kw = args.kw;
  for (const auto& item : ev.Iterate(v)) {
    CallArgs a = rest;
    out.push_back(ev.ApplyFilter(name, item, a));
  }
  return Value::List(std::move(out));
}

Value FilterSelect(Evaluator& ev, const Value& v, CallArgs& args) { return SelectOrReject(ev, v, args, true, false); }
Value FilterReject(Evaluator& ev, const Value& v, CallArgs& args) { return SelectOrReject(ev, v, args, false, false); }
Value FilterSelectAttr(Evaluator& ev, const Value& v, CallArgs& args) {
  return SelectOrReject(ev, v, args, true, true);
}
Value FilterRejectAttr(Evaluator& ev, const Value& v, CallArgs& args) {
  return SelectOrReject(ev, v, args, false, true);
}

Value FilterItems(Evaluator& ev, const Value& v, CallArgs& args) {
  ArgBinder("items", args, {});
  if (v.is_undefined()) return Value::List({});
  if (!v.is_dict() || v.is_namespace()) ThrowRender("Can only get item pairs from a mapping.");
  CallArgs none;
  Value out;
  CallDictMethod(ev, v, "items", none, &out);
  return out;
}

Value FilterDictSort(Evaluator& ev, const Value& v, CallArgs& args) {
  ArgBinder a("dictsort", args, {"case_sensitive", "by", "reverse"});
  const bool lower = !a[0].Truthy();
  const std::string by = a.has(1) ? RequireString(a[1], "by") : "key";
  if (by != "key" && by != "value") ThrowRender("You can only sort by either \"key\" or \"value\"");
  const size_t pos = by == "key" ? 0 : 1;
  if (!v.is_dict()) ThrowRender("dictsort needs a mapping");
  CallArgs none;
  Value items;
  CallDictMethod(ev, v, "items", none, &items);
  auto& list = items.list().items;
  const bool rev = a[2].Truthy();
  std::stable_sort(list.begin(), list.end(), [&](const Value& x, const Value& y) {
    const Value kx = LowerIf(x.list().items[pos], lower), ky = LowerIf(y.list().items[pos], lower);
    return rev ? Less(ky, kx) : Less(kx, ky);
  });
  return items;
}

Value FilterUnique(Evaluator& ev, const Value& v, CallArgs& args) {
  ArgBinder a("unique", args, {"case_sensitive", "attribute"});
  AttrGetter key(a[1], !a[0].Truthy());
  std::vector<Value> out, seen;
  for (auto& item : ev.Iterate(v)) {
    Value k = a.has(1) ? key(ev, item) : LowerIf(item, !a[0].Truthy());
    bool dup = false;
    for (const auto& s : seen) {
      if (Equals(s, k)) {
        dup = true;
        break;
      }
    }
    ev.Tick(static_cast<int64_t>(seen.size() / 64));
    if (dup) continue;
    seen.push_back(std::move(k));
    out.push_back(std::move(item));
  }
  return Value::List(std::move(out));
}

Value FilterReverse(Evaluator& ev, const Value& v, CallArgs& args) {
  ArgBinder("reverse", args, {});
  if (v.is_string()) {
    std::vector<Value> chars = ev.Iterate(v);
    std::string out;
    for (auto it = chars.rbegin(); it != chars.rend(); ++it) out += it->str();
    return Value::String(std::move(out));
  }
  std::vector<Value> items = ev.Iterate(v);
  std::reverse(items.begin(), items.end());
  return Value::List(std::move(items));
}

Value FilterSort(Evaluator& ev, const Value& v, CallArgs& args) {
  ArgBinder a("sort", args, {"reverse", "case_sensitive", "attribute"});
  const bool rev = a[0].Truthy();
  AttrGetter key(a[2], !a[1].Truthy());
  std::vector<Value> items = ev.Iterate(v);
  std::vector<std::pair<Value, size_t>> keyed;
  for (size_t i = 0; i < items.size(); ++i) {
    keyed.emplace_back(a.has(2) ? key(ev, items[i]) : LowerIf(items[i], !a[1].Truthy()), i);
  }
  ev.Tick(static_cast<int64_t>(items.size()) * 4);
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
    return rev ? Less(y.first, x.first) : Less(x.first, y.first);
  });
  std::vector<Value> out;
  out.reserve(items.size());
  for (const auto& k : keyed) out.push_back(items[k.second]);
  return Value::List(std::move(out));
}

Value FilterSum(Evaluator& ev, const Value& v, CallArgs& args) {
  ArgBinder a("sum", args, {"attribute", "start"});
  AttrGetter getter(a[0], false);
  Value total = a.has(1) ? a[1] : Value::Int(0);
  for (const auto& item : ev.Iterate(v)) {
    total = BinaryOpValues(ev, BinaryOp::kAdd, total, a.has(0) ? getter(ev, item) : item);
  }
  return total;
}

Value FilterMin(Evaluator& ev, const Value& v, CallArgs& args) { return MinMax(ev, v, args, false); }
Value FilterMax(Evaluator& ev, const Value& v, CallArgs& args) { return MinMax(ev, v, args, true); }

Value FilterBatch(Evaluator& ev, const Value& v, CallArgs& args) {
  ArgBinder a("batch", args, {"linecount", "fill_with"}, 1);
  const int64_t n = ToInt(a[0], "linecount");
  if (n <= 0) ThrowRender("batch size must be positive");
  std::vector<Value> out, cur;
  for (auto& item : ev.Iterate(v)) {
    if (static_cast<int64_t>(cur.size()) == n) {
      out.push_back(Value::List(std::move(cur)));
      cur.clear();
    }
    cur.push_back(std::move(item));
  }
  if (!cur.empty()) {
    if (a.has(1) && !a[1].is_none()) {
      while (static_cast<int64_t>(cur.size()) < n) cur.push_back(a[1]);
    }
    out.push_back(Value::List(std::move(cur)));
  }
  return Value::List(std::move(out));
}

Value FilterSlice(Evaluator& ev, const Value& v, CallArgs& args) {
  ArgBinder a("slice", args, {"slices", "fill_with"}, 1);
  const int64_t slices = ToInt(a[0], "slices");
  if (slices <= 0) ThrowRender("slices must be positive");
  if (slices > 100000) ThrowLimit("too many slices");
  std::vector<Value> seq = ev.Iterate(v);
  const int64_t len = static_cast<int64_t>(seq.size());
  const int64_t per = len / slices, extra = len % slices;
  int64_t offset = 0;
  std::vector<Value> out;
  ev.Tick(slices);
  for (int64_t k = 0; k < slices; ++k) {
    const int64_t start = offset + k * per;
    if (k < extra) ++offset;
    const int64_t end = offset + (k + 1) * per;
    std::vector<Value> tmp(seq.begin() + start, seq.begin() + end);
    if (a.has(1) && !a[1].is_none() && k >= extra) tmp.push_back(a[1]);
    out.push_back(Value::List(std::move(tmp)));
  }
  return Value::List(std::move(out));
}

}  // namespace tern::jinja
