#!/bin/bash
# Runs `tern check` against a server URL and asserts which checks pass and fail.
# Reusable for any server: the scripted mock (with_mock.sh), `tern serve`, SGLang...
#
#   run_battery.sh TERN_BINARY URL [--expect-exit N] [--expect-pass a,b] [--expect-fail c,d]
#                  [--expect random-weights|correct] [-- more tern check options]
#
# TERN_BINARY is `tern` or `tern_check_driver` (both take the `check` subcommand).
# The suite defaults to full. --expect random-weights is what a random-weight
# synthetic model must give: exit 1, every structural check passes, the
# semantic answer checks fail. --expect correct: exit 0.
# Needs /usr/bin/python3 (Debian's) to read the JSON report.
set -u
if [ $# -lt 2 ]; then
  sed -n '2,13p' "$0" >&2
  exit 2
fi
BIN=$1
URL=$2
shift 2
EXPECT_EXIT=""
EXPECT_PASS=""
EXPECT_FAIL=""
EXTRA=()
while [ $# -gt 0 ]; do
  case $1 in
    --expect-exit) EXPECT_EXIT=$2; shift 2 ;;
    --expect-pass) EXPECT_PASS=$2; shift 2 ;;
    --expect-fail) EXPECT_FAIL=$2; shift 2 ;;
    --expect)
      case $2 in
        random-weights)
          EXPECT_EXIT=1
          EXPECT_PASS=model_info,determinism,stream_consistency,concurrency,error_handling,latency,special_tokens,openai_error_body
          EXPECT_FAIL=simple_completion,arithmetic_no_thinking,arithmetic_thinking,multi_turn_recall,long_context ;;
        correct) EXPECT_EXIT=0 ;;
        *) echo "run_battery.sh: unknown --expect '$2'" >&2; exit 2 ;;
      esac
      shift 2 ;;
    --) shift; EXTRA=("$@"); break ;;
    *) echo "run_battery.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
SUITE=(--suite full)
for a in "${EXTRA[@]+"${EXTRA[@]}"}"; do [ "$a" = --suite ] && SUITE=(); done
"$BIN" check --url "$URL" "${SUITE[@]+"${SUITE[@]}"}" --json "$WORK/report.json" --junit "$WORK/report.xml" \
  "${EXTRA[@]+"${EXTRA[@]}"}"
CODE=$?
echo "run_battery.sh: tern check exited $CODE"
/usr/bin/python3 - "$WORK/report.json" "$WORK/report.xml" "$CODE" "$EXPECT_EXIT" "$EXPECT_PASS" "$EXPECT_FAIL" <<'PY'
import json, sys, xml.dom.minidom
report_path, junit_path, code, want_exit, want_pass, want_fail = sys.argv[1:]
problems = []
if want_exit and int(code) != int(want_exit):
    problems.append(f"exit code {code}, expected {want_exit}")
try:
    report = json.load(open(report_path))
except Exception as e:
    print(f"run_battery.sh: no readable JSON report: {e}")
    sys.exit(1)
try:
    xml.dom.minidom.parse(junit_path)
except Exception as e:
    problems.append(f"JUnit report is not well-formed XML: {e}")
if report.get("exit_code") != int(code):
    problems.append(f"report exit_code {report.get('exit_code')} != process exit code {code}")
results = {c["name"]: c for c in report.get("checks", [])}
for want, names in (("pass", want_pass), ("fail", want_fail)):
    for name in filter(None, names.split(",")):
        got = results.get(name, {}).get("result", "not run")
        if got != want:
            problems.append(f"{name}: {got}, expected {want} ({results.get(name, {}).get('detail', '')})")
for p in problems:
    print("run_battery.sh: FAIL:", p)
if not problems:
    print("run_battery.sh: expectations met")
sys.exit(1 if problems else 0)
PY
