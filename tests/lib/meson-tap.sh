#!/bin/bash
# meson-tap.sh NAME COUNT - how meson runs tests/NAME.sh (tests/meson.build,
# `meson test -C build --suite pack`): in the environment tests/run.sh gives
# it (tests/lib/env.sh), its TAP lines passed on and the plan's COUNT after
# them as "1..COUNT", so that meson fails a script that stops early or
# loses or gains a check, as tests/run.sh does.  The plan itself, skip
# reasons and the whole-run checks stay tests/run.sh's.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1
. tests/lib/env.sh || exit 1
name=$1 count=$2
out=$QUASH_WORK/meson-$name.log
timeout 1200 bash "tests/$name.sh" 2>&1 | tee "$out"
status=${PIPESTATUS[0]}
grep -q '^1\.\.' "$out" || echo "1..$count"
exit "$status"
