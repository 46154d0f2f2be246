// CheckOptions: everything `tern check` is told on its command line.
#pragma once

#include <string>

#include "check/numerics_reference.h"

namespace tern::check {

struct CheckOptions {
  std::string url = "http://127.0.0.1:30000";
  std::string api_key;             // "Authorization: Bearer <key>" when set
  std::string model;               // "" = the first id of /v1/models (or the model_path)
  double wait_s = 0;               // poll readiness this long; 0 = one probe
  std::string suite = "smoke";     // "smoke", "full", or check names "a,b,c"
  std::string json_path;           // write the JSON report here when set
  std::string junit_path;          // write the JUnit XML report here when set
  double timeout_s = 120;          // per request (longest wait for the next byte, and whole streams)
  int concurrency = 4;             // parallel requests of the concurrency check
  int long_context_tokens = 2048;  // filler size of the long-context check
  int max_thinking_tokens = 2048;  // max_tokens of the thinking arithmetic check
  bool color = false;              // ANSI colour in the table (the CLI sets it for a terminal)
  NumericsOptions numerics;        // --suite numerics
};

}  // namespace tern::check
