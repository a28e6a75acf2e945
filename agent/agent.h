/* cadre-agent: the per-node SSH server (serve), its client (rsh), the head
 * node's launcher (launch) and the per-rank wrapper (rank). */
#ifndef CADRE_AGENT_H
#define CADRE_AGENT_H

#include <stddef.h>
#include <stdint.h>

#include <libssh/libssh.h>

#include "rundir.h"

/* Bounds on what the agent reads from files and peers. */
#define AGENT_INFO_MAX		(16u << 10)	/* agents/NODE.json */
#define AGENT_PUBKEY_MAX	(8u << 10)	/* keys/id_ed25519.pub */
#define AGENT_NODE_MAX		64		/* node names: [A-Za-z0-9._-] */
#define AGENT_ADDR_MAX		255
#define AGENT_HOSTKEY_MAX	1024
#define AGENT_MAX_NODES		65536
#define AGENT_ENV_MAX		64		/* env requests per session */
#define AGENT_ENV_VALUE_MAX	4096
#define AGENT_COMMAND_MAX	(256u << 10)	/* exec request string */
#define AGENT_ARGV_MAX		4096		/* words of an argv-mode command */
/* The env request that asks for an argv exec (value "argv"): the exec
 * string is then a JSON array of words, run with no shell. */
#define AGENT_EXEC_MODE_ENV	"CADRE_EXEC"
#define AGENT_STDIN_MAX		(4u << 20)	/* buffered for the command */
#define RANK_STATUS_MAX		(4u << 10)	/* log/rank-N.json */
#define RANK_MESSAGE_MAX	512		/* bytes of its "message" */

#define AGENT_INFO_VERSION	1
#define STATUS_VERSION		1

/* What serve publishes in agents/NODE.json. */
struct agent_info {
	char	node[AGENT_NODE_MAX + 1];
	char	addr[AGENT_ADDR_MAX + 1];
	int	port;
	char	hostkey[AGENT_HOSTKEY_MAX + 1];	/* "ssh-ed25519 BASE64" */
	long	pid;
	double	started;			/* seconds since the epoch */
};

/* What `rank` leaves in log/rank-R.json for launch. */
struct rank_status {
	int	rank;
	char	node[AGENT_NODE_MAX + 1];
	int	exited;		/* exit_code is valid */
	int	exit_code;	/* 0..255 */
	char	signal[16];	/* "TERM", a number, or "" */
	double	ended;		/* wall time the rank ended; 0: not known */
	int64_t	peak_rss_bytes;	/* of the command; -1: not known */
	int	oom;		/* the cgroup's OOM killer ended it */
	char	message[RANK_MESSAGE_MAX + 1];	/* why it did not run; "" */
	/* the command's last error line on stderr; "" */
	char	last_error[RANK_MESSAGE_MAX + 1];
};

/* rsh exits with this when it could not run the command at all (as ssh). */
#define RSH_EXIT_CONNECT	255

/* main.c */
int cmd_serve(int argc, char **argv);
int cmd_rsh(int argc, char **argv);
int cmd_launch(int argc, char **argv);
int cmd_rank(int argc, char **argv);
int cmd_keygen(int argc, char **argv);
int cmd_wrap(int argc, char **argv);
const char *agent_self_path(void);	/* absolute path of this program */
double now_mono(void);			/* CLOCK_MONOTONIC seconds */
double now_real(void);			/* CLOCK_REALTIME seconds */
/* The run directory from --run-dir, else $CADRE_RUN_DIR, else NULL. */
const char *rundir_default(const char *opt);

/* rundir.c */
/* dir joined with rel; caller frees. */
char *rundir_path(const char *dir, const char *rel);
/* Whether path is a directory (want_dir) or regular file owned by us with
 * no group or other permission bits. 0, or CADRE_ERR_AUTH with a message
 * naming the file and the fix in msg. */
int rundir_check_private(const char *path, int want_dir, char *msg,
    size_t msglen);
/* The run directory, keys/ and the client key pair: all private. */
int rundir_check(const char *dir, char *msg, size_t msglen);
/* Creates dir (0700) if missing, keys/ and a fresh client key pair. */
int rundir_keygen(const char *dir, char *msg, size_t msglen);
/* mkdir -m 0700 that accepts an existing private directory. */
int rundir_mkdir_private(const char *path, char *msg, size_t msglen);
/* The run's client public key (keys/id_ed25519.pub). */
int rundir_load_client_pub(const char *dir, ssh_key *out, char *msg,
    size_t msglen);
/* "ssh-ed25519 BASE64 [comment]" (len bytes, no NUL needed) -> key. */
int pubkey_parse_line(const char *text, size_t len, ssh_key *out);

/* The user name of the effective uid, into buf. */
int self_user(char *buf, size_t len);

/* agent_info.c */
/* Parses and validates one agents/NODE.json text (at most AGENT_INFO_MAX
 * bytes). On error, msg says what is wrong. */
int agent_info_parse(const char *text, size_t len, struct agent_info *ai,
    char *msg, size_t msglen);
int agent_info_load(const char *path, struct agent_info *ai, char *msg,
    size_t msglen);
/* Writes dir/agents/NODE.json atomically, 0600. */
int agent_info_publish(const char *dir, const struct agent_info *ai);
/* Finds host in dir/agents by node name, then by address. 0,
 * CADRE_ERR_NOT_FOUND, or another error with msg. */
int agent_info_find(const char *dir, const char *host, struct agent_info *ai,
    char *msg, size_t msglen);

/* Parses and validates one log/rank-R.json text (at most
 * RANK_STATUS_MAX bytes). */
int rank_status_parse(const char *text, size_t len, struct rank_status *rs,
    char *msg, size_t msglen);
int rank_status_load(const char *path, struct rank_status *rs, char *msg,
    size_t msglen);

/* ssh_connect.c */
/* Connects to the agent ai describes, checks that its host key is the
 * published one, and (keyfile != NULL) authenticates with the run key.
 * timeout_ms bounds the connect and each protocol wait. On failure msg says
 * why: CADRE_ERR_HOSTKEY for another key, CADRE_ERR_AUTH for a refusal,
 * CADRE_ERR_SYSTEM/CADRE_ERR_TIMEOUT when it could not connect. */
int agent_client_connect(const struct agent_info *ai, const char *keyfile,
    long timeout_ms, ssh_session *out, char *msg, size_t msglen);

/* session.c: one accepted connection, in a forked child of serve. */
struct session_config {
	const char	*node;
	const char	*user;		/* the only user name accepted */
	ssh_key		 client_pub;	/* the only key accepted */
	ssh_key		 host_key;
	int		 login_grace;	/* seconds for handshake + auth + exec */
};
int session_run(int fd, const struct session_config *cfg);

/* Signal names as SSH spells them ("TERM") <-> numbers; 0 / NULL if none. */
int ssh_signal_number(const char *name);
const char *ssh_signal_name(int sig);

#endif
