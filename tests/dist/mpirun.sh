#!/usr/bin/env bash
# Runs a command under mpirun on this host, over one of Open MPI's transports.
# Usage: tests/dist/mpirun.sh shm|tcp NP COMMAND [ARGS...]
#        tests/dist/mpirun.sh shm|tcp -- MPIRUN-ARGS... (an MPMD line: "-np 1 a : -np 1 b")
#   shm: the shared-memory transport (btl vader), as ranks on one host use;
#   tcp: TCP over loopback, as between hosts.
# As root, Open MPI needs its allow-run-as-root switches; more ranks than
# cores need --oversubscribe, and yield-when-idle so waiting ranks give their
# core to the others instead of spinning.
set -euo pipefail
transport=$1; shift
case "$transport" in
  shm) btl=self,vader ;;
  tcp) btl=self,tcp ;;
  *) echo "mpirun.sh: transport must be shm or tcp, not $transport" >&2; exit 2 ;;
esac
args=(--oversubscribe --mca pml ob1 --mca btl "$btl" --mca mpi_yield_when_idle 1)
[ "$transport" = tcp ] && args+=(--mca btl_tcp_if_include lo --mca oob_tcp_if_include lo)
[ "$(id -u)" -eq 0 ] && args+=(--allow-run-as-root)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
if [ "$1" = -- ]; then shift; exec mpirun "${args[@]}" "$@"; fi
np=$1; shift
exec mpirun "${args[@]}" -np "$np" "$@"
