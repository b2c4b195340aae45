#!/bin/sh
# api-archive.sh OUT DIR OBJECT... SYMS - the installed libquash.a: OBJECTs
# linked into one relocatable object (ld -r, in scratch directory DIR), every
# global symbol but those SYMS lists (libquash.sym) made local, in an archive.
# Calls between quash's own files are resolved inside that object, so the
# internals need no global names; lib/meson.build links the shared library
# from the same archive.
set -eu
out=$1 dir=$2
shift 2
eval "syms=\${$#}"
objs=
while [ $# -gt 1 ]; do objs="$objs $1"; shift; done
mkdir -p "$dir"
${LD:-ld} -r -o "$dir/libquash.o" $objs
${OBJCOPY:-objcopy} --keep-global-symbols="$syms" "$dir/libquash.o"
rm -f "$out"
${AR:-ar} rcs "$out" "$dir/libquash.o"
