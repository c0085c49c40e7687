#!/usr/bin/env bash
# Run a program and fail only if a signal ends it (a crash, an abort) or it outlives 30 s: for
# third-party tools (fi_info) whose answer on the fake is not the point, only that they survive
# it. Prints what the program printed and how it ended.
#   no_crash.sh <program> [args...]
set -u
timeout 30 "$@"
rc=$?
if ((rc == 124)); then
  echo "no_crash: $1 did not finish within 30 s" >&2
  exit 1
fi
if ((rc >= 128)); then
  echo "no_crash: $1 was killed by signal $((rc - 128))" >&2
  exit 1
fi
echo "no_crash: $1 exited with status $rc (no signal)"
