// The linear-time JSON helpers (base/json_linear.h) under api's names.
#pragma once

#include "api/field_reader.h"
#include "base/json_linear.h"

namespace tern::api {
using tern::AppendNewKey;
using tern::JsonNestingDepth;
using tern::MergeObject;
using tern::ParseJsonLinear;
}  // namespace tern::api
