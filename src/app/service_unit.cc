#include "app/service_unit.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <optional>
#include <string_view>

#include <fmt/format.h>

namespace tern::app {
namespace {

bool IsSafeWordChar(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
         std::string_view("/._+@:,=-%").find(c) != std::string_view::npos;
}

// The path is under a directory ProtectHome=yes would hide.
bool Under(const std::string& path, std::initializer_list<std::string_view> roots) {
  for (std::string_view root : roots)
    if (path == root || (path.size() > root.size() && path.compare(0, root.size(), root) == 0 && path[root.size()] == '/'))
      return true;
  return false;
}
bool UnderHome(const std::string& path) { return Under(path, {"/home", "/root", "/run/user"}); }

}  // namespace

Status ValidateServiceName(const std::string& name) {
  if (name.empty() || name.size() > 64) return Status::Errorf("--name \"{}\": give 1 to 64 characters", name);
  for (char c : name)
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.'))
      return Status::Errorf("--name \"{}\": only letters, digits, '_', '-' and '.' may be used", name);
  if (name[0] == '-' || name[0] == '.') return Status::Errorf("--name \"{}\": must not start with '-' or '.'", name);
  return Status::Ok();
}

bool UnderTmp(const std::string& path) { return Under(path, {"/tmp", "/var/tmp"}); }

std::string UnitName(const std::string& name) { return "tern-" + name + ".service"; }

Status CheckUnitSafePath(const std::string& what, const std::string& path) {
  if (path.empty() || path[0] != '/') return Status::Errorf("{} \"{}\" is not an absolute path", what, path);
  for (char c : path)
    if (!IsSafeWordChar(c) || c == '%')
      return Status::Errorf("{} \"{}\": a path in a systemd unit may hold only letters, digits and /._+@:,=- "
                            "(move it, or link it from such a path)", what, path);
  return Status::Ok();
}

std::string QuoteWordForSystemd(const std::string& word) {
  if (!word.empty() && std::all_of(word.begin(), word.end(), IsSafeWordChar)) return word;
  std::string out = "\"";
  for (char c : word) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::vector<std::string> SplitWordsLikeSystemd(const std::string& value) {
  // extract_first_word(EXTRACT_UNQUOTE|EXTRACT_RELAX) without CUNESCAPE: a
  // backslash takes the next character literally, inside quotes or not; an
  // unterminated quote or trailing backslash ends the word (RELAX).
  std::vector<std::string> words;
  const std::string_view ws = " \t\n\r";
  size_t i = 0;
  while (i < value.size()) {
    while (i < value.size() && ws.find(value[i]) != std::string_view::npos) ++i;
    if (i >= value.size()) break;
    std::string w;
    char quote = 0;
    for (; i < value.size(); ++i) {
      const char c = value[i];
      if (c == '\\') {
        if (i + 1 < value.size()) w += value[++i];
      } else if (quote) {
        if (c == quote) quote = 0;
        else w += c;
      } else if (c == '"' || c == '\'') {
        quote = c;
      } else if (ws.find(c) != std::string_view::npos) {
        break;
      } else {
        w += c;
      }
    }
    words.push_back(std::move(w));
  }
  return words;
}

// Each served connection holds one socket; as many again may be open while
// being accepted and answered 503 above the limit, or closing. 256 more for
// the listener, the notify socket, stdio and the model's files while they are
// mapped (each is closed once mapped). Never below systemd's default of 1024.
int64_t NoFileLimit(int64_t max_connections) { return std::max<int64_t>(1024, 2 * max_connections + 256); }

// One worker thread per connection, plus the compute pool (one per core; 1024
// covers the largest machines), the engine loop and the listener.
int64_t TasksLimit(int64_t max_connections) { return max_connections + 1024; }

std::string RenderEnvFile(const ServiceSpec& s) {
  // A "..." value: newlines kept (whitespace to the $VAR splitting), and \ " $ `
  // escaped as the shell and systemd's env-file parser both read them.
  std::string value;
  for (size_t i = 0; i < s.serve_args.size(); ++i) {
    const std::string& a = s.serve_args[i];
    const bool flag = a.size() > 2 && a.compare(0, 2, "--") == 0;
    value += (i == 0 ? "\n  " : flag ? "\n  " : " ") + QuoteWordForSystemd(a);
  }
  std::string escaped;
  for (char c : value) {
    if (c == '\\' || c == '"' || c == '$' || c == '`') escaped += '\\';
    escaped += c;
  }
  return fmt::format(
      "# Flags for `tern serve` of {unit} (tern service install --name {name}).\n"
      "# The value reads as a double-quoted shell string, then systemd splits it at whitespace:\n"
      "# write a value holding spaces as \\\"a b\\\".\n"
      "# After an edit: systemctl restart {unit}. --shutdown-grace and --max-connections\n"
      "# also size the unit's TimeoutStopSec and LimitNOFILE: install again when they change.\n"
      "TERN_SERVE_ARGS=\"{value}\n\"\n",
      fmt::arg("unit", UnitName(s.name)), fmt::arg("name", s.name), fmt::arg("value", escaped));
}

std::string RenderUnit(const ServiceSpec& s) {
  const bool low_port = s.port > 0 && s.port < 1024;
  const bool home = UnderHome(s.model_dir) || UnderHome(s.tern_binary);
  // (Only with User=: DynamicUser=yes forces a private /tmp, and install refuses such paths.)
  const bool tmp = !s.user.empty() && (UnderTmp(s.model_dir) || UnderTmp(s.tern_binary));
  std::string restart_backoff;
  if (s.systemd_version >= 254)  // exponential backoff from RestartSec to RestartMaxDelaySec
    restart_backoff = "RestartSteps=6\nRestartMaxDelaySec=300\n";
  const std::string user =
      s.user.empty() ? "# A transient uid for each run: nothing to create or remove; the model must be world-readable.\n"
                       "DynamicUser=yes\n"
                     : fmt::format("User={}\n", s.user);
  return fmt::format(
      "# Written by `tern service install --name {name}`. The serve flags are in {env}.\n"
      "[Unit]\n"
      "Description=tern LLM server ({name})\n"
      "After=network-online.target\n"
      "Wants=network-online.target\n"
      "# A server that keeps failing stops being restarted after 5 starts in 10 minutes.\n"
      "StartLimitIntervalSec=600\n"
      "StartLimitBurst=5\n"
      "\n"
      "[Service]\n"
      "# READY=1 comes from tern serve itself once its warm-up generation succeeded.\n"
      "Type=notify\n"
      "NotifyAccess=main\n"
      "EnvironmentFile={env}\n"
      "ExecStart={bin} serve $TERN_SERVE_ARGS\n"
      "Restart=on-failure\n"
      "RestartSec=10\n"
      "{backoff}"
      "# Exit 2 is a command-line error: restarting will not fix it.\n"
      "RestartPreventExitStatus=2\n"
      "# Loading and warming up a large checkpoint takes minutes.\n"
      "TimeoutStartSec={start}\n"
      "# SIGTERM drains running requests for --shutdown-grace ({grace:g} s), then exits 0.\n"
      "TimeoutStopSec={stop}\n"
      "KillSignal=SIGTERM\n"
      "# --max-connections {conns}: one socket and one thread per connection.\n"
      "LimitNOFILE={nofile}\n"
      "TasksMax={tasks}\n"
      "{user}"
      "NoNewPrivileges=yes\n"
      "ProtectSystem=strict\n"
      "ReadOnlyPaths={model}\n"
      "ProtectHome={protect_home}\n"
      "{private_tmp}"
      "PrivateDevices=yes\n"
      "ProtectKernelTunables=yes\n"
      "ProtectKernelModules=yes\n"
      "ProtectKernelLogs=yes\n"
      "ProtectControlGroups=yes\n"
      "ProtectClock=yes\n"
      "ProtectHostname=yes\n"
      "ProtectProc=invisible\n"
      "RestrictNamespaces=yes\n"
      "RestrictRealtime=yes\n"
      "RestrictSUIDSGID=yes\n"
      "LockPersonality=yes\n"
      "MemoryDenyWriteExecute=yes\n"
      "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6\n"
      "SystemCallArchitectures=native\n"
      "SystemCallFilter=@system-service\n"
      "SystemCallErrorNumber=EPERM\n"
      "CapabilityBoundingSet={caps}\n"
      "{ambient}"
      "UMask=0077\n"
      "\n"
      "[Install]\n"
      "WantedBy=multi-user.target\n",
      fmt::arg("name", s.name), fmt::arg("env", s.env_file), fmt::arg("bin", s.tern_binary),
      fmt::arg("backoff", restart_backoff), fmt::arg("start", int64_t(std::ceil(s.start_timeout_s))),
      fmt::arg("grace", s.shutdown_grace_s), fmt::arg("stop", int64_t(std::ceil(s.shutdown_grace_s)) + 30),
      fmt::arg("conns", s.max_connections), fmt::arg("nofile", NoFileLimit(s.max_connections)),
      fmt::arg("tasks", TasksLimit(s.max_connections)), fmt::arg("user", user), fmt::arg("model", s.model_dir),
      fmt::arg("protect_home", home ? "read-only" : "yes"),
      fmt::arg("private_tmp", tmp ? "# The model or the binary is under /tmp: the service sees the real one.\nPrivateTmp=no\n"
                                  : "PrivateTmp=yes\n"), fmt::arg("caps", low_port ? "CAP_NET_BIND_SERVICE" : ""),
      fmt::arg("ambient", low_port ? "AmbientCapabilities=CAP_NET_BIND_SERVICE\n" : ""));
}

Result<std::vector<std::string>> ReadServeArgs(const std::string& text) {
  // systemd's env-file grammar, the part a hand edit would use: KEY=VALUE
  // lines, # or ; comments, "..." (\ escapes \ " $ ` and a newline; other
  // backslashes stay), '...' (literal), bare text (\ escapes the next byte;
  // trailing whitespace dropped). The last assignment wins.
  std::optional<std::string> args;
  size_t i = 0, line = 1;
  const size_t n = text.size();
  auto at_eol = [&] { return i >= n || text[i] == '\n'; };
  while (i < n) {
    while (i < n && (text[i] == ' ' || text[i] == '\t' || text[i] == '\r')) ++i;
    if (i < n && (text[i] == '#' || text[i] == ';' || text[i] == '\n')) {
      while (!at_eol()) ++i;
      ++i, ++line;
      continue;
    }
    if (i >= n) break;
    const size_t key_start = i;
    while (i < n && text[i] != '=' && text[i] != '\n') ++i;
    if (i >= n || text[i] != '=') return Status::Errorf("line {}: expected KEY=VALUE", line);
    std::string key = text.substr(key_start, i - key_start);
    while (!key.empty() && (key.back() == ' ' || key.back() == '\t')) key.pop_back();
    ++i;
    while (i < n && (text[i] == ' ' || text[i] == '\t')) ++i;
    std::string value;
    size_t keep = 0;  // value length up to the last non-whitespace bare character
    while (!at_eol()) {
      const char c = text[i];
      if (c == '"' || c == '\'') {
        const size_t open_line = line;
        for (++i; i < n && text[i] != c; ++i) {
          if (text[i] == '\n') ++line;
          if (c == '"' && text[i] == '\\' && i + 1 < n) {
            const char e = text[++i];
            if (e == '\n') { ++line; continue; }
            if (std::string_view("\\\"$`").find(e) == std::string_view::npos) value += '\\';
            value += e;
          } else {
            value += text[i];
          }
        }
        if (i >= n) return Status::Errorf("line {}: unterminated {} quote", open_line, c);
        ++i;
        keep = value.size();
      } else if (c == '\\' && i + 1 < n) {
        if (text[i + 1] != '\n') value += text[i + 1];
        else ++line;
        i += 2;
        keep = value.size();
      } else {
        value += c;
        ++i;
        if (c != ' ' && c != '\t' && c != '\r') keep = value.size();
      }
    }
    value.resize(keep);
    if (key == "TERN_SERVE_ARGS") args = value;
    ++i, ++line;
  }
  if (!args) return Status::Error("no TERN_SERVE_ARGS= line");
  return SplitWordsLikeSystemd(*args);
}

}  // namespace tern::app
