/* SHA-256 through libcrypto's EVP digests. A failure of libcrypto here
 * (out of memory, no SHA-256 in the loaded provider) is a broken
 * invariant: every caller's checksum would be meaningless. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <pthread.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "error.h"
#include "log.h"
#include "sha256.h"
#include "xmalloc.h"

static pthread_once_t	crypto_once = PTHREAD_ONCE_INIT;

/*
 * No cleanup of libcrypto at exit: a process that exits (an error, a
 * signal's handler) while another of its threads hashes (the loader's
 * background check, a checkpoint writer) would free what that thread is
 * using. The system takes the memory back.
 */
static void
crypto_init(void)
{
	if (OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT, NULL) != 1)
		fatalx("libcrypto: cannot initialise");
}

void
sha256_init(struct sha256_ctx *c)
{
	EVP_MD_CTX	*md;

	pthread_once(&crypto_once, crypto_init);
	if ((md = EVP_MD_CTX_new()) == NULL ||
	    EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1)
		fatalx("libcrypto: cannot start a SHA-256 digest");
	c->md = md;
}

void
sha256_update(struct sha256_ctx *c, const void *p, size_t n)
{
	if (n > 0 && EVP_DigestUpdate(c->md, p, n) != 1)
		fatalx("libcrypto: SHA-256 update failed");
}

void
sha256_final(struct sha256_ctx *c, uint8_t out[SHA256_DIGEST_LEN])
{
	unsigned int	len = 0;

	if (EVP_DigestFinal_ex(c->md, out, &len) != 1 ||
	    len != SHA256_DIGEST_LEN)
		fatalx("libcrypto: SHA-256 final failed");
	sha256_discard(c);
}

void
sha256_discard(struct sha256_ctx *c)
{
	EVP_MD_CTX_free(c->md);
	c->md = NULL;
}

void
sha256(const void *p, size_t n, uint8_t out[SHA256_DIGEST_LEN])
{
	struct sha256_ctx	c;

	sha256_init(&c);
	sha256_update(&c, p, n);
	sha256_final(&c, out);
}

void
sha256_hex(const uint8_t *digest, size_t nbytes, char *hex)
{
	static const char	digits[] = "0123456789abcdef";
	size_t			i;

	for (i = 0; i < nbytes; i++) {
		hex[2 * i] = digits[digest[i] >> 4];
		hex[2 * i + 1] = digits[digest[i] & 0x0f];
	}
	hex[2 * nbytes] = '\0';
}

int
sha256_hex_ok(const char *s, size_t n)
{
	size_t	i;

	if (n != 2 * SHA256_DIGEST_LEN)
		return 0;
	for (i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' &&
		    s[i] <= 'f')))
			return 0;
	return 1;
}

int
sha256_file(const char *path, char hex[2 * SHA256_DIGEST_LEN + 1],
    uint64_t *bytes)
{
	struct sha256_ctx	 c;
	uint8_t			 dg[SHA256_DIGEST_LEN];
	char			*buf;
	ssize_t			 n;
	int			 fd, error = 0;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return CADRE_ERR_SYSTEM;
	buf = xmalloc(4 << 20);
	sha256_init(&c);
	*bytes = 0;
	while ((n = read(fd, buf, 4 << 20)) != 0) {
		if (n == -1) {
			if (errno == EINTR)
				continue;
			error = CADRE_ERR_SYSTEM;
			break;
		}
		sha256_update(&c, buf, (size_t)n);
		*bytes += (uint64_t)n;
	}
	free(buf);
	close(fd);
	if (error == 0) {
		sha256_final(&c, dg);
		sha256_hex(dg, SHA256_DIGEST_LEN, hex);
	} else
		sha256_discard(&c);
	return error;
}
