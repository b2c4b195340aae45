#!/bin/bash
# stop-rgw.sh [STATE_DIR]: stop the daemons start-rgw.sh recorded in STATE_DIR/run/*.pid, remove STATE_DIR
# (Copied from the project's shared object-store kit so that CI on a fresh clone has it.)
S=$(realpath -m "${1:-/tmp/ceph-s3}")
[ -d "$S" ] || exit 0
[ -f "$S/ceph.conf" ] || [ -d "$S/run" ] || { echo "$S: not a start-rgw.sh state dir" >&2; exit 1; }
alive() { local st; st=$(ps -o stat= -p "$1" 2>/dev/null) && [[ $st != Z* ]]; }  # zombie = gone
ours() { tr '\0' ' ' < "/proc/$1/cmdline" 2>/dev/null | grep -qF -- "-c $S/ceph.conf"; }
stop() { # NAME...: SIGTERM, up to 10 s for a clean exit, then SIGKILL
  local n p pids=() left
  for n; do [ -f "$S/run/$n.pid" ] || continue; p=$(cat "$S/run/$n.pid")
    if alive "$p" && ours "$p"; then kill -TERM "$p"; pids+=("$p"); fi; done
  for _ in $(seq 100); do
    left=(); for p in "${pids[@]}"; do alive "$p" && left+=("$p"); done
    pids=("${left[@]}"); [ ${#pids[@]} = 0 ] && return; sleep 0.1
  done
  kill -KILL "${pids[@]}" 2>/dev/null
}
stop rgw     # one at a time: rgw waits on the osd, the osd on the mon (else long stalls)
stop osd.0
stop mon.a
rm -rf "$S"
