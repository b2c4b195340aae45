/*
 * verity_internal.h - what verity.c and source_verity.c share: the hashes
 * by name and one hashing context per thread.
 */
#ifndef QUASH_VERITY_INTERNAL_H
#define QUASH_VERITY_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include <openssl/evp.h>

/* The fetched digest for a supported name, or NULL (no message). */
const EVP_MD *verity_md(const char *name);

/*
 * H(salt || data) into out with the calling thread's context (created on
 * first use, freed when the thread exits): a context per thread saves an
 * allocation per block and lets threads hash without sharing anything.
 * The salt is hashed with every block, not once into a context copied per
 * block: the default salt (32 bytes) is shorter than the hash's own input
 * block, so hashing it once saves no compression, and OpenSSL 3.0's copy
 * allocates a context each time where an init reuses this one.
 * 0, or -ENOMEM / -EIO with a message.
 */
int verity_hash(const EVP_MD *md, const uint8_t *salt, size_t salt_size, const void *data, size_t len,
		uint8_t *out);

/* The same over data in pieces: H(salt || iov[0] || ... || iov[n-1]). */
int verity_hashv(const EVP_MD *md, const uint8_t *salt, size_t salt_size, const struct iovec *iov, int n,
		 uint8_t *out);

#endif
