/*
 * Where cadred and the command line keep things, in one place:
 *
 *   state dir    $CADRE_STATE_DIR, else $XDG_STATE_HOME/cadre, else
 *                $HOME/.local/state/cadre
 *     cadre.db         the SQLite database (daemon/state.h)
 *     runs/RUN_ID/     one run directory per run (on a cluster the state
 *                      dir must be on a file system the nodes share)
 *   runtime dir  $CADRE_RUNTIME_DIR, else $XDG_RUNTIME_DIR/cadre, else
 *                /tmp/cadre-UID (mode 0700, checked)
 *     cadred.sock      the control socket
 *     cadred.pid       the running daemon's pid
 *
 * Every function returns 0 and a malloc'ed absolute path in *out (caller
 * frees), or CADRE_ERR_INVALID when the variables give no absolute path.
 */
#ifndef CADRE_PATHS_H
#define CADRE_PATHS_H

int paths_state_dir(char **out);
int paths_runtime_dir(char **out);
int paths_db(char **out);			/* STATE/cadre.db */
int paths_run_dir(const char *run_id, char **out);	/* STATE/runs/RUN_ID */
int paths_socket(char **out);			/* RUNTIME/cadred.sock */

/* mkdir -p of dir with mode for the directories it creates; an existing
 * last component must be a directory owned by us (and, when strict, not
 * group/other accessible): 0, or CADRE_ERR_INVALID (not ours, or open to others) / CADRE_ERR_SYSTEM with
 * the reason logged. */
int paths_mkdir(const char *dir, int mode, int strict);

#endif
