// FieldReader: reads typed fields out of a JSON request object the way
// pydantic (lax mode) validates them in SGLang's request models, collecting
// one FieldError per bad field instead of stopping at the first.
//
// Conversions accepted (pydantic v2 lax mode, minus bool->number):
//   bool   true/false, 0/1, 0.0/1.0, "true"/"false"/"yes"/"no"/"on"/"off"/
//          "t"/"f"/"y"/"n"/"1"/"0" (any case)
//   int    integers, floats with no fractional part, decimal strings
//   float  numbers, numeric strings
//   string strings only
// A JSON null reads as "absent" (std::nullopt): SGLang's Optional fields and
// vLLM's nullable ones both accept it, so clients that send nulls work.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/api_error.h"

namespace tern::api {

using Json = nlohmann::ordered_json;  // key order kept (tool schemas reach the template as sent)

// A location path such as ('body', 'messages', 0, 'role').
class Loc {
 public:
  Loc() = default;
  Loc Key(std::string_view key) const;
  Loc Index(size_t i) const;
  // Python tuple repr: "('body', 'messages', 0)"; one element: "('body',)".
  std::string Repr() const;

 private:
  std::vector<std::string> parts_;  // each already in repr form
};

class FieldReader {
 public:
  // `object` must outlive the reader; `errors` collects failures.
  FieldReader(const Json& object, Loc loc, std::vector<FieldError>* errors)
      : obj_(object), loc_(std::move(loc)), errors_(errors) {}

  // The raw member, or nullptr when absent or null.
  const Json* Get(std::string_view key) const;
  bool Has(std::string_view key) const { return Get(key) != nullptr; }

  std::optional<bool> Bool(std::string_view key);
  std::optional<int64_t> Int(std::string_view key);
  std::optional<double> Float(std::string_view key);
  std::optional<std::string> String(std::string_view key);
  // Containers: nullptr when absent/null or of the wrong kind (error recorded).
  const Json* List(std::string_view key);
  const Json* Dict(std::string_view key);

  // Records an error at loc + key.
  void Error(std::string_view key, std::string type, std::string msg);
  void ErrorAt(const Loc& loc, std::string type, std::string msg);
  Loc At(std::string_view key) const { return loc_.Key(key); }
  const Loc& loc() const { return loc_; }
  // The shared error list (for readers of nested objects).
  std::vector<FieldError>* errors() const { return errors_; }

  // Standalone conversions of a value at `loc` (used for list elements).
  static std::optional<bool> ToBool(const Json& v, const Loc& loc, std::vector<FieldError>* errors);
  static std::optional<int64_t> ToInt(const Json& v, const Loc& loc, std::vector<FieldError>* errors);
  static std::optional<double> ToFloat(const Json& v, const Loc& loc, std::vector<FieldError>* errors);
  static std::optional<std::string> ToString(const Json& v, const Loc& loc,
                                             std::vector<FieldError>* errors);

 private:
  const Json& obj_;
  Loc loc_;
  std::vector<FieldError>* errors_;
};

}  // namespace tern::api
