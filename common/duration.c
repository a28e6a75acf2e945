#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "duration.h"
#include "error.h"

/*
 * Arithmetic saturates at DUR_CAP, one past the largest accepted value, so
 * that an oversized but well-formed duration is told apart from bad syntax
 * (CADRE_ERR_RANGE against CADRE_ERR_INVALID) without ever overflowing.
 */
#define DUR_CAP		(DURATION_MAX + 1)

#define SECS_MIN	60
#define SECS_HOUR	3600
#define SECS_DAY	86400

static int
dur_isdigit(char c)
{
	return c >= '0' && c <= '9';
}

/* Reads the digits at *sp into *v (saturated); returns how many there were. */
static size_t
dur_digits(const char **sp, int64_t *v)
{
	const char	*start = *sp, *s = *sp;
	int64_t		 x = 0;

	while (dur_isdigit(*s)) {
		x = x * 10 + (*s - '0');
		if (x > DUR_CAP)
			x = DUR_CAP;
		s++;
	}
	*v = x;
	*sp = s;
	return (size_t)(s - start);
}

/* total + v * mul, saturated; all operands are non-negative. */
static int64_t
dur_addmul(int64_t total, int64_t v, int64_t mul)
{
	if (v > DUR_CAP / mul)
		return DUR_CAP;
	v *= mul;
	if (v >= DUR_CAP - total)
		return DUR_CAP;
	return total + v;
}

/* "1h30m": numbers each followed by a unit, units in d h m s order, once each. */
static int
dur_parse_units(const char *s, int64_t *secs)
{
	static const struct {
		char	unit;
		int64_t	mul;
	} units[] = {
		{ 'd', SECS_DAY },
		{ 'h', SECS_HOUR },
		{ 'm', SECS_MIN },
		{ 's', 1 },
	};
	const size_t	nunits = sizeof units / sizeof units[0];
	size_t		next = 0, i;
	int64_t		total = 0, v;

	while (*s != '\0') {
		if (dur_digits(&s, &v) == 0)
			return CADRE_ERR_INVALID;
		/* Only a unit after the previous one is accepted. */
		for (i = next; i < nunits; i++) {
			if (units[i].unit == *s)
				break;
		}
		if (i == nunits)
			return CADRE_ERR_INVALID;
		total = dur_addmul(total, v, units[i].mul);
		next = i + 1;
		s++;
	}
	*secs = total;
	return 0;
}

/* A field after ':' is exactly two digits below 60. */
static int
dur_sexagesimal(const char **sp, int64_t *v)
{
	if (**sp != ':')
		return CADRE_ERR_INVALID;
	(*sp)++;
	if (dur_digits(sp, v) != 2 || *v >= 60)
		return CADRE_ERR_INVALID;
	return 0;
}

/*
 * "MM:SS", "HH:MM:SS", and Slurm's "D-HH", "D-HH:MM", "D-HH:MM:SS". The first
 * field is unbounded ("90:00" is 90 minutes); the others are not, so that a
 * typo such as "1:75:00" is caught rather than silently normalised.
 */
static int
dur_parse_clock(const char *s, int64_t *secs)
{
	int64_t	first, h = 0, m = 0, sec = 0, total;
	size_t	n;

	if (dur_digits(&s, &first) == 0)
		return CADRE_ERR_INVALID;

	if (*s == '-') {
		s++;
		n = dur_digits(&s, &h);
		if (n < 1 || n > 2 || h >= 24)
			return CADRE_ERR_INVALID;
		if (*s == ':' && dur_sexagesimal(&s, &m) != 0)
			return CADRE_ERR_INVALID;
		if (*s == ':' && dur_sexagesimal(&s, &sec) != 0)
			return CADRE_ERR_INVALID;
		if (*s != '\0')
			return CADRE_ERR_INVALID;
		total = dur_addmul(0, first, SECS_DAY);
	} else {
		if (dur_sexagesimal(&s, &m) != 0)
			return CADRE_ERR_INVALID;
		if (*s == '\0') {
			/* MM:SS */
			sec = m;
			m = first;
		} else {
			/* HH:MM:SS */
			if (dur_sexagesimal(&s, &sec) != 0 || *s != '\0')
				return CADRE_ERR_INVALID;
			h = first;
		}
		total = 0;
	}
	total = dur_addmul(total, h, SECS_HOUR);
	total = dur_addmul(total, m, SECS_MIN);
	total = dur_addmul(total, sec, 1);
	*secs = total;
	return 0;
}

int
duration_parse(const char *s, int64_t *secs)
{
	int64_t	v;
	int	error;

	if (*s == '\0')
		return CADRE_ERR_INVALID;
	if (strcmp(s, "0") == 0) {
		*secs = 0;
		return 0;
	}
	if (strpbrk(s, ":-") != NULL)
		error = dur_parse_clock(s, &v);
	else
		error = dur_parse_units(s, &v);
	if (error != 0)
		return error;
	if (v > DURATION_MAX)
		return CADRE_ERR_RANGE;
	*secs = v;
	return 0;
}

int
duration_format(int64_t secs, char *buf, size_t len)
{
	static const struct {
		char		unit;
		uint64_t	mul;
	} units[] = {
		{ 'd', SECS_DAY },
		{ 'h', SECS_HOUR },
		{ 'm', SECS_MIN },
		{ 's', 1 },
	};
	char		 tmp[64];
	const char	*sign = "";
	uint64_t	 u, q;
	size_t		 i, off = 0;

	if (secs < 0) {
		sign = "-";
		u = -(uint64_t)secs;
	} else
		u = (uint64_t)secs;
	if (u == 0)
		return snprintf(buf, len, "0s");

	tmp[0] = '\0';
	for (i = 0; i < sizeof units / sizeof units[0]; i++) {
		q = u / units[i].mul;
		u %= units[i].mul;
		if (q != 0) {
			off += (size_t)snprintf(tmp + off, sizeof tmp - off,
			    "%" PRIu64 "%c", q, units[i].unit);
		}
	}
	return snprintf(buf, len, "%s%s", sign, tmp);
}

int
duration_format_slurm(int64_t secs, char *buf, size_t len)
{
	const char	*sign = "";
	uint64_t	 u, d, h, m, s;

	if (secs < 0) {
		sign = "-";
		u = -(uint64_t)secs;
	} else
		u = (uint64_t)secs;
	d = u / SECS_DAY;
	h = u % SECS_DAY / SECS_HOUR;
	m = u % SECS_HOUR / SECS_MIN;
	s = u % SECS_MIN;
	if (d == 0) {
		return snprintf(buf, len, "%s%02" PRIu64 ":%02" PRIu64
		    ":%02" PRIu64, sign, h, m, s);
	}
	return snprintf(buf, len, "%s%" PRIu64 "-%02" PRIu64 ":%02" PRIu64
	    ":%02" PRIu64, sign, d, h, m, s);
}

double
wall_now(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}
