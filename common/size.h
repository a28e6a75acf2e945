/* Byte sizes: "512M", "2GiB", "1.5G", "100kB", "4096". K/M/G/T/P alone and
 * KiB/MiB/... are powers of 1024 (as Slurm's --mem); kB/MB/GB/TB/PB are
 * powers of 1000. A bare number is bytes. */
#ifndef CADRE_SIZE_H
#define CADRE_SIZE_H

#include <stddef.h>
#include <stdint.h>

/* 0 and *bytes, or CADRE_ERR_INVALID / CADRE_ERR_RANGE (over INT64_MAX). */
int size_parse(const char *s, int64_t *bytes);
/* Largest binary unit that divides exactly: "2GiB", "512MiB", "1000B". */
int size_format(int64_t bytes, char *buf, size_t len);

#endif
