# Helpers of the tests/dist scripts (sourced).

# The pid of the tern process whose command line matches $1 (pgrep -f; its
# first word is the tern binary, so mpirun itself never matches) and that is
# rank $2 of an mpirun job (OMPI_COMM_WORLD_RANK or PMI_RANK in its
# environment). Tests run side by side (ctest -j): $1 must name something only
# this test's job has (its model folder, its port), or the signal may go to
# another test's server.
rank_pid() {
  local p env exe
  exe=$(readlink -f "${1%% *}")
  for p in $(pgrep -f "$1"); do
    [ "$(readlink -f "/proc/$p/exe" 2>/dev/null)" = "$exe" ] || continue
    env=$(tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null) || continue
    if grep -qxE "(OMPI_COMM_WORLD_RANK|PMI_RANK)=$2" <<<"$env"; then echo "$p"; return; fi
  done
}

# Waits up to $2 seconds for pid $1 (a child of this shell) to end; its exit
# status in $code (124 if it did not end).
wait_for() {
  local pid=$1 limit=$2 i
  for ((i = 0; i < limit * 10; i++)); do
    kill -0 "$pid" 2>/dev/null || { wait "$pid"; code=$?; return; }
    sleep 0.1
  done
  code=124
}

# The pids of tern processes (the binary of $1's first word) whose command line
# matches $1 (as with rank_pid, name what only this test's processes have).
tern_pids() {
  local p exe
  exe=$(readlink -f "${1%% *}")
  for p in $(pgrep -f "$1"); do
    [ "$(readlink -f "/proc/$p/exe" 2>/dev/null)" = "$exe" ] && echo "$p"
  done
}
