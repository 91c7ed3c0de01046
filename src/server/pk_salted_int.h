/*
 * pk_salted_int: what the files of salted keys share -- pk_salted.c (the
 * command path, the parts' side of a fold, the helpers below),
 * pk_salted_count.c (counters), pk_salted_run.c (salting and folding),
 * pk_salted_sets.c (sets and HyperLogLogs), pk_salted_more.c (strings,
 * hashes, sorted sets, expiry) and pk_salted_part.c (their parts' side).
 * Internal to them; the rest of the server sees pk_salted.h.
 */
#ifndef PK_SERVER_PK_SALTED_INT_H
#define PK_SERVER_PK_SALTED_INT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/pk_pmap.h"
#include "core/pk_salt.h"
#include "server/pk_link.h"

struct pk_rr;
struct uv_loop_s;

typedef struct pk_server pk_server;
typedef struct pk_cmd_ctx pk_cmd_ctx;
typedef struct pk_cmd pk_cmd;
typedef struct pk_conn pk_conn;
typedef struct pk_txn pk_txn;
typedef struct pk_uop pk_uop;
typedef struct pk_mop pk_mop;

/* A node's hybrid logical clock (pk_salted_more.c). */
#define PK__HLC_WARM 64 /* keys remembered as stamped in this term */

typedef struct pk__hlc {
    uint64_t ms; /* the newest physical milliseconds seen or stamped */
    uint32_t lc; /* the logical counter within ms */
    /* A key's stamps were read (and seen) by this node as the leader of
     * its partition at that leader epoch: slot hash % PK__HLC_WARM. */
    uint64_t warm_hash[PK__HLC_WARM], warm_epoch[PK__HLC_WARM];
} pk__hlc;

#define PK__STAMP_LEN 20 /* hex: ms (12), counter (4), node (4) */

#define PK__SALT_NAME_CAP (PK_SALT_KEY_MAX + PK_SALT_NAME_EXTRA)
#define PK__SALT_VAL_CAP 64 /* a counter part's value: a number */

/* The kind of a salted key (its parts' tags carry it). */
static inline pk_salt_kind pk__salted_kind(const pk_salt *e)
{
    return pk_salt_tag_kind(e->tags[1]);
}

/* e as an operation's own entry: into *dst, its key copied into key
 * (PK_SALT_KEY_MAX bytes), so that a map change does not take it away. */
static inline void pk__salted_own_entry(pk_salt *dst, uint8_t *key,
                                        const pk_salt *e)
{
    *dst = *e;
    memcpy(key, e->key, e->len);
    dst->key = key;
}

/* Part i's key name into out (PK__SALT_NAME_CAP bytes; part 0: the key
 * itself); its length, 0 when it does not fit. */
size_t pk__salted_part_name(const pk_salt *e, int i, uint8_t *out);

/* The address of the leader of name's partition, or NULL. */
const char *pk__salted_leader_of(const pk_server *s, const void *name,
                                 size_t len);

/* Sends argv (argc items) on a raw link to addr (NULL: PK_ENOTFOUND); cb
 * gets ctx.  Returns 0 or an error after which cb is never called. */
int pk__salted_send_to(pk_server *s, const char *addr, int argc,
                       const char *const *argv, const size_t *lens,
                       pk_link_cb cb, void *ctx);

/* pk__salted_send_to the leader of argv[1]'s partition. */
int pk__salted_send(pk_server *s, int argc, const char *const *argv,
                    const size_t *lens, pk_link_cb cb, void *ctx);

/* The node's random numbers (xorshift). */
uint64_t pk__salted_rnd(pk_server *s);

/* A value as an int64 (1), a finite float (2), or neither (0). */
int pk__salted_parse_num(const char *v, size_t len, int64_t *i, long double *f);

/* A part's reply (an integer or a string) as its value, cut to
 * PK__SALT_VAL_CAP - 1 bytes, into dst and *dlen. */
void pk__salted_keep_value(char *dst, uint8_t *dlen, const struct pk_rr *r);

/* The head of the list of set and HLL operations in flight. */
pk_uop **pk__salted_uops(pk_server *s);

/* The head of pk_salted_more.c's operations in flight. */
pk_mop **pk__salted_mops(pk_server *s);

/* This node's clock. */
pk__hlc *pk__salted_hlc(pk_server *s);

/* pk_salted_count.c.  The part a write of e goes to: at random among those this
 * node leads (the write takes no hop), or among all when it leads none or when
 * spread: a salted string's SETs, which its home stamps, all come through
 * the home, and only the home can spread them. */
int pk__salted_pick(pk_server *s, const pk_salt *e, int spread);

/* 1 when this node leads key's partition (into *part unless NULL). */
int pk__salted_leads(const pk_server *s, const void *key, size_t len,
                     uint32_t *part);

/*
 * pk_salted_count.c: a salted counter's operations on its parts.  Each
 * pk__salted_start_* answers x's client when the parts have answered: 0
 * (x waits, or has its error), as pk_salted_route.  want: what the
 * client gets.
 */
enum {
    PK__R_INT,    /* INCR INCRBY DECR DECRBY: the total as an integer */
    PK__R_FLOAT,  /* INCRBYFLOAT: the total as a float */
    PK__R_GET,    /* GET: the total, nil when no part exists */
    PK__R_EXISTS, /* EXISTS: 1 when a part exists */
    PK__R_TYPE,   /* TYPE */
    PK__R_DEL,    /* DEL UNLINK: 1 when a part existed */
};
typedef struct pk__salt_counts pk__salt_counts;
pk__salt_counts *pk__salted_counts(pk_server *s);
pk__salt_counts *pk__salted_counts_new(void);
void pk__salted_counts_free(pk__salt_counts *sd); /* NULL: a no-op */
void pk__salted_counts_forget(pk__salt_counts *sd, pk_conn *c);

/* The write of one part (pk__salted_pick; part 0 with base), then the
 * total (want: PK__R_INT or PK__R_FLOAT). */
int pk__salted_start_write(pk_cmd_ctx *x, const pk_salt *e, int want, int base);

/* A read of every part (want: PK__R_GET, PK__R_EXISTS or PK__R_TYPE). */
int pk__salted_start_read(pk_cmd_ctx *x, const pk_salt *e, int want);

/* DEL or UNLINK of the key: every part. */
int pk__salted_start_del(pk_cmd_ctx *x, const pk_salt *e);

/* A counter's write and its total all here, with no hop, when this node
 * may read every part in its own copy: 1 when x is answered so, 0 to go
 * the way of the calls (nothing was done). */
int pk__salted_total_here(pk_cmd_ctx *x, const pk_cmd *cmd, const pk_salt *e,
                          int want);

/* x's argv with argument 1 replaced by name (valid while the command
 * runs or until it is copied); 0 when out of memory. */
int pk__salted_rename_key(pk_cmd_ctx *x, const uint8_t *name, size_t len);

/*
 * pk_salted_run.c: the salting and folding runs of this node, and the
 * keys its tick follows (pk__salted_runs: the server's).
 */
typedef struct pk__salt_runs pk__salt_runs;
pk__salt_runs *pk__salted_runs(pk_server *s);
pk__salt_runs *pk__salted_runs_new(struct uv_loop_s *loop);
/* Frees the runs and closes the timer, whose close callback frees sd: the
 * loop must run after it.  NULL is a no-op. */
void pk__salted_runs_free(pk__salt_runs *sd);
void pk__salted_runs_forget(pk__salt_runs *sd, pk_conn *c);

/* Asks the key's leader to fold e back (this node or another). */
void pk__salted_ask_fold(pk_server *s, const pk_salt *e);

/* A SET of key: a hot key it writes is salted as a string. */
void pk__salted_note_set(pk_server *s, const void *key, size_t len);

/*
 * pk_salted_sets.c.  pk__salted_sets_route: a read of a salted set or
 * HLL (and SREM of a salted set) started on its parts: 0 (answered or
 * waiting for the parts), or 1 when cmd is not one of those.
 */
int pk__salted_sets_route(pk_cmd_ctx *x, const pk_cmd *cmd, const pk_salt *e);

/* c is closing: its operations drop their reply. */
void pk__salted_sets_forget(pk_server *s, pk_conn *c);

/* Frees every operation (their calls were failed by the links' close). */
void pk__salted_sets_free(pk_server *s);

/* PK.SALTTAKE of a part holding a set or an HLL: 1 after replying
 * ["set", member...] or ["hll", value], 0 when the part holds neither
 * (the caller replies the plain value). */
int pk__salted_take(pk_cmd_ctx *x, pk_txn *t);

/* PK.SALTADD key i set member... | hll value: the part's members or
 * registers into part 0 (argument 1).  Returns 0 or a store error. */
int pk__salted_add(pk_cmd_ctx *x, pk_txn *t);

/* 1 when argv[3] of PK.SALTADD names a kind (set, hll): a tagged form. */
int pk__salted_add_tagged(const pk_cmd_ctx *x);

/*
 * pk_salted_more.c.  pk__salted_more_route: a salted string's GET or SET,
 * or an expiry command of a salted key of any kind: 0 (answered or
 * waiting for the parts), 2 to route it as usual (a SET not led here
 * goes to the key's leader, which stamps it), or 1 when cmd is none of
 * those.
 */
int pk__salted_more_route(pk_cmd_ctx *x, const pk_cmd *cmd, const pk_salt *e);
void pk__salted_more_forget(pk_server *s, pk_conn *c);
void pk__salted_more_free(pk_server *s);

/* A stamp from this node's clock into out (PK__STAMP_LEN + 1 bytes). */
void pk__salted_hlc_stamp(pk_server *s, char *out);

/* The clock moves past a stamp read (anything else is ignored). */
void pk__salted_hlc_see(pk_server *s, const char *p, size_t len);

/*
 * pk_salted_part.c: a part's side of salted strings, hashes and sorted
 * sets, in PK.SALTADD's and PK.SALTTAKE's transaction.
 *
 * PK.SALTADD name i str stamp value: value and stamp into name unless its
 * stamp is as new; 0 or a store error.
 */
int pk__salted_add_str(pk_cmd_ctx *x, pk_txn *t);

/* PK.SALTTAKE of a stamped part: 1 after replying ["str", stamp, value]
 * (nil: no value), 0 when the part has no stamp. */
int pk__salted_take_str(pk_cmd_ctx *x, pk_txn *t);

/* PK.SALTTAKE of a hash or sorted-set part: 1 after replying ["hash",
 * field, value, ...] or ["zset", member, score, ...], else 0. */
int pk__salted_take_more(pk_cmd_ctx *x, pk_txn *t);

/* 1 when PK.SALTADD's argv[3] is hash or zset with pairs after it. */
int pk__salted_more_tagged(const pk_cmd_ctx *x);

/* PK.SALTADD key i hash|zset pairs: each field's value (member's score)
 * added to part 0's; 0 or a store error. */
int pk__salted_add_more(pk_cmd_ctx *x, pk_txn *t);

/* The stamp key of a part's name (a sub-key or the key); 0 if none. */
size_t pk__salted_stamp_of(const void *name, size_t len, uint8_t *out);

#endif
