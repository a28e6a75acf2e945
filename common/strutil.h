/* Small string helpers shared by the parsers. */
#ifndef CADRE_STRUTIL_H
#define CADRE_STRUTIL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Levenshtein distance between a and b, stopping early once it exceeds
 * limit (then returns limit + 1). For "did you mean" suggestions. */
size_t str_edit_distance(const char *a, const char *b, size_t limit);

/* Whether s (len bytes) is valid UTF-8 (no overlongs, no surrogates, no
 * code point over U+10FFFF). When it is not, *badpos gets the offset of the
 * first bad byte. */
int str_valid_utf8(const char *s, size_t len, size_t *badpos);

/* Line and column (both 1-based, column in characters, not bytes) of byte
 * offset pos in text. */
void str_line_col(const char *text, size_t len, size_t pos, size_t *line,
    size_t *col);

/* Strict decimal integer with optional sign, whole string, no spaces:
 * 0, CADRE_ERR_INVALID or CADRE_ERR_RANGE. */
int str_to_int64(const char *s, int64_t *out);
/* Strict finite double ("1e-4", "0.5", "6e-3"): whole string, no spaces,
 * no nan/inf: 0, CADRE_ERR_INVALID or CADRE_ERR_RANGE. */
int str_to_double(const char *s, double *out);

/* A 32-bit hash of len bytes for hash tables (FNV-1a with a final mix so
 * that the low bits index well); not for anything an attacker chooses
 * the keys of and the table must stay fast for. */
uint32_t str_hash(const void *s, size_t len);

/* Whether s may stand as it is in a scheduler directive (#SBATCH, #PBS)
 * or a slurmrestd field: 1..max bytes of A-Z a-z 0-9, the characters of
 * STR_SCHED_WORD_CHARS and those of extra (NULL: none), e.g. a Slurm
 * constraint's STR_SCHED_CONSTRAINT_CHARS. */
#define STR_SCHED_WORD_CHARS		"._,:=+/@%^~![]{}-"
#define STR_SCHED_CONSTRAINT_CHARS	"&|()*"
int str_is_sched_word(const char *s, size_t max, const char *extra);
/* Whether s matches [A-Za-z0-9._-]{1,max}. */
int str_is_name(const char *s, size_t max);
/* Whether s[0..len) is an environment variable name: [A-Za-z_][A-Za-z0-9_]*,
 * 1..256 bytes. */
int str_is_env_name_n(const char *s, size_t len);
#define str_is_env_name(s)	str_is_env_name_n((s), strlen(s))
/* Whether s has at most max bytes and no control character (a path or
 * value may hold anything else where it is quoted). */
int str_no_control(const char *s, size_t max);

/*
 * A spec path as the node sees it (docs/spec.md "path"): one that starts
 * with $NAME or ${NAME} followed by '/' or its end gets the variable's
 * value from this process's environment in its place; any other path is
 * copied. 0 and *out (caller frees); CADRE_ERR_NOT_FOUND when the
 * variable is unset or empty, CADRE_ERR_INVALID when the result is not an
 * absolute path or the reference is malformed; *var (when not NULL) gets
 * the variable's name for the message (caller frees), else NULL.
 */
int path_expand_env(const char *in, char **out, char **var);

#endif
