#!/bin/bash
# t-verity-sig.sh - root hash signatures (issue 40): a detached PKCS#7
# signature of the root hash, made as the cryptsetup docs show (openssl
# smime -sign -binary -noattr -outform DER, or openssl cms), checked
# against the admin's certificate file as veritysetup open
# --root-hash-signature has the kernel check it against its keyring.
# The oracle is openssl cms -verify on the same files with the kernel's
# rules (any certificate of the file a trust anchor, no purpose or date
# checks): quash verity verify accepts and refuses exactly where it does,
# for a self-signed signer, one without its certificate in the signature,
# a signer issued by a CA in the file, a signer's own certificate without
# its CA, a signer for TLS servers only and an expired one (the kernel
# checks neither), an unrelated signer, a signature of another root hash,
# and truncated or garbage bytes; each refusal is one line naming the file
# and the problem.  A DER certificate file works too.  The signed content
# is the root hash in lower-case hex (an upper-case operand still
# matches); an embedded (not detached) signature, a FIFO, a certificate
# file without a certificate, and one option without the other are
# refused.  The same through the offline tools (--verity-sig,
# --verity-cert) and the mount (-o verity_sig=,verity_cert=), whose mount
# table shows neither path.  A local catalog with -o verity_cert= serves
# only images whose NAME.roothash has a good NAME.roothash.p7s beside it,
# as openssl cms -verify judges each: unsigned, badly signed, unhashed,
# a symlinked or FIFO signature give EIO on entering, one log line, and
# catalog ls says why; a remote catalog and -o verity_sig= with
# --catalog are refused.
. "$(dirname "$0")/lib/tap.sh"
. "$QUASH_TOP/tests/lib/asan.sh"
. "$QUASH_TOP/tests/lib/mount.sh"

V=$WORK/t-verity-sig
trap 'unmount_all; rm -rf "$V"' EXIT
unmount_all 2>/dev/null
rm -rf "$V" && mkdir -p "$V/tree/d" "$V/s" "$V/cat" "$V/elsewhere"
S=$V/s

head -c 300000 /dev/urandom >"$V/tree/big"
seq 1 50000 >"$V/tree/d/text"
$QUASH pack --verity --no-progress "$V/tree" "$V/i.sqfs" >"$V/pack.out" || not_ok "pack --verity"
R=$(awk '/^Root hash:/ { print $3 }' "$V/pack.out")
$QUASH pack --verity --no-progress "$V/tree/d" "$V/other.sqfs" >"$V/other.out" || not_ok "pack --verity (other)"
R2=$(awk '/^Root hash:/ { print $3 }' "$V/other.out")
printf %s "$R" >"$S/root.txt"
printf %s "$R2" >"$S/root2.txt"

# Certificates: c1 a self-signed RSA signer (as the kernel's docs make one), c2 an unrelated
# one, ca with leaf, a signer it issued, tls one for TLS servers only (extendedKeyUsage
# serverAuth), old one that expired in 2020; both.pem holds c1 and ca.
selfsigned() {   # selfsigned NAME CN KEYOPTS...
	local n=$1 cn=$2; shift 2
	openssl req -x509 -newkey "$@" -nodes -keyout "$S/$n.key" -out "$S/$n.pem" -subj "/CN=$cn" -days 30 \
		2>/dev/null
}
selfsigned c1 "quash test one" rsa:2048 || not_ok "openssl req (c1)"
selfsigned c2 "quash test two" ec -pkeyopt ec_paramgen_curve:prime256v1 || not_ok "openssl req (c2)"
selfsigned ca "quash test CA" ec -pkeyopt ec_paramgen_curve:prime256v1 || not_ok "openssl req (ca)"
openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$S/leaf.key" \
	-out "$S/leaf.csr" -subj "/CN=quash test leaf" 2>/dev/null &&
	openssl x509 -req -in "$S/leaf.csr" -CA "$S/ca.pem" -CAkey "$S/ca.key" -CAcreateserial -days 30 \
		-out "$S/leaf.pem" 2>/dev/null || not_ok "openssl x509 -req (leaf)"
selfsigned tls "quash test TLS" ec -pkeyopt ec_paramgen_curve:prime256v1 -addext extendedKeyUsage=serverAuth ||
	not_ok "openssl req (tls)"
mkdir -p "$S/ca.d" && : >"$S/ca.d/index.txt" && echo 01 >"$S/ca.d/serial"
printf '[ca]\ndefault_ca = d\n[d]\ndatabase = %s\nserial = %s\nnew_certs_dir = %s\ndefault_md = sha256\npolicy = p\n[p]\ncommonName = supplied\n' \
	"$S/ca.d/index.txt" "$S/ca.d/serial" "$S/ca.d" >"$S/ca.cnf"
openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$S/old.key" \
	-out "$S/old.csr" -subj "/CN=quash test expired" 2>/dev/null &&
	openssl ca -batch -config "$S/ca.cnf" -selfsign -keyfile "$S/old.key" -in "$S/old.csr" \
		-startdate 200101000000Z -enddate 200102000000Z -out "$S/old.pem" >/dev/null 2>&1 ||
	not_ok "openssl ca (old)"
cat "$S/c1.pem" "$S/ca.pem" >"$S/both.pem"

sign() {   # sign OUT CONTENT CERT [EXTRA...]: openssl smime, as the cryptsetup docs have it
	local out=$1 in=$2 cert=$3; shift 3
	openssl smime -sign -binary -noattr -outform DER -in "$in" -signer "$S/$cert.pem" -inkey "$S/$cert.key" \
		-out "$S/$out.p7s" "$@" || not_ok "openssl smime -sign ($out)"
}
sign good "$S/root.txt" c1
sign nocerts "$S/root.txt" c1 -nocerts
sign wrongcert "$S/root.txt" c2
sign leaf "$S/root.txt" leaf
sign tls "$S/root.txt" tls
sign old "$S/root.txt" old
sign other "$S/root2.txt" c1
sign attached "$S/root.txt" c1 -nodetach
openssl cms -sign -binary -noattr -outform DER -in "$S/root.txt" -signer "$S/c1.pem" -inkey "$S/c1.key" \
	-out "$S/cms.p7s" || not_ok "openssl cms -sign"
head -c 200 "$S/good.p7s" >"$S/trunc.p7s"
head -c 700 /dev/urandom >"$S/garbage.p7s"

# oracle SIG CERT CONTENT: openssl cms -verify with the kernel's rules: every certificate of
# CERT a trust anchor (-partial_chain), found by issuer and serial when the signature carries
# none (-certfile), no purpose or validity checks.
oracle() {
	openssl cms -verify -binary -inform DER -in "$1" -content "$3" -CAfile "$2" -certfile "$2" \
		-partial_chain -purpose any -no_check_time -out /dev/null 2>/dev/null
}

# ---- quash verity verify --root-hash-signature, against the oracle --------------------------
# SIG CERT VERDICT [PATTERN]: PATTERN is the refusal's problem after "SIG: ".
cases=(
	"good c1 accepted"
	"cms c1 accepted"
	"nocerts c1 accepted"
	"leaf ca accepted"
	"leaf leaf accepted"        # the signer itself as the anchor, its CA absent: as a key in the keyring
	"tls tls accepted"          # no purpose checks, as the kernel makes none
	"old old accepted"          # no validity dates either: the kernel does not trust its clock
	"wrongcert c1 refused|not signed by a certificate in CERT \\(self-signed certificate\\)"
	"good c2 refused|not signed by a certificate in CERT \\(self-signed certificate\\)"
	"leaf c1 refused|not signed by a certificate in CERT \\(unable to get local issuer certificate\\)"
	"nocerts c2 refused|not signed by a certificate in CERT \\(the signer's certificate is in neither the signature nor the file\\)"
	"other c1 refused|does not sign root hash $R"
	"trunc c1 refused|not a PKCS#7 signature \\(DER\\)"
	"garbage c1 refused|not a PKCS#7 signature \\(DER\\)"
)
for c in "${cases[@]}"; do
	read -r sig cert verdict <<<"${c%%|*}"
	problem=${c#*|}
	oracle "$S/$sig.p7s" "$S/$cert.pem" "$S/root.txt" && o=accepted || o=refused
	$QUASH_ASAN verity verify --root-hash-signature "$S/$sig.p7s" --cert "$S/$cert.pem" "$V/i.sqfs" "$R" \
		>/dev/null 2>"$V/q.err" && q=accepted || q=refused
	check "verity verify, $sig.p7s by $cert.pem: $verdict, as openssl cms -verify says (quash $q, openssl $o)" \
		bash -c "[ $q = $verdict ] && [ $o = $verdict ] && ! grep -qE 'Sanitizer|runtime error:' '$V/q.err'"
	if [ "$verdict" = refused ]; then
		check_fails "verity verify, $sig.p7s by $cert.pem: exit 1, one line naming the file" 1 \
			"^quash: verity: root hash signature $(ere "$S/$sig.p7s"): ${problem//CERT/$(ere "$S/$cert.pem")}\$" \
			one_line $QUASH_ASAN verity verify --root-hash-signature "$S/$sig.p7s" --cert "$S/$cert.pem" \
			"$V/i.sqfs" "$R"
	fi
done
check "verity verify: the signed content is the root hash in lower case, as libcryptsetup gives the kernel (an upper-case operand matches)" \
	qa "$V/v.out" $QUASH_ASAN verity verify --root-hash-signature "$S/good.p7s" --cert "$S/c1.pem" \
	"$V/i.sqfs" "${R^^}"
openssl x509 -in "$S/c1.pem" -outform DER -out "$S/c1.der"
check "verity verify: a certificate file in DER (as loaded into a kernel keyring) works too" \
	qa "$V/v.out" $QUASH_ASAN verity verify --root-hash-signature "$S/good.p7s" --cert "$S/c1.der" "$V/i.sqfs" "$R"
check_fails "verity verify: a signature that carries its content is refused, as the kernel refuses it" 1 \
	"^quash: verity: root hash signature $(ere "$S/attached.p7s"): not a detached signature of data " \
	one_line $QUASH_ASAN verity verify --root-hash-signature "$S/attached.p7s" --cert "$S/c1.pem" "$V/i.sqfs" "$R"
mkfifo "$S/fifo.p7s"
check_fails "verity verify: a FIFO as the signature is refused without blocking" 1 \
	"^quash: verity: root hash signature $(ere "$S/fifo.p7s"): not a regular file$" \
	one_line timeout 20 $QUASH_ASAN verity verify --root-hash-signature "$S/fifo.p7s" --cert "$S/c1.pem" \
	"$V/i.sqfs" "$R"
check_fails "verity verify: a certificate file without a certificate (a key) is refused" 1 \
	"^quash: verity: certificate file $(ere "$S/c1.key"): no X\.509 certificate in it \(PEM or DER\)$" \
	one_line $QUASH_ASAN verity verify --root-hash-signature "$S/good.p7s" --cert "$S/c1.key" "$V/i.sqfs" "$R"
check_fails "verity verify: --root-hash-signature without --cert is exit 2" 2 \
	"^quash: verity: --root-hash-signature needs --cert to check it against$" \
	two_lines $QUASH_ASAN verity verify --root-hash-signature "$S/good.p7s" "$V/i.sqfs" "$R"

# ---- the offline tools --------------------------------------------------------------------
check "quash cat --verity-sig (good) --verity-cert: the file, and nothing on stderr" bash -c \
	"$QUASH_ASAN cat --verity $R --verity-sig '$S/good.p7s' --verity-cert '$S/c1.pem' '$V/i.sqfs' big \
	2>'$V/cat.err' | cmp -s - '$V/tree/big' && ! grep -q . '$V/cat.err'"
check_fails "quash ls with a signature by another certificate: exit 1, one line" 1 \
	"^quash: $(ere "$V/i.sqfs"): verity: root hash signature $(ere "$S/wrongcert.p7s"): not signed by a certificate in $(ere "$S/c1.pem") " \
	one_line $QUASH_ASAN ls --verity $R --verity-sig "$S/wrongcert.p7s" --verity-cert "$S/c1.pem" "$V/i.sqfs"
check_fails "quash extract with a signature of another root hash: exit 1, one line" 1 \
	"^quash: $(ere "$V/i.sqfs"): verity: root hash signature $(ere "$S/other.p7s"): does not sign root hash $R$" \
	one_line $QUASH_ASAN extract --verity $R --verity-sig "$S/other.p7s" --verity-cert "$S/c1.pem" \
	"$V/i.sqfs" -C "$V/x"
check_fails "quash cat --verity-sig without --verity-cert is exit 2" 2 \
	"^quash: cat: --verity-sig needs --verity-cert to check it against$" \
	two_lines $QUASH_ASAN cat --verity $R --verity-sig "$S/good.p7s" "$V/i.sqfs" big
check_fails "quash info --verity-sig and --verity-cert without --verity: exit 1, one line" 1 \
	"verity: a root hash signature or certificate is given without the root hash$" \
	one_line $QUASH_ASAN info --verity-sig "$S/good.p7s" --verity-cert "$S/c1.pem" "$V/i.sqfs"

# ---- the mount ----------------------------------------------------------------------------
fg_mount() {   # a mount expected to be refused: bounded, and unmounted at exit if it came up
	QM_MOUNTS+=("f:$V/m")
	timeout -k 5 30 "$@"
}
qmount "$V/m" $QUASH_ASAN mount -o verity=$R,verity_sig="$S/good.p7s",verity_cert="$S/c1.pem" "$V/i.sqfs" "$V/m" ||
	not_ok "mount -o verity_sig="
check "mount -o verity_sig=,verity_cert= (good): files read right" bash -c \
	"cmp -s '$V/m/big' '$V/tree/big' && cmp -s '$V/m/d/text' '$V/tree/d/text'"
check "mount: neither the signature's nor the certificate's path is in the mount table" bash -c \
	"grep -F ' $V/m ' /proc/self/mountinfo | grep -q . && ! grep -F ' $V/m ' /proc/self/mountinfo | grep -qE 'p7s|c1\.pem'"
unmount_all
check_fails "mount with a signature of another root hash is refused in one line" 1 \
	"verity: root hash signature $(ere "$S/other.p7s"): does not sign root hash $R$" \
	one_line fg_mount $QUASH_ASAN mount -f -o verity=$R,verity_sig="$S/other.p7s",verity_cert="$S/c1.pem" \
	"$V/i.sqfs" "$V/m"
check_fails "mount with a signature by another certificate is refused in one line" 1 \
	"verity: root hash signature $(ere "$S/good.p7s"): not signed by a certificate in $(ere "$S/c2.pem") " \
	one_line fg_mount $QUASH_ASAN mount -f -o verity=$R,verity_sig="$S/good.p7s",verity_cert="$S/c2.pem" \
	"$V/i.sqfs" "$V/m"
check_fails "mount -o verity_sig= without verity_cert= is refused" 2 \
	"-o verity_sig= needs -o verity_cert= to check the signature against$" \
	one_line fg_mount $QUASH_ASAN mount -f -o verity=$R,verity_sig="$S/good.p7s" "$V/i.sqfs" "$V/m"
check_fails "mount -o verity_cert= without verity_sig= is refused" 2 \
	"-o verity_cert= is given without -o verity_sig= " \
	one_line fg_mount $QUASH_ASAN mount -f -o verity=$R,verity_cert="$S/c1.pem" "$V/i.sqfs" "$V/m"
check_fails "mount --catalog -o verity_sig= is refused" 2 "-o verity_sig= is for one image, not a catalog" \
	one_line fg_mount $QUASH_ASAN mount --catalog -f -o verity_sig="$S/good.p7s" "$V/cat" "$V/m"
check_fails "mount --catalog of a remote index with -o verity_cert= is refused" 2 \
	"-o verity_cert= is for a local catalog" \
	one_line fg_mount $QUASH_ASAN mount --catalog -f -o verity_cert="$S/c1.pem" http://127.0.0.1:9/index.txt "$V/m"
unmount_all

# ---- a catalog with -o verity_cert= -------------------------------------------------------
# NAME SIGNATURE: an image with NAME.roothash and NAME.roothash.p7s a copy of SIGNATURE.
image() {
	cp "$V/i.sqfs" "$V/cat/$1.sqfs" && echo "$R" >"$V/cat/$1.roothash"
	if [ -n "${2:-}" ]; then cp "$S/$2.p7s" "$V/cat/$1.roothash.p7s"; fi
}
image good good
image chain leaf            # issued by ca, which both.pem holds beside c1
image wrongcert wrongcert
image othersig other
image garbage garbage
image unsigned
cp "$V/i.sqfs" "$V/cat/nohash.sqfs"
image link && cp "$S/good.p7s" "$V/elsewhere/x.p7s" && ln -s "$V/elsewhere/x.p7s" "$V/cat/link.roothash.p7s"
image fifo && mkfifo "$V/cat/fifo.roothash.p7s"
qmount "$V/c" $QUASH_ASAN mount --catalog -o verity_cert="$S/both.pem",log="$V/c.log" "$V/cat" "$V/c" ||
	not_ok "mount --catalog -o verity_cert="
check "catalog: the .roothash.p7s files are no images ($(ls "$V/c" | tr '\n' ' '))" \
	[ "$(ls "$V/c" | tr '\n' ' ')" = "chain fifo garbage good link nohash othersig unsigned wrongcert " ]
check "catalog: an image with a good signature reads right" bash -c \
	"cmp -s '$V/c/good/big' '$V/tree/big' && cmp -s '$V/c/good/d/text' '$V/tree/d/text'"
check "catalog: an image signed by a signer the CA in the file issued reads right" \
	cmp -s "$V/c/chain/big" "$V/tree/big"
failed_because() {   # NAME ERE: entering NAME fails with EIO, and catalog ls says ERE
	local err
	err=$(ls "$V/c/$1" 2>&1 >/dev/null)
	[[ $err == *"Input/output error"* ]] &&
		"$QUASH" catalog ls "$V/c" | grep -E "^$1[[:space:]]+failed" | grep -qE "$2"
}
check "catalog: a signature by a certificate not in the file: EIO, and catalog ls says why" \
	failed_because wrongcert "root hash signature wrongcert\.roothash\.p7s: not signed by a certificate in $(ere "$S/both.pem")"
check "catalog: a signature of another root hash: EIO, and catalog ls says why" \
	failed_because othersig "root hash signature othersig\.roothash\.p7s: does not sign root hash $R$"
check "catalog: a garbage signature: EIO, and catalog ls says why" \
	failed_because garbage "garbage\.roothash\.p7s: not a PKCS#7 signature \(DER\)$"
check "catalog: a root hash without a signature: EIO, never served unsigned" \
	failed_because unsigned "no unsigned\.roothash\.p7s: with -o verity_cert= every image's root hash must be signed$"
check "catalog: an image without a root hash: EIO, never served unverified" \
	failed_because nohash "no nohash\.roothash: with -o verity_cert= every image needs a signed root hash$"
check "catalog: a signature that is a symlink is not followed" \
	failed_because link "link\.roothash\.p7s: a symbolic link \(not followed\)$"
check "catalog: a signature that is a FIFO is refused without blocking" \
	failed_because fifo "fifo\.roothash\.p7s: not a regular file$"
bad=0
for n in wrongcert othersig garbage unsigned nohash link fifo; do
	[ "$(grep -c "[:/]$n\.sqfs: " "$V/c.log")" = 1 ] || bad=$((bad + 1))
done
check "catalog: each refused image is one log line naming it ($bad not)" [ $bad = 0 ]
# The oracle on each image with a regular signature file: served iff openssl cms -verify accepts.
disagree=""
for p in "$V"/cat/*.roothash.p7s; do
	n=$(basename "$p" .roothash.p7s)
	[ -f "$p" ] && [ ! -L "$p" ] || continue
	oracle "$p" "$S/both.pem" "$S/root.txt" && o=served || o=refused
	ls "$V/c/$n/big" >/dev/null 2>&1 && q=served || q=refused
	[ $o = $q ] || disagree="$disagree $n(quash $q, openssl $o)"
done
check "catalog: an image is served iff openssl cms -verify accepts its signature${disagree:+:$disagree}" \
	test -z "$disagree"
unmount_all
