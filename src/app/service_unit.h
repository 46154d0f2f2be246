// `tern service`: the systemd unit and environment file that run `tern serve`.
//
// The serve flags live in an environment file (TERN_SERVE_ARGS, one flag per
// line) so they can be edited without touching the unit; the unit starts
//   ExecStart=<tern> serve $TERN_SERVE_ARGS
// which systemd expands by splitting the value at whitespace, honouring
// "double quotes" and backslash escapes (extract_first_word with
// EXTRACT_UNQUOTE|EXTRACT_RELAX). The environment file itself is read by
// systemd's env-file parser, where a "..." value keeps newlines and \ escapes
// exactly the shell's four characters (\ " $ `). Both layers were checked
// against libsystemd-shared-252's own load_env_file and replace_env_argv
// (tests/integration/service_unit.sh does so on every run where it exists).
//
// Readiness: Type=notify. `tern serve` sends READY=1 only after its warm-up
// generation succeeded (/health turns 200), STOPPING=1 when a signal starts
// the drain (server/sd_notify.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace tern::app {

struct ServiceSpec {
  std::string name;                     // the unit is tern-<name>.service
  std::string tern_binary;              // absolute path of the tern executable
  std::vector<std::string> serve_args;  // flags for `tern serve`, paths already absolute
  std::string env_file;                 // absolute path of the environment file
  std::string model_dir;                // absolute; ReadOnlyPaths=
  std::string user;                     // "": DynamicUser=yes; else User= (an existing account)
  int port = 30000;                     // < 1024 grants CAP_NET_BIND_SERVICE
  int64_t max_connections = 256;        // serve's --max-connections: sizes LimitNOFILE / TasksMax
  double shutdown_grace_s = 30;         // serve's --shutdown-grace: TimeoutStopSec exceeds it
  double start_timeout_s = 1800;        // TimeoutStartSec: load + warm-up (a 400 GB model takes minutes)
  int systemd_version = 252;            // RestartSteps/RestartMaxDelaySec only from 254 on
};

// Service names: letters, digits, '_', '-', '.', not starting with '-' or '.',
// at most 64 bytes (the unit name must stay a valid systemd unit name).
Status ValidateServiceName(const std::string& name);
std::string UnitName(const std::string& name);  // "tern-<name>.service"

// A path written into the unit (ExecStart=, ReadOnlyPaths=) must be absolute
// and need no quoting or specifier escaping: [A-Za-z0-9/._+@:,=-] only.
Status CheckUnitSafePath(const std::string& what, const std::string& path);

// One word for systemd's $VAR splitting: bare when it holds only safe
// characters, else in double quotes with \ and " escaped. Never fails.
std::string QuoteWordForSystemd(const std::string& word);
// The inverse (systemd's extract_first_word with EXTRACT_UNQUOTE|EXTRACT_RELAX):
// the words of an expanded $VAR value.
std::vector<std::string> SplitWordsLikeSystemd(const std::string& value);

// Whether `path` lies under /tmp or /var/tmp, which PrivateTmp=yes (implied
// by DynamicUser=yes) replaces with an empty directory for the service.
bool UnderTmp(const std::string& path);

// LimitNOFILE= and TasksMax= for a connection limit; the reasons are in the .cc.
int64_t NoFileLimit(int64_t max_connections);
int64_t TasksLimit(int64_t max_connections);

std::string RenderEnvFile(const ServiceSpec& spec);
std::string RenderUnit(const ServiceSpec& spec);

// Reads TERN_SERVE_ARGS back from an environment file written by
// RenderEnvFile (or edited by hand in the same syntax): the serve flags.
Result<std::vector<std::string>> ReadServeArgs(const std::string& env_file_text);

}  // namespace tern::app
