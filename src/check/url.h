// BaseUrl: where the server under test lives ("http://127.0.0.1:30000").
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace tern::check {

struct BaseUrl {
  std::string scheme;        // "http" or "https"
  std::string host;          // "127.0.0.1", "example.com", "::1" (no brackets)
  int port = 0;              // explicit or the scheme's default
  std::string base_path;     // "" or "/prefix" (no trailing slash); endpoints are appended
  bool stripped_v1 = false;  // the user gave the OpenAI base URL ".../v1"; we removed it

  // "http://127.0.0.1:30000" (IPv6 hosts in brackets).
  std::string Origin() const;
  // Origin + base_path, for messages.
  std::string ToString() const;
};

// Parses "http://host[:port][/prefix]". A missing scheme means http. A trailing
// "/v1" is removed (the endpoints /health and /model_info live at the root), and
// noted in stripped_v1. Queries, fragments, user info and other schemes are errors.
Result<BaseUrl> ParseBaseUrl(std::string_view url);

}  // namespace tern::check
