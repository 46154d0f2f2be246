// Builtin filters, tests, global functions and the Python methods of str,
// dict and list that templates call, plus argument binding for them.
#pragma once

#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "template/ast.h"
#include "template/value.h"

namespace tern::jinja {

class Evaluator;

// Null when unknown.
FilterFn FindFilter(std::string_view name);
TestFn FindTest(std::string_view name);
// Builtin global (range, namespace, dict, raise_exception, strftime_now,
// cycler, joiner); undefined when `name` is not one.
Value FindGlobal(std::string_view name);

// Methods: returns true and sets *out when `name` is a method of obj's type
// (the callers go through CallBuiltinMethod).
bool CallStrMethod(Evaluator& ev, const Value& obj, std::string_view name, CallArgs& args, Value* out);
bool CallDictMethod(Evaluator& ev, const Value& obj, std::string_view name, CallArgs& args, Value* out);
bool CallListMethod(Evaluator& ev, const Value& obj, std::string_view name, CallArgs& args, Value* out);
// Whether `name` is a method of obj's type (str, dict but not namespace, list,
// tuple): attribute access then yields a bound method.
bool IsMethodName(const Value& obj, std::string_view name);
// Calls method `name` of a str, dict or list value. Never falls back to
// attribute lookup: a name IsMethodName lists but Call*Method does not handle
// (str.encode: tern has no bytes) is the render error "str.encode is not
// supported", as is any name that is not a method of the type.
Value CallBuiltinMethod(Evaluator& ev, const Value& obj, std::string_view name, CallArgs& args);
// obj.name as a first-class value (bound method object).
Value MakeBoundMethod(const Value& obj, std::string_view name);

// json.dumps(v, ensure_ascii, indent, separators, sort_keys) as transformers'
// tojson filter calls it. indent < 0 means None; indent_str overrides it when
// non-null. Throws for values JSON cannot hold (undefined, macros...).
struct JsonDumpOptions {
  bool ensure_ascii = false;
  bool has_indent = false;
  std::string indent;
  std::string item_sep = ", ";
  std::string key_sep = ": ";
  bool sort_keys = false;
};
void AppendJson(Evaluator& ev, std::string& out, const Value& v, const JsonDumpOptions& opts, int level = 0);

// Python printf-style formatting: fmt % args (args: tuple or single value).
std::string PyPercentFormat(Evaluator& ev, const std::string& fmt, const Value& args);
// Python str.format(*pos, **kw).
std::string PyStrFormat(Evaluator& ev, const std::string& fmt, CallArgs& args);

// Binds call arguments to named parameters (Python-style). Positional
// arguments fill names in order, keywords by name; missing ones stay
// undefined. Unknown keywords, too many positionals and missing required
// parameters throw.
class ArgBinder {
 public:
  ArgBinder(std::string_view fn, CallArgs& args, std::initializer_list<std::string_view> names,
            size_t required = 0);
  const Value& operator[](size_t i) const { return vals_[i]; }
  bool has(size_t i) const { return !vals_[i].is_undefined(); }

 private:
  std::vector<Value> vals_;
};

// Helpers for builtins.
int64_t ToInt(const Value& v, std::string_view what);
std::string ToStr(const Value& v);  // str(v)
const std::string& RequireString(const Value& v, std::string_view what);

}  // namespace tern::jinja
