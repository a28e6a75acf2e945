/* safetensors (https://github.com/huggingface/safetensors) read and write:
 * an 8-byte little-endian header length, a JSON header naming each tensor's
 * dtype, shape and byte range, then the data. */
#ifndef CADRE_SAFETENSORS_H
#define CADRE_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#define ST_MAX_DIMS		8
/* The bound on a header, as the reference implementation's. */
#define ST_MAX_HEADER		(100u * 1024 * 1024)

enum st_dtype { ST_F32, ST_F16, ST_BF16, ST_F64, ST_I64, ST_I32, ST_I16,
	ST_I8, ST_U8, ST_BOOL, ST_DTYPE_COUNT };

struct st_tensor {
	char		*name;
	enum st_dtype	 dtype;
	int		 ndim;
	int64_t		 shape[ST_MAX_DIMS];
	uint64_t	 begin, end;	/* byte range within the data */
};

struct st_file {
	char		*path;
	int		 fd;		/* -1 for a header parsed from memory */
	struct st_tensor *t;
	size_t		 n;
	uint64_t	 data_start;	/* 8 + header length */
	uint64_t	 data_size;
};

const char *st_dtype_name(enum st_dtype d);
size_t st_dtype_size(enum st_dtype d);

/*
 * Checks and parses a header (hdr, len bytes) of a file whose data part has
 * data_size bytes: each tensor's dtype known, shape non-negative, byte range
 * of exactly numel * size, inside the data, not overlapping another; names
 * unique. On error, CADRE_ERR_PARSE / CADRE_ERR_INVALID and a message that
 * names the tensor or the field in err. f->t and f->n are set on success.
 */
int st_parse_header(const char *hdr, size_t len, uint64_t data_size,
    struct st_file *f, char *err, size_t errlen);

/* Opens path and parses its header (at most ST_MAX_HEADER bytes). */
int st_open(const char *path, struct st_file **out, char *err, size_t errlen);
void st_close(struct st_file *f);
const struct st_tensor *st_find(const struct st_file *f, const char *name);
/* Reads tensor t's bytes into dst (t->end - t->begin bytes). */
int st_read(const struct st_file *f, const struct st_tensor *t, void *dst,
    char *err, size_t errlen);

/* A file being assembled: tensors point at the caller's memory until
 * st_writer_write(), which writes path atomically (temporary file, fsync,
 * rename). */
struct st_writer;
struct st_writer *st_writer_new(void);
void st_writer_add(struct st_writer *w, const char *name, enum st_dtype dtype,
    int ndim, const int64_t *shape, const void *data);
void st_writer_meta(struct st_writer *w, const char *key, const char *value);
int st_writer_write(struct st_writer *w, const char *path);
void st_writer_free(struct st_writer *w);

#endif
