// Value: the runtime value of the template interpreter, modelled on the Python
// objects that Jinja2 templates manipulate.
//
//   undefined  Jinja2's default Undefined: falsy, prints as "", iterates as
//              empty; arithmetic, calls and attribute access on it fail.
//   none, bool, int (int64; overflow is an error, not a wrap), float (double),
//   string     UTF-8 bytes; length, indexing and slicing count code points.
//   list       also tuples (is_tuple), which print as (a, b).
//   dict       string keys in insertion order (JSON objects keep their order,
//              which tojson reproduces); namespaces are dicts whose attributes
//              can be assigned with {% set ns.x = ... %}.
//   object     macros, builtin functions, bound methods, loop, cycler...
//
// Values are cheap to copy: strings, lists, dicts and objects are shared
// (reference counted) and immutable once built, except namespaces.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tern::jinja {

enum class Kind : uint8_t { kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kDict, kObject };

class Value;
class Evaluator;
struct ListObj;
struct DictObj;
class Object;

// Arguments of a call: positional then keyword, in source order.
struct CallArgs {
  std::vector<Value> pos;
  std::vector<std::pair<std::string, Value>> kw;
};

class Value {
 public:
  Value() = default;  // undefined
  static Value None() { return Value(Kind::kNone); }
  static Value Bool(bool b) {
    Value v(Kind::kBool);
    v.b_ = b;
    return v;
  }
  static Value Int(int64_t i) {
    Value v(Kind::kInt);
    v.i_ = i;
    return v;
  }
  static Value Float(double f) {
    Value v(Kind::kFloat);
    v.f_ = f;
    return v;
  }
  static Value String(std::string s);
  static Value List(std::vector<Value> items, bool is_tuple = false);
  static Value Dict(std::shared_ptr<DictObj> d);
  static Value NewDict();
  static Value Obj(std::shared_ptr<Object> o);
  // An undefined value that remembers why it is undefined, for error
  // messages: `owner` is the object the name was looked up on (undefined
  // when the name was a variable). `name` must outlive the value (AST-owned).
  static Value UndefinedNamed(const std::string* name, Kind owner = Kind::kUndefined) {
    Value v;
    v.undef_name_ = name;
    v.undef_owner_ = owner;
    return v;
  }

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_int() const { return kind_ == Kind::kInt; }
  bool is_float() const { return kind_ == Kind::kFloat; }
  bool is_number() const { return kind_ == Kind::kInt || kind_ == Kind::kFloat || kind_ == Kind::kBool; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_list() const { return kind_ == Kind::kList; }
  bool is_dict() const { return kind_ == Kind::kDict; }
  bool is_object() const { return kind_ == Kind::kObject; }

  bool as_bool() const { return b_; }
  int64_t as_int() const { return kind_ == Kind::kBool ? (b_ ? 1 : 0) : i_; }
  // Numeric value of a bool, int or float.
  double as_double() const {
    return kind_ == Kind::kFloat ? f_ : static_cast<double>(as_int());
  }
  const std::string& str() const { return *static_cast<const std::string*>(ptr_.get()); }
  // The string, writable, when this value is its only owner (a temporary
  // result such as a + b): lets `a + b + c` append in place. Null otherwise.
  std::string* unique_str() {
    return kind_ == Kind::kString && ptr_.use_count() == 1 ? static_cast<std::string*>(ptr_.get()) : nullptr;
  }
  ListObj& list() const { return *static_cast<ListObj*>(ptr_.get()); }
  DictObj& dict() const { return *static_cast<DictObj*>(ptr_.get()); }
  Object& obj() const { return *static_cast<Object*>(ptr_.get()); }
  bool is_tuple() const;
  bool is_namespace() const;
  std::shared_ptr<ListObj> list_ptr() const { return std::static_pointer_cast<ListObj>(ptr_); }
  std::shared_ptr<DictObj> dict_ptr() const { return std::static_pointer_cast<DictObj>(ptr_); }
  // Identity of a shared value (for the `sameas` test).
  const void* identity() const { return ptr_.get(); }

  const std::string* undefined_name() const { return kind_ == Kind::kUndefined ? undef_name_ : nullptr; }
  Kind undefined_owner() const { return undef_owner_; }

  // Python truthiness.
  bool Truthy() const;

 private:
  explicit Value(Kind k) : kind_(k) {}
  Kind kind_ = Kind::kUndefined;
  Kind undef_owner_ = Kind::kUndefined;
  union {
    bool b_;
    int64_t i_;
    double f_;
    const std::string* undef_name_ = nullptr;
  };
  std::shared_ptr<void> ptr_;
};

// Deepest nesting of lists and dicts a value may have. Deeper values (a
// hostile JSON request, or `{% set ns.x = [ns.x] %}` in a loop) are refused
// when built, so printing, comparing and freeing them never recurses deeply.
inline constexpr uint32_t kMaxValueDepth = 512;

// Nesting depth of a value: 1 + deepest child for lists and dicts, else 0.
uint32_t DepthOf(const Value& v);
// Throws TemplateError (kLimit) when depth > kMaxValueDepth.
void CheckDepth(uint32_t depth);

struct ListObj {
  std::vector<Value> items;
  bool is_tuple = false;
  uint32_t depth = 1;
};

struct DictObj {
  std::vector<std::pair<std::string, Value>> entries;
  bool is_namespace = false;
  uint32_t depth = 1;

  // Appends without looking for the key (the caller knows it is new).
  void Add(std::string key, Value v) {
    Grow(v);
    entries.emplace_back(std::move(key), std::move(v));
  }
  void Grow(const Value& v) {
    const uint32_t d = DepthOf(v) + 1;
    if (d > depth) {
      CheckDepth(d);
      depth = d;
    }
  }

  const Value* Find(std::string_view key) const {
    for (const auto& [k, v] : entries) {
      if (k == key) return &v;
    }
    return nullptr;
  }
  // Inserts or replaces, keeping the first insertion position (Python dict).
  void Set(std::string key, Value v) {
    Grow(v);
    for (auto& [k, old] : entries) {
      if (k == key) {
        old = std::move(v);
        return;
      }
    }
    entries.emplace_back(std::move(key), std::move(v));
  }
};

// Everything that is neither data nor undefined: callables and the special
// objects (loop, cycler, joiner). Implementations live with the evaluator.
class Object {
 public:
  virtual ~Object() = default;
  // Python type name used in messages and in str(): "macro", "loop", ...
  virtual std::string_view TypeName() const = 0;
  virtual bool IsCallable() const { return false; }
  // Called only when IsCallable(); errors are thrown as RenderError.
  virtual Value Call(Evaluator& ev, CallArgs& args) const;
  // Attribute lookup; undefined when absent.
  virtual Value GetAttr(std::string_view name) const { return Value(); }
  // obj.name(args) for objects with methods (loop.cycle, cycler.next, ...):
  // returns false when there is no such method.
  virtual bool CallMethod(Evaluator& ev, std::string_view name, CallArgs& args, Value* out) const {
    return false;
  }
  // str() of the object.
  virtual std::string Str() const;
  // Drops the values this object holds (end of a render; breaks cycles).
  virtual void ClearReferences() {}
};

// Python == (1 == 1.0 == True; lists and dicts compare element-wise).
bool Equals(const Value& a, const Value& b, uint32_t depth = 0);
// Python < for sortable pairs: numbers, strings (code point order), lists.
// Returns false and sets *ok = false when the types cannot be ordered.
bool LessThan(const Value& a, const Value& b, bool* ok, uint32_t depth = 0);

// Python str() and repr() of a value; undefined prints as "".
std::string PyStr(const Value& v);
std::string PyRepr(const Value& v);
void AppendPyStr(std::string& out, const Value& v);
// Python float repr: shortest round-trip digits, "1.0", "1e+16", "inf".
std::string FloatRepr(double d);
// Name of the value's Python type in messages: "str", "dict", "NoneType"...
std::string_view TypeName(const Value& v);
// Jinja2's object_type_repr: "'dict object'", "'None'"... for messages.
std::string ObjectTypeRepr(const Value& v);

}  // namespace tern::jinja
