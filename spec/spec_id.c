/*
 * Run and config ids: SHA-256 over the canonical entries of the values
 * that change what a run does, in key-table order; a run's id goes on from
 * its configuration's hash with the repeat index.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "sha256.h"
#include "xmalloc.h"
#include "spec_matrix.h"

#define ID_PREFIX	"cadre-spec-v1\n"

/* Whether key k enters run ids at all. */
static int
in_ids(enum spec_key k)
{
	const struct spec_key_info	*ki = spec_key_info(k);

	return !(ki->flags & SPEC_F_NOID) && k != SPEC_K_REPEATS &&
	    ki->type != SPEC_T_MATRIX && ki->type != SPEC_T_EXCLUDE &&
	    ki->type != SPEC_T_INCLUDE && ki->type != SPEC_T_ASSIGN;
}

/* The canonical entry of one value ("" for a default: defaults are left
 * out, so a key added later with a default that keeps today's behaviour
 * keeps today's ids). */
static void
canon_entry(const struct spec *s, enum spec_key k, const struct spec_value *v,
    struct cbuf *b)
{
	if (!spec_value_equal(k, v, &s->def[k]))
		spec_value_canon(k, v, b);
}

/*
 * Entries of the keys that do not vary, made once: every configuration
 * hashes the same bytes for them (scheduler.extra may be long).
 */
char **
spec_fixed_entries(const struct spec *s)
{
	char		**fixed = xcalloc(SPEC_KEY_COUNT, sizeof *fixed);
	struct cbuf	  b;
	int		  k;

	for (k = 0; k < SPEC_KEY_COUNT; k++) {
		if (!in_ids(k) || s->varied_index[k] >= 0)
			continue;
		cbuf_init(&b, SIZE_MAX);
		canon_entry(s, k, &s->v[k], &b);
		fixed[k] = cbuf_detach(&b, NULL);
	}
	return fixed;
}

void
spec_fixed_entries_free(char **fixed)
{
	int	k;

	for (k = 0; k < SPEC_KEY_COUNT; k++)
		free(fixed[k]);
	free(fixed);
}

void
spec_hash_config(const struct spec *s, char *const *fixed,
    struct spec_config *cfg)
{
	const struct spec_value	*v;
	struct cbuf		 b;
	int			 k, custom;

	v = spec_cfg_value(s, cfg, SPEC_K_MODEL);
	custom = v->set && strcmp(v->s, "custom") == 0;
	cbuf_init(&b, SIZE_MAX);
	cbuf_adds(&b, ID_PREFIX);
	for (k = 0; k < SPEC_KEY_COUNT; k++) {
		if (!in_ids(k))
			continue;
		if (k >= SPEC_K_MODEL_LAYERS && k <= SPEC_K_MODEL_MAX_POSITION &&
		    !custom)
			continue;	/* follow from the preset */
		if (fixed[k] != NULL) {
			cbuf_adds(&b, fixed[k]);
			continue;
		}
		canon_entry(s, k, spec_cfg_value(s, cfg, k), &b);
	}
	free(cfg->canon);
	cfg->canon = cbuf_detach(&b, &cfg->canon_len);
	sha256(cfg->canon, cfg->canon_len, cfg->digest);
	sha256_hex(cfg->digest, SPEC_ID_LEN / 2, cfg->id);
}

void
spec_hash_run(const struct spec_config *cfg, unsigned repeat, char *id)
{
	struct sha256_ctx	 c;
	uint8_t			 dg[SHA256_DIGEST_LEN];
	char			 buf[32];

	sha256_init(&c);
	sha256_update(&c, cfg->canon, cfg->canon_len);
	snprintf(buf, sizeof buf, "repeat=%u\n", repeat);
	sha256_update(&c, buf, strlen(buf));
	sha256_final(&c, dg);
	sha256_hex(dg, SPEC_ID_LEN / 2, id);
}
