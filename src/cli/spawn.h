/*
 * spawn: child node processes for `partkv cluster up` -- started with
 * their stdout on a pipe so the parent can wait for each "ready" line,
 * stopped by PID (SIGTERM, then SIGKILL after a grace period).
 */
#ifndef PK_CLI_SPAWN_H
#define PK_CLI_SPAWN_H

#include <sys/types.h>

typedef struct pk_child {
    pid_t pid;     /* 0 when not running */
    int out_fd;    /* read end of the child's stdout, -1 when closed */
    char host[64]; /* from the ready line */
    int port;      /* from the ready line; with --tls-port, the TLS port */
} pk_child;

/*
 * Starts argv[0] (an absolute path) with argv and waits up to timeout_ms
 * for its "partkv: ready on HOST:PORT pid PID" line (and, when argv has
 * --tls-port, the "partkv: tls on HOST:PORT" after it).  Returns 0, or -1
 * after printing why on stderr (the child is stopped).
 */
int pk_child_start(pk_child *c, char *const argv[], int timeout_ms);

/* SIGTERM, wait up to grace_ms, then SIGKILL.  Returns the exit status. */
int pk_child_stop(pk_child *c, int grace_ms);

/* Path of the running executable (for re-executing ourselves). */
const char *pk_self_exe(void);

#endif
