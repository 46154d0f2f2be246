#!/usr/bin/env bash
# `tern service`: the unit it writes, checked by systemd's own tools, and the server it starts.
# Usage: service_unit.sh TERN WORKDIR verify|exec|syscalls|systemd
#   verify    the unit passes `systemd-analyze verify` with no warning at all (and a unit with a key
#             systemd 252 does not know does not: the check can fail); --dry-run prints what install
#             writes; uninstall removes both files. Exit 77 (skipped) without systemd-analyze.
#   exec      no systemd needed: service_exec.py runs the unit's ExecStart as systemd would (env file
#             expanded by systemd's own code where libsystemd-shared exists), READY=1 only after
#             /health is 200, `tern check --suite smoke`, `tern service status`, SIGTERM -> exit 0.
#   syscalls  the same under strace: every system call is allowed by the unit's SystemCallFilter=
#             (77 without strace / ptrace).
#   systemd   the real thing, where systemd is PID 1 and we are root: install into
#             /run/systemd/system, systemctl start (returns on READY=1), tern check, status, stop,
#             uninstall. 77 (skipped) elsewhere, containers included.
set -uo pipefail
tern=$1 mode=$3
work=$2/service-$mode
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"; mkdir -p "$work"
SKIP=77
fail() { echo "FAIL: $*"; exit 1; }
port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
name=citest$$
# A value with spaces and quotes exercises both quoting layers; it does not change what is served.
model_dir=$(cd "$here/../../models/demo" && pwd)
# A service's private /tmp hides a binary or model under /tmp (install refuses them without --user):
# a checkout there (a CI clone, say) stages both under /opt for the test.
case "$(readlink -f "$tern") $model_dir" in
  /tmp/* | /var/tmp/* | *" /tmp/"* | *" /var/tmp/"*)
    stage=$(mktemp -d /opt/tern-service-test.XXXXXX) || fail "cannot stage under /opt"
    cp "$tern" "$stage/tern" && cp -r "$model_dir" "$stage/demo" || fail "staging under $stage"
    tern=$stage/tern model_dir=$stage/demo
    trap 'rm -rf "$stage"' EXIT
    ;;
esac
serve_flags=(--model "$model_dir" --port "$port" --threads 2 --served-model-name default --log-level info
             --default-chat-template-kwargs '{"enable_thinking": true}' --shutdown-grace 20)

install_here() {
  "$tern" service install --name "$name" --unit-dir "$work" --env-file "$work/$name.env" "$@" -- "${serve_flags[@]}"
}

case $mode in
verify)
  command -v systemd-analyze >/dev/null || { echo "SKIPPED: systemd-analyze is not installed; the unit was not verified"; exit $SKIP; }
  install_here --dry-run >"$work/dry.txt" 2>"$work/dry.err" || fail "install --dry-run: $(cat "$work/dry.err")"
  [ ! -e "$work/$name.env" ] && [ ! -e "$work/tern-$name.service" ] || fail "--dry-run wrote files"
  install_here 2>"$work/install.err" || fail "install: $(cat "$work/install.err")"
  unit=$work/tern-$name.service
  [ -f "$unit" ] && [ -f "$work/$name.env" ] || fail "install did not write $unit and $work/$name.env"
  { echo "# $work/$name.env"; cat "$work/$name.env"; echo; echo "# $unit"; cat "$unit"; } | diff - "$work/dry.txt" \
    || fail "--dry-run printed something else than install wrote"
  [ "$(stat -c %a "$work/$name.env")" = 600 ] || fail "the env file (it may hold --api-key) is not mode 0600"
  for key in Type=notify Restart=on-failure RestartSec=10 TimeoutStopSec=50 LimitNOFILE=1024 DynamicUser=yes \
             NoNewPrivileges=yes ProtectSystem=strict PrivateTmp=yes ProtectHome=yes \
             "ReadOnlyPaths=$model_dir" "EnvironmentFile=$work/$name.env" \
             "ExecStart=$(readlink -f "$tern") serve \$TERN_SERVE_ARGS"; do
    grep -qxF -- "$key" "$unit" || fail "the unit has no line $key"
  done
  echo "systemd-analyze: $(systemd-analyze --version | head -1)"
  out=$(systemd-analyze verify "$unit" 2>&1); rc=$?
  [ $rc -eq 0 ] && [ -z "$out" ] || fail "systemd-analyze verify $unit: rc=$rc: $out"
  echo "ok: systemd-analyze verify: no error, no warning"
  # The check can fail: a key this systemd does not know is reported.
  sed 's/^RestartSec=10$/RestartSec=10\nRestartSteps=5/' "$unit" >"$work/bad.service"
  out=$(systemd-analyze verify "$work/bad.service" 2>&1)
  if grep -q "Unknown key" <<<"$out"; then echo "ok: a unit with RestartSteps= is reported by this systemd: $out"
  else echo "note: this systemd accepts RestartSteps= (254 or later)"; fi
  "$tern" service uninstall "$name" --unit-dir "$work" --env-file "$work/$name.env" 2>"$work/un.err" \
    || fail "uninstall: $(cat "$work/un.err")"
  [ ! -e "$unit" ] && [ ! -e "$work/$name.env" ] || fail "uninstall left files"
  "$tern" service uninstall "$name" --unit-dir "$work" --env-file "$work/$name.env" 2>/dev/null \
    && fail "uninstalling twice succeeded"
  # Bad serve flags are an install error, not a failure at the first start.
  out=$("$tern" service install --name "$name" --unit-dir "$work" --env-file "$work/x.env" --no-such-flag 2>&1) \
    && fail "install accepted --no-such-flag"
  grep -q "no-such-flag" <<<"$out" || fail "the error does not name the flag: $out"
  echo "PASS"
  ;;
exec|syscalls)
  install_here 2>"$work/install.err" || fail "install: $(cat "$work/install.err")"
  extra=(); [ "$mode" = syscalls ] && extra=(--strace)
  /usr/bin/python3 "$here/service_exec.py" --tern "$tern" --unit "$work/tern-$name.service" --name "$name" "${extra[@]}"
  rc=$?
  [ $rc -eq 0 ] && echo PASS
  exit $rc
  ;;
systemd)
  if [ "$(ps -p 1 -o comm= 2>/dev/null)" != systemd ] || [ ! -d /run/systemd/system ] || [ "$(id -u)" != 0 ]; then
    echo "SKIPPED: systemd is not PID 1 here (PID 1: $(ps -p 1 -o comm= 2>/dev/null)) or not root: the unit was not started by systemd"
    exit $SKIP
  fi
  unit=tern-$name.service
  cleanup() { systemctl stop "$unit" 2>/dev/null; "$tern" service uninstall "$name" --unit-dir /run/systemd/system --env-file "$work/$name.env" >/dev/null 2>&1; rm -rf "${stage:-/nonexistent}"; }
  trap cleanup EXIT
  "$tern" service install --name "$name" --unit-dir /run/systemd/system --env-file "$work/$name.env" -- "${serve_flags[@]}" \
    || fail "install"
  chmod o+rx "$work" "$(dirname "$work")"
  timeout 600 systemctl start "$unit" || fail "systemctl start: $(journalctl -u "$unit" --no-pager | tail -30)"
  [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/health")" = 200 ] \
    || fail "systemctl start returned before /health was 200"
  "$tern" check --url "http://127.0.0.1:$port" --suite smoke --no-color || fail "tern check --suite smoke"
  "$tern" service status "$name" --env-file "$work/$name.env" || fail "tern service status"
  systemctl stop "$unit"
  [ "$(systemctl show -p Result --value "$unit")" = success ] || fail "the stop did not end in Result=success"
  echo PASS
  ;;
*) fail "unknown mode $mode" ;;
esac
