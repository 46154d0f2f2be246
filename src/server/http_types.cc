#include "server/http_types.h"

#include <algorithm>

namespace tern::server {

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c; };
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [&](char x, char y) { return lower(x) == lower(y); });
}

void HttpHeaders::Add(std::string name, std::string value) { entries_.emplace_back(std::move(name), std::move(value)); }

void HttpHeaders::Set(std::string_view name, std::string value) {
  Remove(name);
  entries_.emplace_back(std::string(name), std::move(value));
}

void HttpHeaders::Remove(std::string_view name) {
  std::erase_if(entries_, [&](const auto& e) { return EqualsIgnoreCase(e.first, name); });
}

size_t HttpHeaders::Count(std::string_view name) const {
  return size_t(
      std::count_if(entries_.begin(), entries_.end(), [&](const auto& e) { return EqualsIgnoreCase(e.first, name); }));
}

std::string HttpHeaders::Get(std::string_view name) const {
  for (const auto& [k, v] : entries_)
    if (EqualsIgnoreCase(k, name)) return v;
  return "";
}

std::optional<std::string> HttpRequest::QueryParam(std::string_view name) const {
  for (const auto& [k, v] : query)
    if (k == name) return v;
  return std::nullopt;
}

}  // namespace tern::server
