/*
 * signature.c - root hash signatures: a detached PKCS#7 (DER) signature of
 * the root hash, as veritysetup open --root-hash-signature hands it to the
 * kernel, checked here with OpenSSL's CMS code against certificates the
 * admin names instead of the kernel's keyring.
 *
 * The kernel (drivers/md/dm-verity-verify-sig.c) verifies the signature
 * over the root hash as the table gives it, which libcryptsetup writes as
 * lower-case hex without a newline, and trusts a signer whose key is in its
 * keyring or chains to one; it checks no X.509 purpose and no validity
 * dates.  The same rules here: every certificate in the file is a trust
 * anchor (a partial chain is enough), no purpose or time checks, the
 * content must be pkcs7-data and detached.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/cms.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include "quash.h"
#include "verity.h"

struct qs_verity_certs {
	X509_STORE *store;          /* every certificate of the file, each a trust anchor */
	STACK_OF(X509) *list;       /* the same, to find a signer a signature does not carry */
	char *path;                 /* for messages */
};

/*
 * Up to 'max' bytes of a regular file into a new buffer.  A FIFO or device
 * is refused without a blocking open (O_NONBLOCK); O_NOFOLLOW when asked.
 * 'what' names the file in messages ("root hash signature PATH").
 */
static int read_small(int dirfd, const char *path, bool nofollow, size_t max, const char *what, uint8_t **out,
		      size_t *len)
{
	struct stat st;
	uint8_t *buf = NULL;
	size_t got = 0;
	int fd, err = 0;

	fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | (nofollow ? O_NOFOLLOW : 0));
	if (fd < 0)
		return qs_set_error(-errno, "verity: %s %s: %s", what, path,
				    errno == ELOOP && nofollow ? "a symbolic link (not followed)" : strerror(errno));
	if (fstat(fd, &st) != 0)
		err = qs_set_error(-errno, "verity: %s %s: %s", what, path, strerror(errno));
	else if (!S_ISREG(st.st_mode))
		err = qs_set_error(-EINVAL, "verity: %s %s: not a regular file", what, path);
	else if (st.st_size == 0)
		err = qs_set_error(-EINVAL, "verity: %s %s: empty file", what, path);
	else if ((uint64_t)st.st_size > max)
		err = qs_set_error(-EFBIG, "verity: %s %s: larger than %zu bytes", what, path, max);
	else if (!(buf = malloc((size_t)st.st_size + 1)))
		err = qs_set_error(-ENOMEM, "out of memory");
	/* What fstat saw is all that is read: a file that grows meanwhile is cut there. */
	while (!err && got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			err = qs_set_error(n < 0 ? -errno : -EIO, "verity: %s %s: %s", what, path,
					   n < 0 ? strerror(errno) : "shorter than it was");
		else
			got += (size_t)n;
	}
	close(fd);
	if (err) {
		free(buf);
		return err;
	}
	*out = buf;
	*len = got;
	return 0;
}

int qs_verity_read_signature(int dirfd, const char *path, bool nofollow, uint8_t **sig, size_t *len)
{
	return read_small(dirfd, path, nofollow, QS_VERITY_MAX_SIG, "root hash signature", sig, len);
}

/* The certificates of 'buf': every PEM one, or else the one DER certificate it is. */
static int parse_certs(const uint8_t *buf, size_t len, STACK_OF(X509) *list)
{
	BIO *bio = BIO_new_mem_buf(buf, (int)len);
	const unsigned char *p = buf;
	X509 *x;

	if (!bio)
		return -ENOMEM;
	while ((x = PEM_read_bio_X509(bio, NULL, NULL, NULL))) {
		if (!sk_X509_push(list, x)) {
			X509_free(x);
			BIO_free(bio);
			return -ENOMEM;
		}
	}
	BIO_free(bio);
	if (sk_X509_num(list) == 0 && (x = d2i_X509(NULL, &p, (long)len))) {
		if (p != buf + len || !sk_X509_push(list, x)) {
			X509_free(x);
			return -EINVAL;
		}
	}
	ERR_clear_error();
	return sk_X509_num(list) > 0 ? 0 : -EINVAL;
}

void qs_verity_certs_free(struct qs_verity_certs *c)
{
	if (!c)
		return;
	X509_STORE_free(c->store);
	sk_X509_pop_free(c->list, X509_free);
	free(c->path);
	free(c);
}

int qs_verity_certs_load(const char *path, struct qs_verity_certs **out)
{
	struct qs_verity_certs *c = calloc(1, sizeof(*c));
	uint8_t *buf = NULL;
	size_t len = 0;
	int ret;

	if (!c || !(c->path = strdup(path)) || !(c->list = sk_X509_new_null()) || !(c->store = X509_STORE_new())) {
		qs_verity_certs_free(c);
		return qs_set_error(-ENOMEM, "out of memory");
	}
	ret = read_small(AT_FDCWD, path, false, QS_VERITY_MAX_CERT_FILE, "certificate file", &buf, &len);
	if (ret == 0) {
		ret = parse_certs(buf, len, c->list);
		if (ret == -EINVAL)
			qs_set_error(ret, "verity: certificate file %s: no X.509 certificate in it (PEM or DER)", path);
		else if (ret < 0)
			qs_set_error(ret, "out of memory");
	}
	free(buf);
	for (int i = 0; ret == 0 && i < sk_X509_num(c->list); i++) {
		if (!X509_STORE_add_cert(c->store, sk_X509_value(c->list, i)))
			ret = qs_set_error(-ENOMEM, "out of memory");
	}
	/*
	 * Any certificate of the file anchors trust, as any key in the kernel's
	 * keyring does; neither purpose nor validity dates are checked, as the
	 * kernel checks neither.
	 */
	if (ret == 0 && (!X509_STORE_set_flags(c->store, X509_V_FLAG_PARTIAL_CHAIN | X509_V_FLAG_NO_CHECK_TIME) ||
			 !X509_STORE_set_purpose(c->store, X509_PURPOSE_ANY)))
		ret = qs_set_error(-ENOMEM, "out of memory");
	ERR_clear_error();
	if (ret < 0) {
		qs_verity_certs_free(c);
		return ret;
	}
	*out = c;
	return 0;
}

/* Why CMS_verify refused, from the reason it left on the error queue. */
static int refusal(const struct qs_verity_certs *c, const char *sig_name, const char *hex)
{
	const char *data = NULL;
	int flags = 0;
	unsigned long e = ERR_peek_last_error_data(&data, &flags);
	int reason = ERR_GET_REASON(e);
	int ret;

	if (reason == CMS_R_CERTIFICATE_VERIFY_ERROR || reason == CMS_R_SIGNER_CERTIFICATE_NOT_FOUND) {
		const char *why = reason == CMS_R_SIGNER_CERTIFICATE_NOT_FOUND ? "the signer's certificate is in neither the signature nor the file"
				  : data && (flags & ERR_TXT_STRING) && !strncmp(data, "Verify error:", 13) ? data + 13
				  : "the signer does not chain to one";

		ret = qs_set_error(-EKEYREJECTED, "verity: root hash signature %s: not signed by a certificate in %s "
				   "(%s)", sig_name, c->path, why + strspn(why, " "));
	} else {
		ret = qs_set_error(-EKEYREJECTED, "verity: root hash signature %s: does not sign root hash %s",
				   sig_name, hex);
	}
	ERR_clear_error();
	return ret;
}

int qs_verity_check_signature(const struct qs_verity_certs *c, const uint8_t *root, size_t root_len,
			      const uint8_t *sig, size_t sig_len, const char *sig_name)
{
	char hex[2 * QS_VERITY_MAX_DIGEST + 1];
	const unsigned char *p = sig;
	CMS_ContentInfo *cms;
	BIO *content;
	int ret = 0;

	if (root_len == 0 || root_len > QS_VERITY_MAX_DIGEST || sig_len == 0 || sig_len > QS_VERITY_MAX_SIG)
		return qs_set_error(-EINVAL, "verity: root hash signature %s: empty or too large", sig_name);
	/* The signed content: the root hash in lower-case hex, as libcryptsetup puts it in the kernel's table. */
	qs_verity_format_hex(root, root_len, hex);
	cms = d2i_CMS_ContentInfo(NULL, &p, (long)sig_len);
	if (!cms || p != sig + sig_len || OBJ_obj2nid(CMS_get0_type(cms)) != NID_pkcs7_signed) {
		ret = qs_set_error(-EINVAL, "verity: root hash signature %s: not a PKCS#7 signature (DER)", sig_name);
	} else if (OBJ_obj2nid(CMS_get0_eContentType(cms)) != NID_pkcs7_data || !CMS_is_detached(cms)) {
		/* the kernel takes pkcs7-data signed apart from it, the root hash given beside */
		ret = qs_set_error(-EINVAL, "verity: root hash signature %s: not a detached signature of data "
				   "(sign with openssl smime -sign -binary -noattr)", sig_name);
	} else if (!(content = BIO_new_mem_buf(hex, (int)strlen(hex)))) {
		ret = qs_set_error(-ENOMEM, "out of memory");
	} else {
		if (CMS_verify(cms, c->list, c->store, content, NULL, CMS_BINARY) != 1)
			ret = refusal(c, sig_name, hex);
		BIO_free(content);
	}
	CMS_ContentInfo_free(cms);
	ERR_clear_error();
	return ret;
}

int qs_verity_check_signature_files(const char *sig_path, const char *cert_path, const uint8_t *root,
				    size_t root_len)
{
	struct qs_verity_certs *c = NULL;
	uint8_t *sig = NULL;
	size_t sig_len = 0;
	int ret;

	ret = qs_verity_read_signature(AT_FDCWD, sig_path, false, &sig, &sig_len);
	if (ret == 0)
		ret = qs_verity_certs_load(cert_path, &c);
	if (ret == 0)
		ret = qs_verity_check_signature(c, root, root_len, sig, sig_len, sig_path);
	qs_verity_certs_free(c);
	free(sig);
	return ret;
}
