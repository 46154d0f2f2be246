// Limits and environment of one render (see template.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <ctime>
#include <functional>

namespace tern::jinja {

struct RenderOptions {
  // Largest output, and largest string or list built while rendering.
  size_t max_output_bytes = 32u << 20;
  // Budget shared by loop iterations, macro calls and the elements processed
  // by filters and methods (join, map, sort, ...), plus one unit per 4 KiB of
  // strings built. A chat prompt of 50 messages uses a few thousand.
  int64_t max_loop_iterations = 2'000'000;
  // Deepest chain of nested macro calls.
  int max_recursion_depth = 64;
  // Clock for strftime_now(); null means the system clock.
  std::function<std::time_t()> now;
  // strftime_now formats local time (as Python's datetime.now() does); false
  // formats UTC (deterministic tests).
  bool local_time = true;
  // Jinja2's ImmutableSandboxedEnvironment, which transformers uses, rejects
  // list.append/extend/..., dict.update/pop/... as unsafe; true allows them
  // (some templates written for other engines call append).
  bool allow_mutation = false;
};

}  // namespace tern::jinja
