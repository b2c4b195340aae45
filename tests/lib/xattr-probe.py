#!/usr/bin/python3
# xattr-probe.py DIR - every xattr query of every path under DIR, one line
# each with its answer, for comparing two mounts of one image line by line:
#
#   PATH list0 LEN|ERRNO          llistxattr(PATH, NULL, 0)
#   PATH list NAMES|ERRNO         llistxattr with room for everything
#   PATH NAME len LEN|ERRNO       lgetxattr(PATH, NAME, NULL, 0)
#   PATH NAME get =VALUE|ERRNO    lgetxattr with room for the value
#   PATH NAME short ERRNO         lgetxattr with one byte too few
#
# NAME runs over every namespace the kernel knows and some it does not,
# plus every name either mount lists.  Paths are relative to DIR; nothing
# follows symlinks.
import ctypes
import errno
import os
import sys

libc = ctypes.CDLL(None, use_errno=True)
libc.lgetxattr.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_size_t]
libc.lgetxattr.restype = ctypes.c_ssize_t
libc.llistxattr.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_size_t]
libc.llistxattr.restype = ctypes.c_ssize_t

NAMES = [
    "user.a", "user.none", "user.", "trusted.t", "trusted.none", "trusted.",
    "security.selinux", "security.capability", "security.SMACK64", "security.none", "security.",
    "system.posix_acl_access", "system.posix_acl_default", "system.nfs4_acl", "system.",
    "system", "user", "other.x", "noprefix", "",
]


def err(e):
    return errno.errorcode.get(e, str(e))


def call(fn, *args):
    r = fn(*args)
    return (r, 0) if r >= 0 else (r, ctypes.get_errno())


def probe(root, rel):
    p = os.path.join(root, rel).encode()
    out = []
    n, e = call(libc.llistxattr, p, None, 0)
    out.append(f"{rel} list0 {n if not e else err(e)}")
    buf = ctypes.create_string_buffer(1 << 16)
    n, e = call(libc.llistxattr, p, buf, len(buf))
    listed = []
    if e:
        out.append(f"{rel} list {err(e)}")
    else:
        listed = [x.decode() for x in buf.raw[:n].split(b"\0") if x]
        out.append(f"{rel} list {','.join(listed)}")
    for name in NAMES + sorted(set(listed) - set(NAMES)):
        nb = name.encode()
        n, e = call(libc.lgetxattr, p, nb, None, 0)
        out.append(f"{rel} {name!r} len {n if not e else err(e)}")
        n, e = call(libc.lgetxattr, p, nb, buf, len(buf))
        out.append(f"{rel} {name!r} get {'=' + buf.raw[:n].hex() if not e else err(e)}")
        if not e and n > 0:
            n, e = call(libc.lgetxattr, p, nb, buf, n - 1)
            out.append(f"{rel} {name!r} short {n if not e else err(e)}")
    return out


def main():
    root = sys.argv[1]
    rels = ["."]
    for dp, dn, fn in os.walk(root):
        dn.sort()
        for x in sorted(dn + fn):
            rels.append(os.path.relpath(os.path.join(dp, x), root))
    for rel in rels:
        print("\n".join(probe(root, rel)))


main()
