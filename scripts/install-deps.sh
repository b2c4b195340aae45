#!/bin/sh
# Install the Debian 12 packages quash builds, tests and benchmarks with.
# Idempotent and quick when everything is present; needs root otherwise.
set -eu

# liburing-dev and libcmocka-dev are optional to meson (-During, -Dtests) but
# installed here: make check runs the io_uring mount and the unit tests.
BUILD_PKGS="meson ninja-build pkg-config gcc libc6-dev
  libzstd-dev liblz4-dev liblzma-dev zlib1g-dev libdeflate-dev liblzo2-dev
  libfuse3-dev fuse3 libarchive-dev libcurl4-openssl-dev libcmocka-dev libxxhash-dev liburing-dev libssl-dev"
# QUASH_DEPS_TEST=1: what make check's fast tier (and make demo) run;
# QUASH_DEPS_TEST=full adds what only make check-full's servers and fleets need.
TEST_PKGS="squashfs-tools squashfs-tools-ng squashfuse attr acl strace xxd fio groff-base man-db
  libarchive-tools zstd lz4 xz-utils bzip2 cpio zip bc util-linux cryptsetup-bin nginx-light"
TEST_FULL_PKGS="nginx-light openssl curl ceph-mon ceph-osd radosgw ceph-common uuid-runtime s3fs valgrind iproute2
  debhelper lintian"
# QUASH_DEPS_DEB=1: what make deb builds the package with (debian/control's
# Build-Depends beyond BUILD_PKGS).
DEB_PKGS="debhelper dpkg-dev"
# Only what the benches compare against (make bench), never needed by make check.
BENCH_PKGS="rclone"

want=""
full=
[ "${QUASH_DEPS_TEST:-}" = full ] && full=1
for p in $BUILD_PKGS ${QUASH_DEPS_TEST:+$TEST_PKGS} ${full:+$TEST_FULL_PKGS} ${QUASH_DEPS_DEB:+$DEB_PKGS} ${QUASH_DEPS_BENCH:+$BENCH_PKGS}; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || want="$want $p"
done
[ -z "$want" ] && exit 0

if [ "$(id -u)" != 0 ]; then
	echo "install-deps: missing packages:$want (run as root, or install them)" >&2
	exit 1
fi
echo "install-deps: installing$want"
export DEBIAN_FRONTEND=noninteractive
# A fresh machine has no package lists yet; refresh at most once an hour.
if [ -z "$(find /var/lib/apt/lists -maxdepth 1 -name '*Packages*' -mmin -60 2>/dev/null | head -1)" ]; then
	apt-get update -qq
fi
# nginx must not start a system-wide server on port 80 when installed; a
# site's own policy-rc.d is put back as it was, whatever happens.
policy=/usr/sbin/policy-rc.d saved=
if [ -e "$policy" ] || [ -L "$policy" ]; then
	saved=$(mktemp -d) && mv "$policy" "$saved/" || exit 1
fi
restore_policy() {
	rm -f "$policy"
	[ -n "$saved" ] && mv "$saved/policy-rc.d" "$policy" && rmdir "$saved"
}
trap restore_policy EXIT
printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy"
apt-get install -y -qq --no-install-recommends $want >/dev/null
