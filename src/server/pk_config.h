/*
 * pk_config: the runtime parameters CONFIG GET and CONFIG SET read and
 * write (pk_cmd_config.c holds the table and the command).  Internal to
 * src/server.
 *
 * Three kinds of parameter: those partkv acts on (maxclients,
 * proto-max-bulk-len, client-query-buffer-limit, protected-mode) are
 * copied into the server's pk_server_config when set; those describing
 * Redis's own memory layouts and tuning (hash-max-listpack-entries,
 * lazyfree-*, ...) are validated as Redis does, recorded here and
 * reported back, and change nothing; those fixed at start (port, dir,
 * appendfsync, ...) are reported and refused as immutable.
 */
#ifndef PK_SERVER_PK_CONFIG_H
#define PK_SERVER_PK_CONFIG_H

#include <stdint.h>

struct pk_server;

/* Room for the table's parameters (a static_assert checks it). */
#define PK_CONFIG_MAX 64
/* "save" holds at most this many bytes of "seconds changes" pairs. */
#define PK_CONFIG_SAVE_LEN 256

/* The recorded values, one slot per table row; part of pk_server. */
typedef struct pk_config_state {
    int64_t v[PK_CONFIG_MAX];
    char save[PK_CONFIG_SAVE_LEN]; /* normalized "s c s c", or "" */
} pk_config_state;

/* Fills s->conf with the defaults; reads nothing but s->cfg. */
void pk_config_init(struct pk_server *s);

#endif
