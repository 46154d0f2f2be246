#include "check/url.h"

#include <cctype>
#include <charconv>

namespace tern::check {

std::string BaseUrl::Origin() const {
  const bool v6 = host.find(':') != std::string::npos;
  return fmt::format("{}://{}{}{}:{}", scheme, v6 ? "[" : "", host, v6 ? "]" : "", port);
}

std::string BaseUrl::ToString() const { return Origin() + base_path; }

Result<BaseUrl> ParseBaseUrl(std::string_view url) {
  BaseUrl out;
  std::string_view rest = url;
  while (!rest.empty() && (rest.back() == ' ' || rest.back() == '\n')) rest.remove_suffix(1);
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  if (rest.empty()) return Status::Error("empty URL");
  if (auto p = rest.find("://"); p != std::string_view::npos) {
    out.scheme = std::string(rest.substr(0, p));
    for (char& c : out.scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    rest.remove_prefix(p + 3);
  } else {
    out.scheme = "http";
  }
  if (out.scheme != "http" && out.scheme != "https")
    return Status::Errorf("URL '{}': unsupported scheme '{}' (use http:// or https://)", url, out.scheme);
  if (rest.find_first_of("?#") != std::string_view::npos)
    return Status::Errorf("URL '{}': queries and fragments are not allowed in the server URL", url);
  std::string_view authority = rest.substr(0, rest.find('/'));
  std::string_view path = authority.size() < rest.size() ? rest.substr(authority.size()) : "";
  if (authority.find('@') != std::string_view::npos)
    return Status::Errorf("URL '{}': user info is not supported; pass the key with --api-key", url);
  std::string_view port_text;
  if (!authority.empty() && authority.front() == '[') {
    auto close = authority.find(']');
    if (close == std::string_view::npos) return Status::Errorf("URL '{}': unclosed '[' in the host", url);
    out.host = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return Status::Errorf("URL '{}': junk after the IPv6 host", url);
      port_text = after.substr(1);
    }
  } else {
    auto colon = authority.rfind(':');
    out.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) port_text = authority.substr(colon + 1);
  }
  if (out.host.empty()) return Status::Errorf("URL '{}': no host", url);
  if (port_text.empty()) {
    out.port = out.scheme == "https" ? 443 : 80;
  } else {
    int port = 0;
    auto [ptr, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (ec != std::errc() || ptr != port_text.data() + port_text.size() || port <= 0 || port > 65535)
      return Status::Errorf("URL '{}': bad port '{}'", url, port_text);
    out.port = port;
  }
  std::string base(path);
  while (!base.empty() && base.back() == '/') base.pop_back();
  if (base.size() >= 3 && base.compare(base.size() - 3, 3, "/v1") == 0) {
    base.resize(base.size() - 3);
    out.stripped_v1 = true;
  }
  out.base_path = base;
  return out;
}

}  // namespace tern::check
