#include "template/template.h"

#include <new>
#include <unordered_map>

#include <fmt/format.h>

#include "template/builtins.h"
#include "template/error.h"
#include "template/evaluator.h"
#include "template/parser.h"
#include "template/template_internal.h"

namespace tern::jinja {

struct Template::Impl {
  ParsedTemplate parsed;
  std::unordered_map<std::string, int> sym_index;
  // One value per symbol: the builtin global of that name, or undefined.
  std::vector<Value> builtin_globals;
};

Value JsonToValue(const nlohmann::ordered_json& j, uint32_t depth) {
  // Checked before recursing: a deeply nested request must not overflow the stack.
  if (j.is_structured()) CheckDepth(depth + 1);
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null:
      return Value::None();
    case nlohmann::ordered_json::value_t::boolean:
      return Value::Bool(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
      return Value::Int(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      const uint64_t u = j.get<uint64_t>();
      if (u <= static_cast<uint64_t>(INT64_MAX)) return Value::Int(static_cast<int64_t>(u));
      return Value::Float(static_cast<double>(u));
    }
    case nlohmann::ordered_json::value_t::number_float:
      return Value::Float(j.get<double>());
    case nlohmann::ordered_json::value_t::string:
      return Value::String(j.get_ref<const std::string&>());
    case nlohmann::ordered_json::value_t::array: {
      std::vector<Value> items;
      items.reserve(j.size());
      for (const auto& e : j) items.push_back(JsonToValue(e, depth + 1));
      return Value::List(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      auto d = std::make_shared<DictObj>();
      d->entries.reserve(j.size());
      for (const auto& [k, v] : j.items()) d->Add(k, JsonToValue(v, depth + 1));
      return Value::Dict(std::move(d));
    }
    default:
      return Value();
  }
}

namespace {

std::string Where(const TemplateError& e) {
  if (e.line <= 0) return "";
  return fmt::format(" at line {}, column {}", e.line, e.col);
}

}  // namespace

Result<Template> Template::Parse(std::string_view source) {
  auto impl = std::make_shared<Impl>();
  try {
    impl->parsed = ParseTemplate(source);
  } catch (const TemplateError& e) {
    return Status::Error(fmt::format("template syntax error{}: {}", Where(e), e.message));
  } catch (const std::bad_alloc&) {
    return Status::Error("template syntax error: out of memory");
  }
  const auto& syms = impl->parsed.symbols;
  impl->builtin_globals.resize(syms.size());
  for (size_t i = 0; i < syms.size(); ++i) {
    impl->sym_index.emplace(syms[i], static_cast<int>(i));
    impl->builtin_globals[i] = FindGlobal(syms[i]);
  }
  return Template(std::move(impl));
}

Result<std::string> Template::Render(const nlohmann::ordered_json& context, const RenderOptions& options) const {
  if (!context.is_object() && !context.is_null()) {
    return Status::Error("template context must be a JSON object");
  }
  std::vector<std::pair<std::string_view, const nlohmann::ordered_json*>> vars;
  if (context.is_object()) {
    for (const auto& [k, v] : context.items()) vars.emplace_back(k, &v);
  }
  return RenderInternal(*this, [&](const std::function<void(std::string_view, Value)>& set) {
    for (const auto& [k, v] : vars) set(k, JsonToValue(*v));
  }, options);
}

Result<std::string> RenderInternal(const Template& tpl, const std::function<void(const std::function<void(std::string_view, Value)>&)>& fill,
                                   const RenderOptions& options) {
  const Template::Impl& impl = tpl.impl();
  try {
    std::vector<Value> globals = impl.builtin_globals;
    fill([&](std::string_view name, Value v) {
      auto it = impl.sym_index.find(std::string(name));
      if (it != impl.sym_index.end()) globals[static_cast<size_t>(it->second)] = std::move(v);
    });
    Evaluator ev(impl.parsed, options, std::move(globals));
    return ev.Run();
  } catch (const TemplateError& e) {
    if (e.type == TemplateError::Type::kRaised) return Status::Error(e.message);
    return Status::Error(fmt::format("template error{}: {}", Where(e), e.message));
  } catch (const std::bad_alloc&) {
    return Status::Error("template error: out of memory");
  } catch (const std::length_error&) {
    return Status::Error("template error: value too large");
  }
}

}  // namespace tern::jinja
