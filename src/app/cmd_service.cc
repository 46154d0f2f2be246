// `tern service install|status|uninstall`: run `tern serve` as a systemd
// service (the unit and environment file are in app/service_unit.h).
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "app/commands.h"
#include "app/service_unit.h"
#include "check/http_client.h"
#include "check/url.h"

namespace tern::app {
namespace {

namespace fs = std::filesystem;

constexpr const char* kDefaultUnitDir = "/etc/systemd/system";
constexpr const char* kDefaultEnvDir = "/etc/tern";

// systemd is the running service manager (sd_booted(3)'s test).
bool SystemdRunning() { return ::access("/run/systemd/system", F_OK) == 0; }

struct CommandOutput {
  int exit_code = -1;  // -1: could not be run
  std::string output;  // stdout and stderr together
};

// Runs argv (no shell) and collects what it prints.
CommandOutput RunCapture(const std::vector<std::string>& argv) {
  int pipefd[2];
  if (::pipe(pipefd) != 0) return {.exit_code = -1, .output = std::strerror(errno)};
  const pid_t pid = ::fork();
  if (pid < 0) return {.exit_code = -1, .output = std::strerror(errno)};
  if (pid == 0) {
    ::dup2(pipefd[1], 1);
    ::dup2(pipefd[1], 2);
    ::close(pipefd[0]);
    ::close(pipefd[1]);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  ::close(pipefd[1]);
  CommandOutput out;
  char buf[4096];
  for (ssize_t n; (n = ::read(pipefd[0], buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    out.output.append(buf, size_t(n));
  }
  ::close(pipefd[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  out.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

// "systemd 252 (252.38-1~deb12u1)" -> 252; 0 when systemctl is missing.
int SystemdVersion() {
  const CommandOutput v = RunCapture({"systemctl", "--version"});
  int version = 0;
  if (v.exit_code == 0 && std::sscanf(v.output.c_str(), "systemd %d", &version) == 1) return version;
  return 0;
}

// Whether "others" (a DynamicUser= uid) can reach and read `path`: every
// directory above it searchable, the path itself readable (and searchable,
// for a directory). Returns the first component that is not, or "".
std::string NotWorldReadable(const fs::path& path) {
  fs::path walk = "/";
  for (const auto& part : path.relative_path()) {
    struct stat st {};
    if (::stat(walk.c_str(), &st) != 0 || !(st.st_mode & S_IXOTH)) return walk.string();
    walk /= part;
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !(st.st_mode & S_IROTH)) return path.string();
  if (S_ISDIR(st.st_mode) && !(st.st_mode & S_IXOTH)) return path.string();
  return "";
}

Status WriteFile(const fs::path& path, const std::string& text, mode_t mode) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  if (ec) return Status::Errorf("creating {}: {}", path.parent_path().string(), ec.message());
  const fs::path tmp = path.string() + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) return Status::Errorf("writing {}: {}", tmp.string(), std::strerror(errno));
    f << text;
    if (!f.flush()) return Status::Errorf("writing {}: {}", tmp.string(), std::strerror(errno));
  }
  if (::chmod(tmp.c_str(), mode) != 0) return Status::Errorf("chmod {}: {}", tmp.string(), std::strerror(errno));
  fs::rename(tmp, path, ec);
  if (ec) return Status::Errorf("renaming {} to {}: {}", tmp.string(), path.string(), ec.message());
  return Status::Ok();
}

Result<std::string> ReadWholeFile(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return Status::Errorf("cannot read {}: {}", path.string(), std::strerror(errno));
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Parses serve flags with `tern serve`'s own option table: unknown flags and
// bad values are errors here, at install time, not at the first start.
struct ParsedServe {
  std::unique_ptr<CLI::App> app;
  // What RegisterServe returned: it owns the option values the app's options
  // write into (freeing it before parsing made parse write to freed memory).
  Command run;
  std::string Str(const char* name) const { return app->get_option(name)->as<std::string>(); }
  bool Given(const char* name) const { return app->count(name) > 0; }
};
Result<ParsedServe> ParseServeFlags(const std::vector<std::string>& args) {
  ParsedServe p{.app = std::make_unique<CLI::App>("tern serve")};
  p.run = RegisterServe(*p.app);
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 consumes from the back
  try {
    p.app->parse(reversed);
  } catch (const CLI::ParseError& e) {
    return Status::Errorf("serve flags: {}", e.what());
  }
  return p;
}

// Makes the values of path flags absolute (a unit runs in /), in place.
void AbsolutizePathFlags(std::vector<std::string>& args) {
  auto absolute = [](const std::string& v, bool must_exist) {
    std::error_code ec;
    if (v.empty() || (must_exist && !fs::exists(v, ec))) return v;
    return fs::absolute(v, ec).lexically_normal().string();
  };
  for (size_t i = 0; i < args.size(); ++i) {
    for (const char* flag : {"--model", "--model-path", "--config", "--chat-template"}) {
      // --chat-template may be the template text itself: only an existing file is rewritten.
      const bool must_exist = std::string_view(flag) == "--chat-template";
      const std::string eq = std::string(flag) + "=";
      if (args[i] == flag && i + 1 < args.size()) {
        args[i + 1] = absolute(args[i + 1], must_exist);
      } else if (args[i].rfind(eq, 0) == 0) {
        args[i] = eq + absolute(args[i].substr(eq.size()), must_exist);
      }
    }
  }
}

struct InstallOptions {
  std::string name, unit_dir = kDefaultUnitDir, env_file, tern_binary, user;
  double start_timeout_s = 1800;
  bool dry_run = false, now = false;
};

int Install(const InstallOptions& o, std::vector<std::string> serve_args) {
  if (Status s = ValidateServiceName(o.name); !s.ok()) return Fail("service install: " + s.message());
  AbsolutizePathFlags(serve_args);
  auto parsed = ParseServeFlags(serve_args);
  if (!parsed.ok()) return Fail("service install: " + parsed.status().message());
  if (!parsed->Given("--model")) {  // make the default explicit, so the env file shows what is served
    serve_args.insert(serve_args.begin(), {"--model", BundledModelDir()});
    parsed = ParseServeFlags(serve_args);
    if (!parsed.ok()) return Fail("service install: " + parsed.status().message());
  }
  ServiceSpec spec{.name = o.name, .serve_args = serve_args, .user = o.user, .start_timeout_s = o.start_timeout_s};
  std::error_code ec;
  spec.tern_binary = o.tern_binary.empty() ? fs::read_symlink("/proc/self/exe", ec).string()
                                           : fs::absolute(o.tern_binary, ec).lexically_normal().string();
  spec.env_file = o.env_file.empty() ? fmt::format("{}/{}.env", kDefaultEnvDir, o.name)
                                     : fs::absolute(o.env_file, ec).lexically_normal().string();
  spec.model_dir = fs::absolute(parsed->Str("--model"), ec).lexically_normal().string();
  while (spec.model_dir.size() > 1 && spec.model_dir.back() == '/') spec.model_dir.pop_back();
  try {
    spec.port = parsed->app->get_option("--port")->as<int>();
    spec.max_connections = parsed->app->get_option("--max-connections")->as<int64_t>();
    spec.shutdown_grace_s = parsed->app->get_option("--shutdown-grace")->as<double>();
  } catch (const CLI::Error& e) {
    return Fail(fmt::format("service install: serve flags: {}", e.what()));
  }
  if (!(spec.shutdown_grace_s >= 0) || spec.max_connections <= 0 || !(o.start_timeout_s > 0))
    return Fail("service install: --shutdown-grace, --max-connections and --start-timeout must be positive");
  for (auto [what, path] : {std::pair{"the tern binary", spec.tern_binary}, {"--model", spec.model_dir},
                            {"--env-file", spec.env_file}})
    if (Status s = CheckUnitSafePath(what, path); !s.ok()) return Fail("service install: " + s.message());
  if (spec.user.empty())
    for (const std::string& p : {spec.tern_binary, spec.model_dir})
      if (UnderTmp(p))
        return Fail(fmt::format("service install: {} is under /tmp, which the service's private /tmp (DynamicUser=yes) "
                                "hides: move it, or install with --user ACCOUNT", p));
  if (!fs::is_directory(spec.model_dir, ec))
    return Fail(fmt::format("service install: model directory {} does not exist", spec.model_dir));
  spec.systemd_version = SystemdVersion();
  if (spec.systemd_version == 0) spec.systemd_version = 252;  // Debian 12's; only adds keys from 254 on

  const std::string unit_path = (fs::path(o.unit_dir) / UnitName(o.name)).string();
  const std::string env_text = RenderEnvFile(spec), unit_text = RenderUnit(spec);
  if (spec.user.empty()) {  // DynamicUser=: the files must be readable by anyone
    for (const std::string& p : {spec.tern_binary, spec.model_dir}) {
      const std::string bad = NotWorldReadable(p);
      if (!bad.empty())
        fmt::print(stderr, "tern: warning: {} is not readable by other users, so not by the service's dynamic user "
                           "(chmod o+rX, or install with --user ACCOUNT)\n", bad);
    }
  }
  if (o.dry_run) {
    fmt::print("# {}\n{}\n# {}\n{}", spec.env_file, env_text, unit_path, unit_text);
    return 0;
  }
  // The env file may hold --api-key: only root (systemd reads it before dropping privileges).
  if (Status s = WriteFile(spec.env_file, env_text, 0600); !s.ok()) return Fail("service install: " + s.message());
  if (Status s = WriteFile(unit_path, unit_text, 0644); !s.ok()) return Fail("service install: " + s.message());
  fmt::print(stderr, "tern: wrote {} and {}\n", spec.env_file, unit_path);
  if (!SystemdRunning()) {
    fmt::print(stderr, "tern: systemd is not running here (no /run/systemd/system): nothing was reloaded or started\n");
    return o.now ? 1 : 0;
  }
  CommandOutput r = RunCapture({"systemctl", "daemon-reload"});
  if (r.exit_code != 0) return Fail("service install: systemctl daemon-reload: " + r.output);
  if (o.now) {  // Type=notify: returns once READY=1 came, i.e. warm-up succeeded
    r = RunCapture({"systemctl", "enable", "--now", UnitName(o.name)});
    if (r.exit_code != 0) return Fail(fmt::format("service install: systemctl enable --now {}: {}", UnitName(o.name), r.output));
    fmt::print(stderr, "tern: {} is enabled and ready\n", UnitName(o.name));
  } else {
    fmt::print(stderr, "tern: start it with: systemctl enable --now {}\n", UnitName(o.name));
  }
  return 0;
}

// The address `tern serve` listens on, as a client reaches it.
std::string ClientHost(const std::string& host) {
  if (host == "0.0.0.0" || host.empty()) return "127.0.0.1";
  if (host == "::" || host == "[::]") return "[::1]";
  return host.find(':') != std::string::npos && host[0] != '[' ? "[" + host + "]" : host;
}

int ShowStatus(const std::string& name, const std::string& env_file_flag) {
  if (Status s = ValidateServiceName(name); !s.ok()) return Fail("service status: " + s.message());
  const std::string unit = UnitName(name);
  const std::string env_file = env_file_flag.empty() ? fmt::format("{}/{}.env", kDefaultEnvDir, name) : env_file_flag;
  auto not_running = [](const std::string& message) {
    Fail("service status: " + message);
    return 3;
  };
  bool active = false;
  if (SystemdRunning()) {
    const CommandOutput is_active = RunCapture({"systemctl", "is-active", unit});
    active = is_active.exit_code == 0;
    const CommandOutput show = RunCapture({"systemctl", "show", unit, "--no-pager",
        "-p", "LoadState,ActiveState,SubState,MainPID,NRestarts,Result,StatusText,ExecMainStartTimestamp,FragmentPath"});
    fmt::print("{}: {}{}", unit, is_active.output.empty() ? "unknown\n" : is_active.output, show.output);
  } else {
    fmt::print("{}: unit state unknown: systemd is not running here (no /run/systemd/system)\n", unit);
  }
  auto text = ReadWholeFile(env_file);
  if (!text.ok()) return not_running(text.status().message());
  auto args = ReadServeArgs(*text);
  if (!args.ok()) return not_running(fmt::format("{}: {}", env_file, args.status().message()));
  auto parsed = ParseServeFlags(*args);
  if (!parsed.ok()) return not_running(fmt::format("{}: {}", env_file, parsed.status().message()));
  const std::string origin = fmt::format("http://{}:{}", ClientHost(parsed->Str("--host")), parsed->Str("--port"));
  auto url = check::ParseBaseUrl(origin);
  if (!url.ok()) return not_running(fmt::format("{}: {}", origin, url.status().message()));
  const check::HttpClient http(check::HttpOptions{
      .url = *url, .api_key = parsed->Str("--api-key"), .timeout_s = 10, .connect_timeout_s = 3});
  bool healthy = false;
  for (const char* path : {"/health", "/model_info"}) {
    auto r = http.Get(path);
    if (!r.ok()) {
      fmt::print("{}{}: no answer: {}\n", origin, path, r.status().message());
      continue;
    }
    std::string body = r->body.substr(0, 2000);
    while (!body.empty() && (body.back() == '\n' || body.back() == '\r')) body.pop_back();
    fmt::print("{}{}: HTTP {} {}\n", origin, path, r->status, body);
    if (std::string_view(path) == "/health") healthy = r->status == 200;
  }
  // systemctl's convention: 0 running (and here: healthy), 3 not.
  return healthy && (active || !SystemdRunning()) ? 0 : 3;
}

int Uninstall(const std::string& name, const std::string& unit_dir, const std::string& env_file_flag, bool dry_run) {
  if (Status s = ValidateServiceName(name); !s.ok()) return Fail("service uninstall: " + s.message());
  const std::string unit = UnitName(name);
  const fs::path unit_path = fs::path(unit_dir) / unit;
  const fs::path env_file = env_file_flag.empty() ? fs::path(kDefaultEnvDir) / (name + ".env") : fs::path(env_file_flag);
  const bool systemd = SystemdRunning();
  if (dry_run) {
    if (systemd) fmt::print("systemctl disable --now {}\n", unit);
    fmt::print("rm -f {} {}\n", unit_path.string(), env_file.string());
    if (systemd) fmt::print("systemctl daemon-reload\n");
    return 0;
  }
  if (systemd) {
    const CommandOutput r = RunCapture({"systemctl", "disable", "--now", unit});
    if (r.exit_code != 0) fmt::print(stderr, "tern: systemctl disable --now {}: {}", unit, r.output);
  }
  std::error_code ec;
  int removed = 0;
  for (const fs::path& p : {unit_path, env_file}) {
    if (fs::remove(p, ec)) {
      fmt::print(stderr, "tern: removed {}\n", p.string());
      ++removed;
    } else if (ec) {
      return Fail(fmt::format("service uninstall: removing {}: {}", p.string(), ec.message()));
    }
  }
  if (systemd) {
    (void)RunCapture({"systemctl", "daemon-reload"});
    (void)RunCapture({"systemctl", "reset-failed", unit});
  }
  if (removed == 0) return Fail(fmt::format("service uninstall: neither {} nor {} exists", unit_path.string(), env_file.string()));
  return 0;
}

}  // namespace

void DropServiceInstallSeparator(std::vector<char*>& argv) {
  if (argv.size() < 3 || std::string_view(argv[1]) != "service" || std::string_view(argv[2]) != "install") return;
  auto dashes = std::find_if(argv.begin() + 3, argv.end(), [](const char* a) { return std::string_view(a) == "--"; });
  if (dashes != argv.end()) argv.erase(dashes);
}

Command RegisterService(CLI::App& app) {
  app.require_subcommand(1);
  auto io = std::make_shared<InstallOptions>();
  CLI::App* install = app.add_subcommand(
      "install", "write tern-NAME.service and NAME.env; the flags after install's own (or after --) go to `tern serve`");
  // Everything from the first flag install does not know on is for `tern serve`: install's own
  // options come first (a "--" between them is dropped by DropServiceInstallSeparator).
  install->prefix_command();
  install->add_option("--name", io->name, "service name: the unit is tern-NAME.service")->required();
  install->add_option("--unit-dir", io->unit_dir, "where the unit goes")->default_val(kDefaultUnitDir);
  install->add_option("--env-file", io->env_file, "the environment file holding the serve flags (default: /etc/tern/NAME.env)");
  install->add_option("--tern-binary", io->tern_binary, "the tern executable the unit starts (default: this one)");
  install->add_option("--user", io->user, "run as this existing account instead of a DynamicUser= uid");
  install->add_option("--start-timeout", io->start_timeout_s, "TimeoutStartSec: seconds for load and warm-up")
      ->default_val(1800);
  install->add_flag("--dry-run", io->dry_run, "print the environment file and the unit instead of writing them");
  install->add_flag("--now", io->now, "also systemctl enable --now (waits for the warm-up)");

  auto name = std::make_shared<std::string>();
  auto env_file = std::make_shared<std::string>();
  auto unit_dir = std::make_shared<std::string>(kDefaultUnitDir);
  auto dry_run = std::make_shared<bool>(false);
  CLI::App* status = app.add_subcommand("status", "the unit's state (systemctl) and what /health and /model_info answer");
  status->add_option("name", *name, "service name")->required();
  status->add_option("--env-file", *env_file, "its environment file (default: /etc/tern/NAME.env)");
  CLI::App* uninstall = app.add_subcommand("uninstall", "stop and disable the service and remove its two files");
  uninstall->add_option("name", *name, "service name")->required();
  uninstall->add_option("--unit-dir", *unit_dir, "where the unit is")->default_val(kDefaultUnitDir);
  uninstall->add_option("--env-file", *env_file, "its environment file (default: /etc/tern/NAME.env)");
  uninstall->add_flag("--dry-run", *dry_run, "print what would be done");
  return [=]() {
    if (install->parsed()) {
      return Install(*io, install->remaining());
    }
    if (status->parsed()) return ShowStatus(*name, *env_file);
    return Uninstall(*name, *unit_dir, *env_file, *dry_run);
  };
}

}  // namespace tern::app
