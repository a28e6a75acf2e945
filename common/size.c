#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "size.h"

/*
 * Fraction digits past this many are checked but not used: even after
 * multiplying by 1024^5 they cannot move the result by a whole byte except
 * when deciding a tie in the rounding.
 */
#define SIZE_FRAC_DIGITS	40

static int
size_isdigit(char c)
{
	return c >= '0' && c <= '9';
}

/*
 * The unit after the number: sets the base (1, 1000 or 1024) and the power.
 * The prefix letter may be either case, "B" and "iB" are taken as written
 * so that "Gb" (bits) or "GIB" are refused rather than guessed at.
 */
static int
size_unit(const char *u, unsigned int *base, unsigned int *power)
{
	static const char	 letters[] = "kmgtp";
	const char		*l;
	char			 c;

	*base = 1;
	*power = 0;
	if (*u == '\0' || strcmp(u, "B") == 0)
		return 0;

	c = *u;
	if (c >= 'A' && c <= 'Z')
		c = (char)(c - 'A' + 'a');
	if ((l = strchr(letters, c)) == NULL || c == '\0')
		return CADRE_ERR_INVALID;
	*power = (unsigned int)(l - letters) + 1;
	u++;
	if (*u == '\0' || strcmp(u, "iB") == 0)
		*base = 1024;
	else if (strcmp(u, "B") == 0)
		*base = 1000;
	else
		return CADRE_ERR_INVALID;
	return 0;
}

int
size_parse(const char *s, int64_t *bytes)
{
	uint8_t		 frac[SIZE_FRAC_DIGITS];
	const char	*p = s;
	uint64_t	 ip = 0, fp = 0, t, carry;
	size_t		 nfrac = 0, i;
	unsigned int	 base, power, j, d;
	int		 over = 0, has_frac = 0, error;

	if (!size_isdigit(*p))
		return CADRE_ERR_INVALID;
	for (; size_isdigit(*p); p++) {
		d = (unsigned int)(*p - '0');
		if (ip > ((uint64_t)INT64_MAX - d) / 10)
			over = 1;
		else
			ip = ip * 10 + d;
	}
	if (*p == '.') {
		has_frac = 1;
		p++;
		if (!size_isdigit(*p))
			return CADRE_ERR_INVALID;
		for (; size_isdigit(*p); p++) {
			if (nfrac < SIZE_FRAC_DIGITS)
				frac[nfrac++] = (uint8_t)(*p - '0');
		}
	}
	if ((error = size_unit(p, &base, &power)) != 0)
		return error;
	/* A fraction of a byte means nothing. */
	if (has_frac && power == 0)
		return CADRE_ERR_INVALID;
	if (over)
		return CADRE_ERR_RANGE;

	/*
	 * Multiply the fraction by the base power times as a decimal string,
	 * exactly: its integer part collects in fp, and the first digit left
	 * over rounds half up.
	 */
	for (j = 0; j < power; j++) {
		if (ip > (uint64_t)INT64_MAX / base)
			return CADRE_ERR_RANGE;
		ip *= base;
		carry = 0;
		for (i = nfrac; i-- > 0;) {
			t = frac[i] * (uint64_t)base + carry;
			frac[i] = (uint8_t)(t % 10);
			carry = t / 10;
		}
		fp = fp * base + carry;
	}
	if (nfrac > 0 && frac[0] >= 5)
		fp++;
	if (fp > (uint64_t)INT64_MAX - ip)
		return CADRE_ERR_RANGE;
	*bytes = (int64_t)(ip + fp);
	return 0;
}

int
size_format(int64_t bytes, char *buf, size_t len)
{
	static const char *const units[] = {
		"B", "KiB", "MiB", "GiB", "TiB", "PiB"
	};
	size_t	i = 0;

	if (bytes > 0) {
		while (i < sizeof units / sizeof units[0] - 1 &&
		    bytes % 1024 == 0) {
			bytes /= 1024;
			i++;
		}
	}
	return snprintf(buf, len, "%" PRId64 "%s", bytes, units[i]);
}
