/* Connecting to an agent: the published host key pinned, the run key. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <libssh/libssh.h>

#include "agent.h"
#include "error.h"

int
agent_client_connect(const struct agent_info *ai, const char *keyfile,
    long timeout_ms, ssh_session *out, char *msg, size_t msglen)
{
	ssh_session	 s = NULL;
	ssh_key		 pinned = NULL, offered = NULL, priv = NULL;
	char		 user[256];
	long		 secs, usecs;
	int		 port = ai->port, no = 0, rc, error;

	*out = NULL;
	if (self_user(user, sizeof user) != 0) {
		snprintf(msg, msglen, "no user name for uid %lu",
		    (unsigned long)geteuid());
		return CADRE_ERR_NOT_FOUND;
	}
	if (pubkey_parse_line(ai->hostkey, strlen(ai->hostkey), &pinned) !=
	    0) {
		snprintf(msg, msglen, "%s: the published host key is not an "
		    "ssh-ed25519 key", ai->node);
		return CADRE_ERR_INVALID;
	}
	if ((s = ssh_new()) == NULL) {
		error = CADRE_ERR_NOMEM;
		snprintf(msg, msglen, "ssh_new failed");
		goto out;
	}
	secs = timeout_ms / 1000;
	usecs = (timeout_ms % 1000) * 1000;
	/* No ~/.ssh/config, no known_hosts: the only trusted key is the one
	 * the agent published in the run directory. */
	if (ssh_options_set(s, SSH_OPTIONS_PROCESS_CONFIG, &no) != SSH_OK ||
	    ssh_options_set(s, SSH_OPTIONS_HOST, ai->addr) != SSH_OK ||
	    ssh_options_set(s, SSH_OPTIONS_PORT, &port) != SSH_OK ||
	    ssh_options_set(s, SSH_OPTIONS_USER, user) != SSH_OK ||
	    ssh_options_set(s, SSH_OPTIONS_TIMEOUT, &secs) != SSH_OK ||
	    ssh_options_set(s, SSH_OPTIONS_TIMEOUT_USEC, &usecs) != SSH_OK ||
	    ssh_options_set(s, SSH_OPTIONS_HOSTKEYS, "ssh-ed25519") != SSH_OK ||
	    ssh_options_set(s, SSH_OPTIONS_KNOWNHOSTS, "/dev/null") != SSH_OK ||
	    ssh_options_set(s, SSH_OPTIONS_GLOBAL_KNOWNHOSTS, "/dev/null") !=
	    SSH_OK) {
		error = CADRE_ERR_INVALID;
		snprintf(msg, msglen, "%s: %s", ai->node, ssh_get_error(s));
		goto out;
	}
	if (ssh_connect(s) != SSH_OK) {
		error = CADRE_ERR_SYSTEM;
		snprintf(msg, msglen, "%s (%s port %d): %s", ai->node,
		    ai->addr, ai->port, ssh_get_error(s));
		goto out;
	}
	if (ssh_get_server_publickey(s, &offered) != SSH_OK ||
	    ssh_key_cmp(offered, pinned, SSH_KEY_CMP_PUBLIC) != 0) {
		error = CADRE_ERR_HOSTKEY;
		snprintf(msg, msglen, "%s (%s port %d): the host key does not "
		    "match the one the agent published in agents/%s.json: "
		    "refusing to connect (another process on that port, or "
		    "the agent restarted and its file is stale)", ai->node,
		    ai->addr, ai->port, ai->node);
		goto out;
	}
	if (keyfile != NULL) {
		if (ssh_pki_import_privkey_file(keyfile, NULL, NULL, NULL,
		    &priv) != SSH_OK) {
			error = CADRE_ERR_INVALID;
			snprintf(msg, msglen, "%s: cannot read the run's "
			    "private key", keyfile);
			goto out;
		}
		rc = ssh_userauth_publickey(s, NULL, priv);
		if (rc != SSH_AUTH_SUCCESS) {
			error = CADRE_ERR_AUTH;
			snprintf(msg, msglen, "%s (%s port %d): the agent "
			    "refused the run key for user %s%s%s", ai->node,
			    ai->addr, ai->port, user,
			    rc == SSH_AUTH_ERROR ? ": " : "",
			    rc == SSH_AUTH_ERROR ? ssh_get_error(s) : "");
			goto out;
		}
	}
	*out = s;
	s = NULL;
	error = 0;
 out:
	if (s != NULL) {
		ssh_disconnect(s);
		ssh_free(s);
	}
	ssh_key_free(pinned);
	ssh_key_free(offered);
	ssh_key_free(priv);
	return error;
}
