/* Signals through a pipe: the handler only writes the signal's number as
 * one byte, and the event loop reads it from the pipe's read end along
 * with its other descriptors. One pipe a process: a forked child that
 * wants its own opens it again. */
#ifndef CADRE_SIGPIPE_H
#define CADRE_SIGPIPE_H

#include <stddef.h>

/* Opens the pipe (both ends close-on-exec and non-blocking), routes the n
 * signals of sigs to it and ignores SIGPIPE. Returns the read end, or
 * CADRE_ERR_SYSTEM with errno set. A pipe opened before (inherited through
 * fork) is closed first. */
int sigpipe_open(const int *sigs, size_t n);
/* Closes the pipe; the handlers stay and write nothing from then on. */
void sigpipe_close(void);

#endif
