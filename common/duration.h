/* Durations in whole seconds: "90s", "20m", "1h30m", "2d", "01:30:00",
 * "30:00" (MM:SS), Slurm's "2-12:00:00", "2-12" and "2-12:30", and "0". */
#ifndef CADRE_DURATION_H
#define CADRE_DURATION_H

#include <stddef.h>
#include <stdint.h>

#define DURATION_MAX ((int64_t)365 * 24 * 3600 * 100)	/* 100 years */

/* 0 and *secs, or CADRE_ERR_INVALID (bad syntax; a bare number other than 0
 * has no unit) or CADRE_ERR_RANGE (over DURATION_MAX). */
int duration_parse(const char *s, int64_t *secs);
/* Compact form: "1h30m", "90s" -> "1m30s", "0s". Returns snprintf's count. */
int duration_format(int64_t secs, char *buf, size_t len);
/* Slurm's --time form: "HH:MM:SS" or "D-HH:MM:SS". */
int duration_format_slurm(int64_t secs, char *buf, size_t len);

/* The wall clock (CLOCK_REALTIME) in seconds since the epoch. */
double wall_now(void);

#endif
