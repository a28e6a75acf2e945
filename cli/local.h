/*
 * The monitor in this process (cli/local.c): `cadre run` and `cadre rerun`
 * drive runs with it; status and logs read the state with it, read-only,
 * when cadred does not answer.
 */
#ifndef CADRE_CLI_LOCAL_H
#define CADRE_CLI_LOCAL_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "monitor.h"

struct state;
struct notifier;
struct cli_local {
	struct monitor_config	 cfg;
	struct state		*st;
	struct monitor		*m;
	struct notifier		*nt;
	char			*db;
};
/* Opens the state directory's database and a monitor over it: read-only
 * with every experiment loaded, or read-write with none (the command
 * loads or submits the one it drives; config: --config, NULL: cadred's
 * file). Messages start with "cadre WHO: ". */
int cli_local_open(const char *who, const char *config, int readonly,
    struct cli_local *l);
void cli_local_close(struct cli_local *l);
/* Drives experiment exp until every run has ended, with progress on
 * stderr (a block redrawn on a terminal; otherwise a line per change and
 * every progress_every seconds per running run; < 0: none), then prints
 * the status table and the report. Ctrl-C cancels the runs. Returns
 * CLI_EXIT_OK when every run is done, else CLI_EXIT_FAIL. */
int cli_local_drive(const char *who, struct cli_local *l, const char *exp,
    double progress_every);
/* A run's progress line (of a status JSON run object): a bar on a
 * terminal, plain words otherwise. */
void cli_progress_line(const json_t *r, int tty, char *buf, size_t len);
/* Whether every run of a status JSON is done (the exit status of run,
 * rerun and watch). */
int cli_all_done(const json_t *st);
/* A string ("" when missing) and an integer (0) member of a reply. */
const char *cli_jstr(const json_t *o, const char *key);
int64_t cli_jint(const json_t *o, const char *key);

#endif
