/*
 * What checkpoint.c (reading, verifying, finding), checkpoint_hash.c (the
 * checksums) and checkpoint_write.c (writing, the writer thread) share;
 * nothing outside them includes this (checkpoint.h is their interface).
 */
#ifndef CADRE_CHECKPOINT_INT_H
#define CADRE_CHECKPOINT_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* A checkpoint's files, in meta.json's order. */
extern const char *const ckpt_files[3];

/* The hashing of checkpoint_hash.c: a file's hash fed from the memory
 * it was written from. */
struct hash_piece {
	const char	*name;
	const void	*data;
	uint64_t	 bytes;
};

struct hash_job {
	char			*path;
	struct hash_piece	*pc;
	size_t			 npc;
	uint8_t			*hdr;		/* 8 + header bytes: kept or read */
	size_t			 hdrlen;
	int			 mapped;	/* hex is of hdr + the pieces */
	char			 hex[65];
	uint64_t		 bytes;
	int			 error, saved_errno;
};

/* The headers a writer keeps: model.safetensors, trainer_state. */
struct hdr_cache {
	uint8_t		*hdr[2];
	size_t		 len[2];
};

/* A job whose file is written: its header read back (unless kept), then
 * the hash from memory. */
void *ckpt_hash_main(void *arg);
/* hashing: bit 0 set while hth[0] hashes job 0, bit 2 while hth[1]
 * hashes job 2. */
void ckpt_join_hashing(pthread_t hth[2], int *hashing);
/* After the writes: each file's hash checked or redone, into sums and
 * *bytes; the headers kept in hc (when there is one). */
int ckpt_hash_jobs_finish(struct hash_job j[3], struct hdr_cache *hc,
    char sums[3][65], uint64_t *bytes, char *err, size_t errlen);
void ckpt_hash_jobs_free(struct hash_job j[3]);

/* Removes a checkpoint dir (files only); a failure is worth a warning,
 * never an error. */
void ckpt_remove_dir(const char *dir);
/* The steps of the step-N dirs of cdir, newest first. */
size_t ckpt_list_steps(const char *cdir, int64_t **out);

#endif
