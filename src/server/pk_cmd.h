/*
 * pk_cmd: the command table -- name, arity, flags and key positions of
 * every command a node serves, as COMMAND reports them to clients -- its
 * dispatch, and the command implementations (pk_cmd_*.c; the commands of
 * a module are declared in its own header).  What command code shares
 * with the modules (pk_cmd, argument and reply helpers) is pk_ctx.h.
 * Internal to src/server.
 */
#ifndef PK_SERVER_PK_CMD_H
#define PK_SERVER_PK_CMD_H

#include <stdint.h>

#include "server/pk_ctx.h"
#include "server/pk_srv.h"
#include "store/pk_key.h"
#include "store/pk_slice.h"

/* The command named by a (any case), or NULL. */
const pk_cmd *pk_cmd_find(const char *name, size_t len);

/* Whether the command named by a (any case) runs only for a connection
 * that presented the cluster secret (PK.AUTH): node-to-node commands,
 * whose frames may be large (PK.REPL PUSH, PK.MOVE). */
int pk_cmd_internal(const char *name, size_t len);

/* The whole table, sorted; *n receives its length. */
const pk_cmd *pk_cmd_table(size_t *n);

/* Command implementations, one file per family. */
/* clang-format off */
#define PK__CMDS(X)                                                            \
    X(append)                                                                  \
    X(auth)                                                                    \
    X(client)                                                                  \
    X(command)                                                                 \
    X(config)                                                                  \
    X(dbsize)                                                                  \
    X(decr) X(decrby) X(del) X(echo) X(exists) X(expire) X(flushall) X(function) X(get)    \
        X(getdel) X(hdel) X(hello) X(hexists) X(hget) X(hgetall) X(hincrby)    \
            X(hlen) X(hmget) X(hset) X(incr) X(incrby) X(info) X(mget) X(mset) \
                X(persist) X(pexpire) X(ping) X(pk_auth) X(pk_coord)           \
                    X(pk_partitions) X(pttl) X(quit) X(reset) X(scan)          \
                        X(select) X(set) X(shutdown) X(strlen) X(ttl) X(type)  \
                            X(zadd) X(zcard) X(zrange) X(zrangebylex)          \
                                X(zrangebyscore) X(zrem) X(zrevrange)          \
                                    X(zscore)
/* clang-format on */
/* Sets (pk_cmd_set.c) and HyperLogLog (pk_cmd_hll.c). */
void pk_cmd_sadd(pk_cmd_ctx *x);
void pk_cmd_scard(pk_cmd_ctx *x);
void pk_cmd_sdiff(pk_cmd_ctx *x);
void pk_cmd_sdiffstore(pk_cmd_ctx *x);
void pk_cmd_sinter(pk_cmd_ctx *x);
void pk_cmd_sintercard(pk_cmd_ctx *x);
void pk_cmd_sinterstore(pk_cmd_ctx *x);
void pk_cmd_sismember(pk_cmd_ctx *x);
void pk_cmd_smembers(pk_cmd_ctx *x);
void pk_cmd_smismember(pk_cmd_ctx *x);
void pk_cmd_smove(pk_cmd_ctx *x);
void pk_cmd_spop(pk_cmd_ctx *x);
void pk_cmd_srandmember(pk_cmd_ctx *x);
void pk_cmd_srem(pk_cmd_ctx *x);
void pk_cmd_sscan(pk_cmd_ctx *x);
void pk_cmd_sunion(pk_cmd_ctx *x);
void pk_cmd_sunionstore(pk_cmd_ctx *x);
int pk_cmd_sintercard_keys(int argc, const pk_arg *argv, pk_keyrun *r);
void pk_cmd_pfadd(pk_cmd_ctx *x);
void pk_cmd_pfcount(pk_cmd_ctx *x);
void pk_cmd_pfmerge(pk_cmd_ctx *x);

/* Lists (pk_cmd_list.c). */
void pk_cmd_blmove(pk_cmd_ctx *x);
void pk_cmd_blmpop(pk_cmd_ctx *x);
void pk_cmd_blpop(pk_cmd_ctx *x);
void pk_cmd_brpop(pk_cmd_ctx *x);
void pk_cmd_brpoplpush(pk_cmd_ctx *x);
void pk_cmd_lindex(pk_cmd_ctx *x);
void pk_cmd_linsert(pk_cmd_ctx *x);
void pk_cmd_llen(pk_cmd_ctx *x);
void pk_cmd_lmove(pk_cmd_ctx *x);
void pk_cmd_lmpop(pk_cmd_ctx *x);
void pk_cmd_lpop(pk_cmd_ctx *x);
void pk_cmd_lpos(pk_cmd_ctx *x);
void pk_cmd_lpush(pk_cmd_ctx *x);
void pk_cmd_lpushx(pk_cmd_ctx *x);
void pk_cmd_lrange(pk_cmd_ctx *x);
void pk_cmd_lrem(pk_cmd_ctx *x);
void pk_cmd_lset(pk_cmd_ctx *x);
void pk_cmd_ltrim(pk_cmd_ctx *x);
void pk_cmd_rpop(pk_cmd_ctx *x);
void pk_cmd_rpoplpush(pk_cmd_ctx *x);
void pk_cmd_rpush(pk_cmd_ctx *x);
void pk_cmd_rpushx(pk_cmd_ctx *x);
int pk_cmd_keys_lmpop(int argc, const pk_arg *argv, pk_keyrun *r);
int pk_cmd_keys_blmpop(int argc, const pk_arg *argv, pk_keyrun *r);

#define PK__CMD_DECL(n) void pk_cmd_##n(pk_cmd_ctx *x);
PK__CMDS(PK__CMD_DECL)
#undef PK__CMD_DECL

/* Ordered key ranges (pk_cmd_range.c; its key finder and the bounds'
 * routing reads are pk_route.h). */
void pk_cmd_pk_range(pk_cmd_ctx *x);

/* Keyspace (pk_cmd_keyspace.c, and the expire family in pk_cmd_kv.c). */
void pk_cmd_copy(pk_cmd_ctx *x);
void pk_cmd_dump(pk_cmd_ctx *x);
void pk_cmd_expireat(pk_cmd_ctx *x);
void pk_cmd_expiretime(pk_cmd_ctx *x);
void pk_cmd_keys(pk_cmd_ctx *x);
void pk_cmd_object(pk_cmd_ctx *x);
void pk_cmd_pexpireat(pk_cmd_ctx *x);
void pk_cmd_pexpiretime(pk_cmd_ctx *x);
void pk_cmd_randomkey(pk_cmd_ctx *x);
void pk_cmd_rename(pk_cmd_ctx *x);
void pk_cmd_renamenx(pk_cmd_ctx *x);
void pk_cmd_restore(pk_cmd_ctx *x);
void pk_cmd_time(pk_cmd_ctx *x);

/* Hashes and sorted sets (pk_cmd_hash.c, pk_cmd_zset.c). */
void pk_cmd_hsetnx(pk_cmd_ctx *x);
void pk_cmd_hkeys(pk_cmd_ctx *x);
void pk_cmd_hvals(pk_cmd_ctx *x);
void pk_cmd_hstrlen(pk_cmd_ctx *x);
void pk_cmd_hincrbyfloat(pk_cmd_ctx *x);
void pk_cmd_hrandfield(pk_cmd_ctx *x);
void pk_cmd_hscan(pk_cmd_ctx *x);
void pk_cmd_zincrby(pk_cmd_ctx *x);
void pk_cmd_zcount(pk_cmd_ctx *x);
void pk_cmd_zlexcount(pk_cmd_ctx *x);
void pk_cmd_zrank(pk_cmd_ctx *x);
void pk_cmd_zrevrank(pk_cmd_ctx *x);
void pk_cmd_zmscore(pk_cmd_ctx *x);
void pk_cmd_zrevrangebyscore(pk_cmd_ctx *x);
void pk_cmd_zrevrangebylex(pk_cmd_ctx *x);
void pk_cmd_zremrangebyscore(pk_cmd_ctx *x);
void pk_cmd_zremrangebyrank(pk_cmd_ctx *x);
void pk_cmd_zremrangebylex(pk_cmd_ctx *x);
void pk_cmd_zrangestore(pk_cmd_ctx *x);
void pk_cmd_zunion(pk_cmd_ctx *x);
void pk_cmd_zinter(pk_cmd_ctx *x);
void pk_cmd_zdiff(pk_cmd_ctx *x);
void pk_cmd_zunionstore(pk_cmd_ctx *x);
void pk_cmd_zinterstore(pk_cmd_ctx *x);
void pk_cmd_zdiffstore(pk_cmd_ctx *x);
void pk_cmd_zintercard(pk_cmd_ctx *x);
void pk_cmd_zpopmin(pk_cmd_ctx *x);
void pk_cmd_zpopmax(pk_cmd_ctx *x);
void pk_cmd_zmpop(pk_cmd_ctx *x);
void pk_cmd_bzmpop(pk_cmd_ctx *x);
void pk_cmd_bzpopmin(pk_cmd_ctx *x);
void pk_cmd_bzpopmax(pk_cmd_ctx *x);
void pk_cmd_zrandmember(pk_cmd_ctx *x);
void pk_cmd_zscan(pk_cmd_ctx *x);
/* Key finders: "numkeys key..." at 1, and "dest numkeys key..." */
int pk_cmd_keys_num1(int argc, const pk_arg *argv, pk_keyrun *r);
int pk_cmd_keys_dest_num2(int argc, const pk_arg *argv, pk_keyrun *r);

/*
 * HSCAN/ZSCAN: parses "key cursor [MATCH p] [COUNT n]" (opts borrow
 * argv) or replies the error and returns 0.  pk_cmd_scan_reply writes
 * [cursor, items] with n items already encoded in items.
 */
int pk_cmd_scan_args(pk_cmd_ctx *x, uint64_t *cursor, pk_scan_opts *o);
/*
 * One SCAN-family option at argv[i] with its value: MATCH or COUNT, into
 * o.  Returns 1 when taken, 0 when argv[i] is neither (the caller decides:
 * TYPE for SCAN, else a syntax error), -1 after replying the error (no
 * value, COUNT not a positive integer).
 */
int pk_cmd_scan_opt(pk_cmd_ctx *x, int i, pk_scan_opts *o);
void pk_cmd_scan_reply(pk_cmd_ctx *x, uint64_t next, const pk_obuf *items,
                       size_t n);

/*
 * HRANDFIELD/ZRANDMEMBER: pk_cmd_rand_count parses argv[2] (count) and
 * argv[3] (with, the WITHVALUES/WITHSCORES word) or replies the error and
 * returns 0.  pk_cmd_rand_head replies nil / an empty array for a
 * collection of size 0 or a count of 0 and returns 0, else writes the
 * header of the picks' reply (none for the form without a count, which
 * gets one bulk; pairs WITHVALUES/WITHSCORES, nested in RESP3) and
 * returns 1: min(count, size) picks, or -count with repeats.
 * pk_cmd_rand_seed seeds the store's random picks (SPOP, SRANDMEMBER,
 * HRANDFIELD, ZRANDMEMBER) so that each call draws differently.
 */
#define PK_CMD_RAND_MAX (1 << 24)
int pk_cmd_rand_count(pk_cmd_ctx *x, const char *with, int64_t *count);
int pk_cmd_rand_head(pk_cmd_ctx *x, uint64_t size, int64_t count, int with);
uint64_t pk_cmd_rand_seed(const pk_cmd_ctx *x);

/* Strings (pk_cmd_str.c) and bits (pk_cmd_bits.c). */
void pk_cmd_setnx(pk_cmd_ctx *x);
void pk_cmd_setex(pk_cmd_ctx *x);
void pk_cmd_psetex(pk_cmd_ctx *x);
void pk_cmd_getex(pk_cmd_ctx *x);
void pk_cmd_getset(pk_cmd_ctx *x);
void pk_cmd_msetnx(pk_cmd_ctx *x);
void pk_cmd_incrbyfloat(pk_cmd_ctx *x);
void pk_cmd_setrange(pk_cmd_ctx *x);
void pk_cmd_getrange(pk_cmd_ctx *x);
void pk_cmd_lcs(pk_cmd_ctx *x);
void pk_cmd_setbit(pk_cmd_ctx *x);
void pk_cmd_getbit(pk_cmd_ctx *x);
void pk_cmd_bitcount(pk_cmd_ctx *x);
void pk_cmd_bitpos(pk_cmd_ctx *x);
void pk_cmd_bitop(pk_cmd_ctx *x);
void pk_cmd_bitfield(pk_cmd_ctx *x);
void pk_cmd_bitfield_ro(pk_cmd_ctx *x);

/* SORT and SORT_RO (pk_cmd_sort.c); SORT's finder gives the source and
 * STORE's destination. */
void pk_cmd_sort(pk_cmd_ctx *x);
void pk_cmd_sort_ro(pk_cmd_ctx *x);
int pk_cmd_keys_sort(int argc, const pk_arg *argv, pk_keyrun *r);
int pk_cmd_keys_sort_ro(int argc, const pk_arg *argv, pk_keyrun *r);

/* ACL (pk_cmd_acl.c). */
void pk_cmd_acl(pk_cmd_ctx *x);

/* CLIENT INFO's line for connection c (ends in a newline) into buf. */
void pk_cmd_client_info(pk_cmd_ctx *x, pk_conn *c, char *buf, size_t n);

/* Introspection (pk_cmd_admin.c). */
void pk_cmd_memory(pk_cmd_ctx *x);
void pk_cmd_save(pk_cmd_ctx *x);
int pk_cmd_keys_memory(int argc, const pk_arg *argv, pk_keyrun *r);

#endif
