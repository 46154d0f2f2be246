#include "base/json_linear.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace tern {
namespace {

using Json = nlohmann::ordered_json;

using Object = Json::object_t;        // nlohmann::ordered_map: a vector of pairs
using Members = Object::Container;    // the vector itself: appends without the scan

// Objects up to this many keys are checked for duplicates pairwise.
constexpr size_t kPairwiseLimit = 16;

// Restores nlohmann's duplicate-key result on an object built by appending:
// each key once, where it first appeared, with the value it was last given.
void Dedupe(Object& object) {
  Members& o = object;  // ordered_map's operator[] takes keys
  const size_t n = o.size();
  if (n < 2) return;
  bool dup = false;
  if (n <= kPairwiseLimit) {
    for (size_t i = 0; i < n && !dup; ++i)
      for (size_t j = i + 1; j < n && !dup; ++j) dup = o[i].first == o[j].first;
  } else {
    std::unordered_set<std::string_view> seen;
    seen.reserve(n);
    for (const auto& m : o)
      if (!seen.insert(m.first).second) {
        dup = true;
        break;
      }
  }
  if (!dup) return;
  Members out;
  std::unordered_map<std::string_view, size_t> at;  // views into o's keys, which outlive the loop
  for (auto& m : o) {
    auto [it, fresh] = at.emplace(m.first, out.size());
    if (fresh) out.emplace_back(m.first, std::move(m.second));
    else out[it->second].second = std::move(m.second);
  }
  o.swap(out);
}

// nlohmann's SAX interface, building a Json as its DOM parser does but
// appending object members (Dedupe runs when an object closes).
class LinearBuilder {
 public:
  explicit LinearBuilder(Json* root) : root_(root) {}

  bool null() { return Put(Json(nullptr)); }
  bool boolean(bool v) { return Put(Json(v)); }
  bool number_integer(Json::number_integer_t v) { return Put(Json(v)); }
  bool number_unsigned(Json::number_unsigned_t v) { return Put(Json(v)); }
  bool number_float(Json::number_float_t v, const std::string&) { return Put(Json(v)); }
  bool string(std::string& v) { return Put(Json(std::move(v))); }
  bool binary(Json::binary_t& v) { return Put(Json::binary(std::move(v))); }
  bool start_object(size_t) {
    Put(Json::object());
    stack_.push_back(last_);
    return true;
  }
  bool key(std::string& k) {
    key_ = std::move(k);
    return true;
  }
  bool end_object() {
    Dedupe(stack_.back()->get_ref<Object&>());
    stack_.pop_back();
    return true;
  }
  bool start_array(size_t) {
    Put(Json::array());
    stack_.push_back(last_);
    return true;
  }
  bool end_array() {
    stack_.pop_back();
    return true;
  }
  bool parse_error(size_t byte, const std::string&, const nlohmann::detail::exception& e) {
    error_byte = byte;
    error = e.what();
    return false;
  }

  size_t error_byte = 0;
  std::string error;

 private:
  // Stores v where the parse stands; a container stays on the stack, and so
  // at a fixed address, until it closes: its parent grows only after that.
  bool Put(Json v) {
    if (stack_.empty()) {
      *root_ = std::move(v);
      last_ = root_;
    } else if (Json& top = *stack_.back(); top.is_array()) {
      auto& a = top.get_ref<Json::array_t&>();
      a.push_back(std::move(v));
      last_ = &a.back();
    } else {
      auto& members = static_cast<Members&>(top.get_ref<Object&>());
      members.emplace_back(std::move(key_), std::move(v));
      last_ = &members.back().second;
    }
    return true;
  }

  Json* root_;
  Json* last_ = nullptr;
  std::vector<Json*> stack_;
  std::string key_;
};

}  // namespace

bool ParseJsonLinear(std::string_view text, Json* out, size_t* error_byte, std::string* error) {
  LinearBuilder b(out);
  const bool ok = Json::sax_parse(text.begin(), text.end(), &b);
  if (!ok) {
    *out = Json();
    if (error_byte) *error_byte = b.error_byte;
    if (error) *error = b.error;
  }
  return ok;
}

void AppendNewKey(Json& object, std::string key, Json value) {
  if (object.is_null()) object = Json::object();
  static_cast<Members&>(object.get_ref<Object&>()).emplace_back(std::move(key), std::move(value));
}

void MergeObject(Json& dst, const Json& src) {
  if (dst.is_null()) dst = Json::object();
  Members& d = dst.get_ref<Object&>();
  std::unordered_map<std::string, size_t> at;
  at.reserve(d.size() + src.size());
  for (size_t i = 0; i < d.size(); ++i) at.emplace(d[i].first, i);
  for (const auto& [k, v] : src.items()) {
    auto [it, fresh] = at.emplace(k, d.size());
    if (fresh) d.emplace_back(k, v);
    else d[it->second].second = v;
  }
}

int JsonNestingDepth(std::string_view text) {
  int depth = 0, max_depth = 0;
  bool in_string = false, escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '[' || c == '{') max_depth = std::max(max_depth, ++depth);
    else if ((c == ']' || c == '}') && depth > 0) --depth;
  }
  return max_depth;
}

}  // namespace tern
