#!/usr/bin/env python3
"""Runs a `tern service install` unit's ExecStart the way systemd would, without systemd.

Usage: service_exec.py --tern TERN --unit UNIT_FILE [--strace]

1. Reads ExecStart= and EnvironmentFile= from the unit, loads the environment file and expands
   $VAR words. With libsystemd-shared-*.so (Debian's systemd package) this is systemd's own
   load_env_file() and replace_env_argv(), through ctypes; an independent Python reading of the
   same grammar must give the same argv (and is used alone where the library is missing).
2. Listens on an AF_UNIX datagram socket, starts the argv with NOTIFY_SOCKET pointing at it (as a
   Type=notify unit is started), polls /health meanwhile, and asserts that READY=1 arrives only
   once /health answers 200: a /health asked the moment READY=1 arrives must answer 200.
3. `tern check --suite smoke` against it, `tern service status` (exit 0, /health 200), then
   SIGTERM: STOPPING=1 must arrive, the exit status must be 0, and `tern service status` exit 3.
With --strace, the server runs under `strace -f` and every system call it made must be allowed by
the unit's SystemCallFilter= (expanded by `systemd-analyze syscall-filter`); exit 77 (skipped)
when strace or systemd-analyze is missing or ptrace is not permitted here.
"""
import argparse
import ctypes
import glob
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

SKIP = 77


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


# ---- the environment file and $VAR splitting, read independently of tern's code -------------
def parse_env_file(text):
    """systemd's env-file grammar (src/basic/env-file.c): KEY=VALUE, # ; comments, "..." with
    backslash escaping only \\ " $ ` and newline, '...' literal, bare values with \\ escapes."""
    env, i, n = {}, 0, len(text)
    while i < n:
        while i < n and text[i] in " \t\r":
            i += 1
        if i < n and text[i] in "#;\n":
            while i < n and text[i] != "\n":
                i += 1
            i += 1
            continue
        if i >= n:
            break
        j = text.index("=", i)
        key = text[i:j].strip()
        i = j + 1
        while i < n and text[i] in " \t":
            i += 1
        value, keep = "", 0
        while i < n and text[i] != "\n":
            c = text[i]
            if c in "\"'":
                i += 1
                while text[i] != c:
                    if c == '"' and text[i] == "\\":
                        i += 1
                        if text[i] == "\n":
                            i += 1
                            continue
                        if text[i] not in '\\"$`':
                            value += "\\"
                    value += text[i]
                    i += 1
                i += 1
                keep = len(value)
            elif c == "\\":
                value += text[i + 1] if text[i + 1] != "\n" else ""
                i += 2
                keep = len(value)
            else:
                value += c
                i += 1
                if c not in " \t\r":
                    keep = len(value)
        env[key] = value[:keep]
        i += 1
    return env


def split_words(value):
    """extract_first_word(EXTRACT_UNQUOTE|EXTRACT_RELAX): whitespace separates, quotes group."""
    words, i, n = [], 0, len(value)
    while True:
        while i < n and value[i] in " \t\n\r":
            i += 1
        if i >= n:
            return words
        w, quote = "", None
        while i < n:
            c = value[i]
            if c == "\\":
                if i + 1 < n:
                    w += value[i + 1]
                i += 2
                continue
            if quote:
                if c == quote:
                    quote = None
                else:
                    w += c
            elif c in "\"'":
                quote = c
            elif c in " \t\n\r":
                break
            else:
                w += c
            i += 1
        words.append(w)


def expand_python(argv, env):
    out = []
    for a in argv:
        if a.startswith("$") and not a.startswith("${") and not a.startswith("$$"):
            out += split_words(env.get(a[1:], ""))
        else:
            out.append(re.sub(r"\$\{(\w+)\}", lambda m: env.get(m.group(1), ""), a))
    return out


def expand_libsystemd(argv, env_path):
    """systemd 252's own code: load_env_file(NULL, path, &env); replace_env_argv(argv, env)."""
    libs = sorted(glob.glob("/usr/lib/*/systemd/libsystemd-shared-*.so") + glob.glob("/lib/systemd/libsystemd-shared-*.so"))
    if not libs:
        return None, "libsystemd-shared not found"
    lib = ctypes.CDLL(libs[0])
    version = int(re.search(r"shared-(\d+)", libs[0]).group(1))
    if version >= 254:  # replace_env_argv changed its signature in 254
        return None, f"{libs[0]}: replace_env_argv of systemd {version} not supported by this test"
    pp = ctypes.POINTER(ctypes.c_char_p)
    lib.load_env_file.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(pp)]
    lib.load_env_file.restype = ctypes.c_int
    lib.replace_env_argv.argtypes = [pp, pp]
    lib.replace_env_argv.restype = pp
    env = pp()
    r = lib.load_env_file(None, env_path.encode(), ctypes.byref(env))
    if r < 0:
        fail(f"systemd's load_env_file({env_path}) failed: {r}")
    arr = (ctypes.c_char_p * (len(argv) + 1))(*[a.encode() for a in argv], None)
    out = lib.replace_env_argv(ctypes.cast(arr, pp), env)
    words, i = [], 0
    while out[i] is not None:
        words.append(out[i].decode())
        i += 1
    return words, libs[0]


def unit_argv(unit_path):
    text = open(unit_path).read()
    execs = re.findall(r"^ExecStart=(.*)$", text, re.M)
    envs = re.findall(r"^EnvironmentFile=(.*)$", text, re.M)
    if len(execs) != 1 or len(envs) != 1:
        fail(f"{unit_path}: expected one ExecStart= and one EnvironmentFile=, got {execs} {envs}")
    line = execs[0]
    if "%" in line or any(c in line for c in "\"'\\"):
        fail(f"ExecStart needs specifier or quote handling this test does not do: {line}")
    return line.split(), envs[0].lstrip("-"), text


# ---- running it -------------------------------------------------------------------------------
def free_port_of(argv):
    for i, a in enumerate(argv):
        if a == "--port":
            return int(argv[i + 1])
        if a.startswith("--port="):
            return int(a.split("=", 1)[1])
    return 30000


def http_status(url, timeout=5):
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
    except OSError:
        return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tern", required=True)
    ap.add_argument("--unit", required=True)
    ap.add_argument("--name", required=True)
    ap.add_argument("--strace", action="store_true")
    a = ap.parse_args()

    argv0, env_path, unit_text = unit_argv(a.unit)
    env = parse_env_file(open(env_path).read())
    py_argv = expand_python(argv0, env)
    sd_argv, where = expand_libsystemd(argv0, env_path)
    if sd_argv is None:
        print(f"note: systemd's own expansion not checked ({where}); using the Python reading only")
    elif sd_argv != py_argv:
        fail(f"systemd ({where}) expands ExecStart to {sd_argv}, this test's reading to {py_argv}")
    else:
        print(f"ok: ExecStart expands identically by systemd's code ({where}) and by this test: {shlex.join(sd_argv)}")
    argv = py_argv
    port = free_port_of(argv)
    base = f"http://127.0.0.1:{port}"

    work = tempfile.mkdtemp(prefix="tern-service-")
    notify_path = os.path.join(work, "notify")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(notify_path)
    sock.settimeout(0.05)

    strace_out = os.path.join(work, "strace")
    if a.strace:
        for tool in ("strace", "systemd-analyze"):
            if subprocess.run(["which", tool], capture_output=True).returncode != 0:
                print(f"SKIPPED: {tool} is not installed: the SystemCallFilter= check did not run")
                sys.exit(SKIP)
        probe = subprocess.run(["strace", "-f", "-o", "/dev/null", "true"], capture_output=True, text=True)
        if probe.returncode != 0:
            print(f"SKIPPED: strace cannot trace here ({probe.stderr.strip()}): the SystemCallFilter= check did not run")
            sys.exit(SKIP)
        argv = ["strace", "-f", "-qq", "-o", strace_out] + argv

    health_log = []  # (time, status) of every /health poll
    stop_polling = threading.Event()

    def poll():
        while not stop_polling.is_set():
            health_log.append((time.monotonic(), http_status(base + "/health", timeout=2)))
            time.sleep(0.005)

    log_path = os.path.join(work, "serve.log")
    proc = subprocess.Popen(argv, env=dict(os.environ, NOTIFY_SOCKET=notify_path), stdout=open(log_path, "w"),
                            stderr=subprocess.STDOUT)
    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    messages = []
    ready_at, health_at_ready = None, None
    deadline = time.monotonic() + 300
    try:
        while ready_at is None:
            if proc.poll() is not None:
                fail(f"the server exited ({proc.returncode}) before READY=1:\n{open(log_path).read()}")
            if time.monotonic() > deadline:
                fail("no READY=1 within 300 s")
            try:
                msg = sock.recv(4096).decode()
            except socket.timeout:
                continue
            messages.append(msg)
            if "READY=1" in msg.split("\n"):
                ready_at = time.monotonic()
                health_at_ready = http_status(base + "/health")
        stop_polling.set()
        poller.join()
        before = [s for t, s in health_log if t < ready_at]
        print(f"ok: notify messages before ready: {messages}; /health polls before READY=1: "
              f"{len(before)} ({sorted(set(map(str, before)))})")
        if health_at_ready != 200:
            fail(f"READY=1 arrived while /health answered {health_at_ready}")
        if not any(m.startswith("STATUS=warming up") for m in messages[:-1]):
            fail(f"expected a STATUS=warming up message before READY=1, got {messages}")
        print("ok: READY=1 arrived after /health turned 200 (a /health asked on its arrival answered 200)")

        check = subprocess.run([a.tern, "check", "--url", base, "--suite", "smoke", "--no-color"], capture_output=True,
                               text=True, timeout=600)
        print(check.stdout)
        if check.returncode != 0:
            fail(f"tern check --suite smoke exited {check.returncode}: {check.stderr}")
        env_file = env_path
        st = subprocess.run([a.tern, "service", "status", a.name, "--env-file", env_file], capture_output=True, text=True,
                            timeout=60)
        print(st.stdout, st.stderr)
        if st.returncode != 0 or f"{base}/health: HTTP 200" not in st.stdout or "/model_info: HTTP 200" not in st.stdout:
            fail(f"tern service status exited {st.returncode} without /health and /model_info 200")

        # Under strace the server is strace's child: the signal goes to it, as systemd's would.
        target = proc.pid
        if a.strace:
            children = open(f"/proc/{proc.pid}/task/{proc.pid}/children").read().split()
            target = int(children[0])
        os.kill(target, signal.SIGTERM)
        rc = proc.wait(timeout=120)
        if rc != 0:
            fail(f"after SIGTERM the server exited {rc}:\n{open(log_path).read()}")
        late = []
        while True:
            try:
                late.append(sock.recv(4096).decode())
            except socket.timeout:
                break
        if not any("STOPPING=1" in m.split("\n") for m in late):
            fail(f"no STOPPING=1 after SIGTERM (got {late})")
        print(f"ok: SIGTERM -> {late}, exit status 0")
        st = subprocess.run([a.tern, "service", "status", a.name, "--env-file", env_file], capture_output=True, text=True,
                            timeout=60)
        if st.returncode != 3:
            fail(f"tern service status of a stopped server exited {st.returncode}, expected 3: {st.stdout}")
        print("ok: tern service status of the stopped server exits 3")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()

    if a.strace:
        check_syscalls(strace_out, unit_text)


def check_syscalls(strace_out, unit_text):
    used = set()
    for path in glob.glob(strace_out + "*"):
        for line in open(path, errors="replace"):
            m = re.match(r"^\d+\s+(?:<\.\.\. )?([a-z0-9_]+)[( ]", line)
            if m and m.group(1) not in ("exit", "resumed", "killed"):
                used.add(m.group(1))
    # the process strace starts runs execve before tern is tern; it is allowed anyway (@process)
    groups = re.findall(r"^SystemCallFilter=(.*)$", unit_text, re.M)
    if not groups:
        fail("the unit has no SystemCallFilter=")
    allowed = set()
    for g in " ".join(groups).split():
        out = subprocess.run(["systemd-analyze", "syscall-filter", g], capture_output=True, text=True)
        if out.returncode != 0:
            fail(f"systemd-analyze syscall-filter {g}: {out.stderr}")
        for line in out.stdout.splitlines():
            w = line.strip()
            if w and not w.startswith("#") and not w.startswith("@"):
                allowed.add(w)
            elif w.startswith("@") and w != g:
                sub = subprocess.run(["systemd-analyze", "syscall-filter", w], capture_output=True, text=True).stdout
                allowed |= {x.strip() for x in sub.splitlines() if x.strip() and not x.strip().startswith(("#", "@"))}
    if len(used) < 20:
        fail(f"strace saw only {sorted(used)}: the trace did not work")
    denied = sorted(used - allowed)
    if denied:
        fail(f"tern serve made system calls outside SystemCallFilter={' '.join(groups)}: {denied}")
    print(f"ok: all {len(used)} system calls tern serve made are allowed by SystemCallFilter={' '.join(groups)}: {' '.join(sorted(used))}")


if __name__ == "__main__":
    main()
