/*
 * pk_salted: write-hot counters, sets and HyperLogLogs split over
 * several keys, for the user.
 *
 * A key whose write rate stays above --hot-key-writes for --hot-key-time
 * is salted by the leader of its partition: the map's salt table
 * (core/pk_pmap.h, pk_salt) gives it n parts -- part 0 the key itself,
 * parts 1..n-1 sub-keys whose hash tags place them on partitions led by
 * other nodes (core/pk_salt.h) -- so that its writes spread over n
 * partitions' logs.  Every node routes by the table:
 *
 *   INCR INCRBY DECR DECRBY INCRBYFLOAT   INCRBY(FLOAT) of one part
 *                                         (pk__salted_pick); the reply is
 *                                         the new total (read of every
 *                                         part: it counts this increment
 *                                         and every one acknowledged
 *                                         before, but increments at once
 *                                         through other parts can answer
 *                                         the same total), or with
 *                                         --salted-incr-reply local the
 *                                         part's own value
 *   GET                                   the sum of the parts
 *   SADD PFADD                            one random part, as an ordinary
 *                                         command on its name; the reply
 *                                         is that part's: a member new to
 *                                         the part, or a register of the
 *                                         part grown, counts even if
 *                                         another part has it (SCARD and
 *                                         PFCOUNT are exact)
 *   SISMEMBER SMISMEMBER SMEMBERS SCARD   the union of the parts
 *   SREM                                  every part (folding: waits)
 *   PFCOUNT key                           the parts' registers merged
 *                                         (pk_salted_sets.c)
 *   SET key value (a salted string)       at the key's leader: stamped by
 *                                         its hybrid logical clock (ms,
 *                                         counter, node), written to one
 *                                         random part unless the part
 *                                         holds a newer stamp; the first
 *                                         SET of the key in a leader term
 *                                         reads every part's stamp first
 *   GET (a salted string)                 the value with the newest stamp
 *                                         (pk_salted_more.c)
 *   DEL UNLINK EXISTS TYPE                fanned out to every part
 *   EXPIRE PEXPIRE EXPIREAT PEXPIREAT     every part (folding: waits); 1
 *   PERSIST                               when some part answered 1
 *   TTL PTTL                              every part: -2 none exists, -1
 *                                         one has no expiry, else the
 *                                         longest
 *   RENAME RENAMENX                       a salted source or destination
 *                                         is folded back first, then it
 *                                         runs
 *   any other command on the key          waits while the key is folded
 *                                         back into one, then runs as usual
 *                                         (SET with options, SET of a
 *                                         salted counter, INCR of a
 *                                         salted string, ...)
 *
 * A salted string's stamp never reaches a client: each part's stamp is a
 * key of its own beside it, in the same partition (core/pk_salt.h,
 * pk_salt_stamp), written with the value in one transaction by
 * PK.SALTADD part 0 str stamp value; part 0 holds the plain value, and
 * the fold moves a part's value into it (PK.SALTTAKE answers ["str",
 * stamp, value], PK.SALTADD key i str stamp value keeps the newer) and
 * deletes the stamps.  A key whose hot writes include SET is salted as a
 * string even when its value is a number; PK.SALT salts a number as a
 * counter, any other string as a string.
 *
 * A part first written after an EXPIRE has no expiry, and a fold keeps
 * part 0's expiry: expiring a salted key works on the parts that exist.
 *
 * What the key holds (counter, set, HLL) is decided when it is salted
 * and carried by its parts' tags (core/pk_salt.h), so a command of
 * another type (SADD to a counter) is never written to an empty part.
 *
 * A part's leader takes a write to a sub-key only while its own map says
 * the key is salted; else it answers -SALTFOLD and the write goes to part
 * 0, which every leader takes.  The parts are read first and part 0 last:
 * a fold (below) only ever moves a value from a part into part 0.
 *
 * Folding back, when the key's total write rate (part 0's times n) stays
 * under half the threshold for --unsalt-after, or by hand (PK.UNSALT):
 * the entry becomes FOLDING (writes go to part 0 only); then for each part
 * i, its value is read (PK.SALTTAKE, at a map as new as the FOLDING one:
 * a counter's value, or ["set", member...] or ["hll", value]), added to
 * part 0 together with a marker "part i is in" in one transaction
 * (PK.SALTADD with the same arguments: a sum, a union or a register max;
 * a marker already there means it was added before a crash),
 * and the part deleted (PK.SALTDROP); then the entry is removed and the
 * markers deleted.  Every step may be repeated, so a new leader of the
 * key's partition simply starts the fold again.
 *
 * The table lives in the map, so it has the map's epoch and reaches every
 * node and the proxy with it.  The range scheme has no salt table.
 *
 * Files: pk_salted.c the command path and the parts' side of a fold;
 * pk_salted_count.c counters; pk_salted_sets.c sets and HLLs;
 * pk_salted_more.c strings, hashes, sorted sets and expiry;
 * pk_salted_run.c salting and folding, and the tick (pk_salted_int.h).
 */
#ifndef PK_SERVER_PK_SALTED_H
#define PK_SERVER_PK_SALTED_H

typedef struct pk_server pk_server;
typedef struct pk_cmd_ctx pk_cmd_ctx;
typedef struct pk_conn pk_conn;
typedef struct pk_cmd pk_cmd;

int pk_salted_init(pk_server *s);
void pk_salted_free(pk_server *s);

/* Routing's first look at a keyed command (map held): 1 to route it as
 * usual, 0 when it was answered, held or sent on to a salted key's parts
 * here. */
int pk_salted_route(pk_cmd_ctx *x, const pk_cmd *cmd);

/* The salted key of a MULTI-queued command is folded back first: 0 after
 * an error reply (the transaction is aborted), else 1.  EXEC asks again
 * for every queued command (a key may have been salted since). */
int pk_salted_route_queued(pk_cmd_ctx *x, const pk_cmd *cmd);

/* Every second: salts what is write-hot, folds what is cold, resumes the
 * folds of keys whose partition this node now leads. */
void pk_salted_tick(pk_server *s);

/* c is closing: operations waiting for parts' answers drop their reply. */
void pk_salted_forget(pk_server *s, pk_conn *c);

/* Whether key (one of PK.HOTKEYS) is salted, and into how many parts. */
int pk_salted_parts(const pk_server *s, const void *key, unsigned len);

/* INFO stats lines: salted_writes_here (counter writes answered with the
 * total all here), salted_writes_called (by calls to the parts). */
struct pk_obuf;
void pk_salted_info(pk_server *s, struct pk_obuf *b);

void pk_cmd_pk_salt(pk_cmd_ctx *x);     /* PK.SALT key n | PK.UNSALT key */
void pk_cmd_pk_rawkeys(pk_cmd_ctx *x);  /* PK.RAWKEYS (a raw link) */
void pk_cmd_pk_salttake(pk_cmd_ctx *x); /* PK.SALTTAKE subkey epoch */
/* PK.SALTADD key i value|"" | key i set member... | key i hll value */
void pk_cmd_pk_saltadd(pk_cmd_ctx *x);
void pk_cmd_pk_saltdrop(pk_cmd_ctx *x); /* PK.SALTDROP subkey */

#endif
