#!/bin/bash
# Starts the scripted mock server on a free 127.0.0.1 port, runs a command with
# every argument "@URL@" replaced by the mock's URL, stops the mock, and exits
# with the command's status.
#
#   with_mock.sh MODE [mock options...] -- COMMAND ARGS...
#   with_mock.sh sglang,nonsense -- run_battery.sh tern_check_driver @URL@ --expect random-weights
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
MODE=$1
shift
MOCK_ARGS=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do MOCK_ARGS+=("$1"); shift; done
[ $# -gt 0 ] && shift
NODE=${NODE:-node}
PORT_FILE=$(mktemp)
FIFO=$(mktemp -u)
mkfifo "$FIFO"
# The mock exits when its stdin (this fifo, held open by a sleeping writer) closes.
sleep 600 > "$FIFO" &
HOLDER=$!
"$NODE" "$HERE/mock_server.mjs" --mode "$MODE" --lifetime-s 300 "${MOCK_ARGS[@]+"${MOCK_ARGS[@]}"}" < "$FIFO" > "$PORT_FILE" &
MOCK=$!
cleanup() { kill "$MOCK" "$HOLDER" 2>/dev/null; wait "$MOCK" 2>/dev/null; rm -f "$PORT_FILE" "$FIFO"; }
trap cleanup EXIT
for _ in $(seq 150); do grep -q '^PORT ' "$PORT_FILE" && break; sleep 0.1; done
PORT=$(awk '/^PORT /{print $2}' "$PORT_FILE")
if [ -z "$PORT" ]; then
  echo "with_mock.sh: the mock server did not start" >&2
  exit 2
fi
ARGS=()
for a in "$@"; do ARGS+=("${a//@URL@/http://127.0.0.1:$PORT}"); done
"${ARGS[@]}"
