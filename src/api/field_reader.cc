#include "api/field_reader.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>

#include <fmt/format.h>

#include "api/py_text.h"

namespace tern::api {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// A request of 16 million bad list elements would otherwise hold ~5 GB of
// errors and answer a message of as many bytes again; pydantic lists them all.
constexpr size_t kMaxFieldErrors = 100;

void Add(std::vector<FieldError>* errors, const Loc& loc, std::string type, std::string msg) {
  if (errors->size() > kMaxFieldErrors) return;
  if (errors->size() == kMaxFieldErrors) {
    errors->push_back(FieldError{"too_many_errors", "()",
                                 fmt::format("more errors follow; the first {} are listed", kMaxFieldErrors)});
    return;
  }
  errors->push_back(FieldError{std::move(type), loc.Repr(), std::move(msg)});
}

}  // namespace

Loc Loc::Key(std::string_view key) const {
  Loc l = *this;
  l.parts_.push_back(PyStrRepr(key));
  return l;
}

Loc Loc::Index(size_t i) const {
  Loc l = *this;
  l.parts_.push_back(std::to_string(i));
  return l;
}

std::string Loc::Repr() const {
  std::string out = "(";
  for (size_t i = 0; i < parts_.size(); ++i) {
    if (i) out += ", ";
    out += parts_[i];
  }
  if (parts_.size() == 1) out += ",";
  return out + ")";
}

const Json* FieldReader::Get(std::string_view key) const {
  if (!obj_.is_object()) return nullptr;
  const auto it = obj_.find(key);
  if (it == obj_.end() || it->is_null()) return nullptr;
  return &*it;
}

void FieldReader::Error(std::string_view key, std::string type, std::string msg) {
  Add(errors_, loc_.Key(key), std::move(type), std::move(msg));
}

void FieldReader::ErrorAt(const Loc& loc, std::string type, std::string msg) {
  Add(errors_, loc, std::move(type), std::move(msg));
}

std::optional<bool> FieldReader::ToBool(const Json& v, const Loc& loc,
                                        std::vector<FieldError>* errors) {
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_number()) {
    const double d = v.get<double>();
    if (d == 0) return false;
    if (d == 1) return true;
    Add(errors, loc, "bool_parsing", "Input should be a valid boolean, unable to interpret input");
    return std::nullopt;
  }
  if (v.is_string()) {
    const std::string s = Lower(v.get_ref<const std::string&>());
    if (s == "1" || s == "on" || s == "t" || s == "true" || s == "y" || s == "yes") return true;
    if (s == "0" || s == "off" || s == "f" || s == "false" || s == "n" || s == "no") return false;
    Add(errors, loc, "bool_parsing", "Input should be a valid boolean, unable to interpret input");
    return std::nullopt;
  }
  Add(errors, loc, "bool_type", "Input should be a valid boolean");
  return std::nullopt;
}

std::optional<int64_t> FieldReader::ToInt(const Json& v, const Loc& loc,
                                          std::vector<FieldError>* errors) {
  if (v.is_number_integer()) {
    if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t{INT64_MAX}) {
      Add(errors, loc, "int_parsing_size", "Unable to parse input string as an integer, exceeded maximum size");
      return std::nullopt;
    }
    return v.get<int64_t>();
  }
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (!std::isfinite(d)) {
      Add(errors, loc, "finite_number", "Input should be a finite number");
      return std::nullopt;
    }
    if (d != std::floor(d)) {
      Add(errors, loc, "int_from_float", "Input should be a valid integer, got a number with a fractional part");
      return std::nullopt;
    }
    if (std::fabs(d) > 9.2e18) {
      Add(errors, loc, "int_parsing_size", "Unable to parse input string as an integer, exceeded maximum size");
      return std::nullopt;
    }
    return static_cast<int64_t>(d);
  }
  if (v.is_string()) {
    const std::string s(Trim(v.get_ref<const std::string&>()));
    char* end = nullptr;
    errno = 0;
    const long long x = s.empty() ? 0 : std::strtoll(s.c_str(), &end, 10);
    if (!s.empty() && end == s.c_str() + s.size() && errno == 0) return x;
    Add(errors, loc, "int_parsing", "Input should be a valid integer, unable to parse string as an integer");
    return std::nullopt;
  }
  Add(errors, loc, "int_type", "Input should be a valid integer");
  return std::nullopt;
}

std::optional<double> FieldReader::ToFloat(const Json& v, const Loc& loc,
                                           std::vector<FieldError>* errors) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    const std::string s(Trim(v.get_ref<const std::string&>()));
    char* end = nullptr;
    const double x = s.empty() ? 0 : std::strtod(s.c_str(), &end);
    if (!s.empty() && end == s.c_str() + s.size()) return x;
    Add(errors, loc, "float_parsing", "Input should be a valid number, unable to parse string as a number");
    return std::nullopt;
  }
  Add(errors, loc, "float_type", "Input should be a valid number");
  return std::nullopt;
}

std::optional<std::string> FieldReader::ToString(const Json& v, const Loc& loc,
                                                 std::vector<FieldError>* errors) {
  if (v.is_string()) return v.get<std::string>();
  Add(errors, loc, "string_type", "Input should be a valid string");
  return std::nullopt;
}

std::optional<bool> FieldReader::Bool(std::string_view key) {
  const Json* v = Get(key);
  return v ? ToBool(*v, loc_.Key(key), errors_) : std::nullopt;
}

std::optional<int64_t> FieldReader::Int(std::string_view key) {
  const Json* v = Get(key);
  return v ? ToInt(*v, loc_.Key(key), errors_) : std::nullopt;
}

std::optional<double> FieldReader::Float(std::string_view key) {
  const Json* v = Get(key);
  return v ? ToFloat(*v, loc_.Key(key), errors_) : std::nullopt;
}

std::optional<std::string> FieldReader::String(std::string_view key) {
  const Json* v = Get(key);
  return v ? ToString(*v, loc_.Key(key), errors_) : std::nullopt;
}

const Json* FieldReader::List(std::string_view key) {
  const Json* v = Get(key);
  if (!v) return nullptr;
  if (!v->is_array()) {
    Error(key, "list_type", "Input should be a valid list");
    return nullptr;
  }
  return v;
}

const Json* FieldReader::Dict(std::string_view key) {
  const Json* v = Get(key);
  if (!v) return nullptr;
  if (!v->is_object()) {
    Error(key, "dict_type", "Input should be a valid dictionary");
    return nullptr;
  }
  return v;
}

}  // namespace tern::api
