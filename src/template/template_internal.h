// Internal to the template module: rendering from Values directly (RenderChat
// uses it to skip building and copying a JSON context).
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "template/template.h"
#include "template/value.h"

namespace tern::jinja {

// JSON -> Value (objects keep their key order).
// Throws TemplateError (kLimit) for JSON nested deeper than kMaxValueDepth.
Value JsonToValue(const nlohmann::ordered_json& j, uint32_t depth = 0);

// Renders with the variables that `fill` passes to its setter (names the
// template does not use are dropped).
Result<std::string> RenderInternal(
    const Template& tpl, const std::function<void(const std::function<void(std::string_view, Value)>&)>& fill,
    const RenderOptions& options);

}  // namespace tern::jinja
