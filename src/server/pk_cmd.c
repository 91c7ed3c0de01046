/*
 * pk_cmd: the command table, dispatch (lookup, arity, authentication) and
 * the COMMAND command, which describes the table to clients: python3-redis
 * `RedisCluster` reads key positions from it and refuses commands it does
 * not list.
 */
#include "server/pk_cmd.h"
#include "server/pk_acl.h"
#include "server/pk_block.h"
#include "server/pk_cluster.h"
#include "server/pk_ft.h"
#include "server/pk_hot.h"
#include "server/pk_hotread.h"
#include "server/pk_metrics.h"
#include "server/pk_move.h"
#include "server/pk_multi.h"
#include "server/pk_repl.h"
#include "server/pk_route.h"
#include "server/pk_salted.h"
#include "server/pk_split.h"
#include "server/pk_watch.h"

#include <assert.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define W PK_CMD_WRITE
#define R PK_CMD_READONLY
#define F PK_CMD_FAST
#define A PK_CMD_ADMIN
#define N PK_CMD_NOAUTH
#define S PK_CMD_STALE
#define L PK_CMD_LOADING
#define T PK_CMD_TXN_NOW
#define M PK_CMD_NO_MULTI

/* OBJECT <subcommand> key: the key is argument 2 when there is one (not
 * for OBJECT HELP). */
static int keys_object(int argc, const pk_arg *argv, pk_keyrun *r)
{
    (void)argv;
    if (argc != 3)
        return 0;
    *r = (pk_keyrun){2, 2, 1};
    return 1;
}

/* Sorted by name (COMMAND lists it so; test_cmd_table checks). */
static const pk_cmd table[] = {
    {"acl", -2, S | L, 0, 0, 0, "slow", pk_cmd_acl, NULL},
    {"append", 3, W, 1, 1, 1, "write string fast", pk_cmd_append, NULL},
    {"asking", 1, F, 0, 0, 0, "fast connection", pk_cmd_asking, NULL},
    {"auth", -2, N | F | S | L, 0, 0, 0, "fast connection", pk_cmd_auth, NULL},
    {"bgsave", -1, A | M, 0, 0, 0, "admin slow dangerous", pk_cmd_save, NULL},
    {"bitcount", -2, R, 1, 1, 1, "read bitmap slow", pk_cmd_bitcount, NULL},
    {"bitfield", -2, W, 1, 1, 1, "write bitmap slow", pk_cmd_bitfield, NULL},
    {"bitfield_ro", -2, R | F, 1, 1, 1, "read bitmap fast", pk_cmd_bitfield_ro,
     NULL},
    {"bitop", -4, W, 2, -1, 1, "write bitmap slow", pk_cmd_bitop, NULL},
    {"bitpos", -3, R, 1, 1, 1, "read bitmap slow", pk_cmd_bitpos, NULL},
    {"blmove", 6, W, 1, 2, 1, "write list slow blocking", pk_cmd_blmove, NULL},
    {"blmpop", -5, W, 0, 0, 0, "write list slow blocking", pk_cmd_blmpop,
     pk_cmd_keys_blmpop},
    {"blpop", -3, W, 1, -2, 1, "write list slow blocking", pk_cmd_blpop, NULL},
    {"brpop", -3, W, 1, -2, 1, "write list slow blocking", pk_cmd_brpop, NULL},
    {"brpoplpush", 4, W, 1, 2, 1, "write list slow blocking", pk_cmd_brpoplpush,
     NULL},
    {"bzmpop", -5, W, 0, 0, 0, "write sortedset slow blocking", pk_cmd_bzmpop,
     pk_cmd_keys_blmpop},
    {"bzpopmax", -3, W | F, 1, -2, 1, "write sortedset fast blocking",
     pk_cmd_bzpopmax, NULL},
    {"bzpopmin", -3, W | F, 1, -2, 1, "write sortedset fast blocking",
     pk_cmd_bzpopmin, NULL},
    {"client", -2, S | L, 0, 0, 0, "slow connection", pk_cmd_client, NULL},
    {"cluster", -2, S, 0, 0, 0, "slow", pk_cmd_cluster, NULL},
    {"command", -1, S | L, 0, 0, 0, "slow connection", pk_cmd_command, NULL},
    {"config", -2, A | S | L, 0, 0, 0, "admin slow dangerous", pk_cmd_config,
     NULL},
    {"copy", -3, W, 1, 2, 1, "keyspace write slow", pk_cmd_copy, NULL},
    {"dbsize", 1, R | F, 0, 0, 0, "keyspace read fast", pk_cmd_dbsize, NULL},
    {"decr", 2, W | F, 1, 1, 1, "write string fast", pk_cmd_decr, NULL},
    {"decrby", 3, W | F, 1, 1, 1, "write string fast", pk_cmd_decrby, NULL},
    {"del", -2, W, 1, -1, 1, "keyspace write slow", pk_cmd_del, NULL},
    {"discard", 1, F | L | S | T, 0, 0, 0, "fast transaction", pk_cmd_discard,
     NULL},
    {"dump", 2, R, 1, 1, 1, "keyspace read slow", pk_cmd_dump, NULL},
    {"echo", 2, F, 0, 0, 0, "fast connection", pk_cmd_echo, NULL},
    {"exec", 1, L | S | T, 0, 0, 0, "slow transaction", pk_cmd_exec, NULL},
    {"exists", -2, R | F, 1, -1, 1, "keyspace read fast", pk_cmd_exists, NULL},
    {"expire", -3, W | F, 1, 1, 1, "keyspace write fast", pk_cmd_expire, NULL},
    {"expireat", -3, W | F, 1, 1, 1, "keyspace write fast", pk_cmd_expireat,
     NULL},
    {"expiretime", 2, R | F, 1, 1, 1, "keyspace read fast", pk_cmd_expiretime,
     NULL},
    {"flushall", -1, W, 0, 0, 0, "keyspace write slow dangerous",
     pk_cmd_flushall, NULL},
    {"flushdb", -1, W, 0, 0, 0, "keyspace write slow dangerous",
     pk_cmd_flushall, NULL},
    {"ft._list", 1, 0, 0, 0, 0, "search slow", pk_cmd_ft_list, NULL},
    {"ft.aggregate", -3, R, 0, 0, 0, "search read slow", pk_cmd_ft_aggregate,
     NULL},
    {"ft.alter", -5, 0, 0, 0, 0, "search slow", pk_cmd_ft_alter, NULL},
    {"ft.create", -5, 0, 0, 0, 0, "search slow", pk_cmd_ft_create, NULL},
    {"ft.drop", -2, 0, 0, 0, 0, "search slow", pk_cmd_ft_drop, NULL},
    {"ft.dropindex", -2, 0, 0, 0, 0, "search slow", pk_cmd_ft_dropindex, NULL},
    {"ft.info", 2, R, 0, 0, 0, "search read slow", pk_cmd_ft_info, NULL},
    {"ft.search", -3, R, 0, 0, 0, "search read slow", pk_cmd_ft_search, NULL},
    {"function", -2, S, 0, 0, 0, "slow scripting", pk_cmd_function, NULL},
    {"get", 2, R | F, 1, 1, 1, "read string fast", pk_cmd_get, NULL},
    {"getbit", 3, R | F, 1, 1, 1, "read bitmap fast", pk_cmd_getbit, NULL},
    {"getdel", 2, W | F, 1, 1, 1, "write string fast", pk_cmd_getdel, NULL},
    {"getex", -2, W | F, 1, 1, 1, "write string fast", pk_cmd_getex, NULL},
    {"getrange", 4, R, 1, 1, 1, "read string slow", pk_cmd_getrange, NULL},
    {"getset", 3, W | F, 1, 1, 1, "write string fast", pk_cmd_getset, NULL},
    {"hdel", -3, W | F, 1, 1, 1, "write hash fast", pk_cmd_hdel, NULL},
    {"hello", -1, N | F | S | L, 0, 0, 0, "fast connection", pk_cmd_hello,
     NULL},
    {"hexists", 3, R | F, 1, 1, 1, "read hash fast", pk_cmd_hexists, NULL},
    {"hget", 3, R | F, 1, 1, 1, "read hash fast", pk_cmd_hget, NULL},
    {"hgetall", 2, R, 1, 1, 1, "read hash slow", pk_cmd_hgetall, NULL},
    {"hincrby", 4, W | F, 1, 1, 1, "write hash fast", pk_cmd_hincrby, NULL},
    {"hincrbyfloat", 4, W | F, 1, 1, 1, "write hash fast", pk_cmd_hincrbyfloat,
     NULL},
    {"hkeys", 2, R, 1, 1, 1, "read hash slow", pk_cmd_hkeys, NULL},
    {"hlen", 2, R | F, 1, 1, 1, "read hash fast", pk_cmd_hlen, NULL},
    {"hmget", -3, R | F, 1, 1, 1, "read hash fast", pk_cmd_hmget, NULL},
    {"hmset", -4, W | F, 1, 1, 1, "write hash fast", pk_cmd_hset, NULL},
    {"hrandfield", -2, R, 1, 1, 1, "read hash slow", pk_cmd_hrandfield, NULL},
    {"hscan", -3, R, 1, 1, 1, "read hash slow", pk_cmd_hscan, NULL},
    {"hset", -4, W | F, 1, 1, 1, "write hash fast", pk_cmd_hset, NULL},
    {"hsetnx", 4, W | F, 1, 1, 1, "write hash fast", pk_cmd_hsetnx, NULL},
    {"hstrlen", 3, R | F, 1, 1, 1, "read hash fast", pk_cmd_hstrlen, NULL},
    {"hvals", 2, R, 1, 1, 1, "read hash slow", pk_cmd_hvals, NULL},
    {"incr", 2, W | F, 1, 1, 1, "write string fast", pk_cmd_incr, NULL},
    {"incrby", 3, W | F, 1, 1, 1, "write string fast", pk_cmd_incrby, NULL},
    {"incrbyfloat", 3, W | F, 1, 1, 1, "write string fast", pk_cmd_incrbyfloat,
     NULL},
    {"info", -1, S | L, 0, 0, 0, "slow dangerous", pk_cmd_info, NULL},
    {"keys", 2, R, 0, 0, 0, "keyspace read slow dangerous", pk_cmd_keys, NULL},
    {"lcs", -3, R, 1, 2, 1, "read string slow", pk_cmd_lcs, NULL},
    {"lindex", 3, R, 1, 1, 1, "read list slow", pk_cmd_lindex, NULL},
    {"linsert", 5, W, 1, 1, 1, "write list slow", pk_cmd_linsert, NULL},
    {"llen", 2, R | F, 1, 1, 1, "read list fast", pk_cmd_llen, NULL},
    {"lmove", 5, W, 1, 2, 1, "write list slow", pk_cmd_lmove, NULL},
    {"lmpop", -4, W, 0, 0, 0, "write list slow", pk_cmd_lmpop,
     pk_cmd_keys_lmpop},
    {"lpop", -2, W | F, 1, 1, 1, "write list fast", pk_cmd_lpop, NULL},
    {"lpos", -3, R, 1, 1, 1, "read list slow", pk_cmd_lpos, NULL},
    {"lpush", -3, W | F, 1, 1, 1, "write list fast", pk_cmd_lpush, NULL},
    {"lpushx", -3, W | F, 1, 1, 1, "write list fast", pk_cmd_lpushx, NULL},
    {"lrange", 4, R, 1, 1, 1, "read list slow", pk_cmd_lrange, NULL},
    {"lrem", 4, W, 1, 1, 1, "write list slow", pk_cmd_lrem, NULL},
    {"lset", 4, W, 1, 1, 1, "write list slow", pk_cmd_lset, NULL},
    {"ltrim", 4, W, 1, 1, 1, "write list slow", pk_cmd_ltrim, NULL},
    {"memory", -2, R, 0, 0, 0, "slow", pk_cmd_memory, pk_cmd_keys_memory},
    {"mget", -2, R | F, 1, -1, 1, "read string fast", pk_cmd_mget, NULL},
    {"mset", -3, W, 1, -1, 2, "write string slow", pk_cmd_mset, NULL},
    {"msetnx", -3, W, 1, -1, 2, "write string slow", pk_cmd_msetnx, NULL},
    {"multi", 1, F | L | S | T, 0, 0, 0, "fast transaction", pk_cmd_multi,
     NULL},
    {"object", -2, R, 0, 0, 0, "keyspace read slow", pk_cmd_object,
     keys_object},
    {"persist", 2, W | F, 1, 1, 1, "keyspace write fast", pk_cmd_persist, NULL},
    {"pexpire", -3, W | F, 1, 1, 1, "keyspace write fast", pk_cmd_pexpire,
     NULL},
    {"pexpireat", -3, W | F, 1, 1, 1, "keyspace write fast", pk_cmd_pexpireat,
     NULL},
    {"pexpiretime", 2, R | F, 1, 1, 1, "keyspace read fast", pk_cmd_pexpiretime,
     NULL},
    {"pfadd", -2, W | F, 1, 1, 1, "write hyperloglog fast", pk_cmd_pfadd, NULL},
    {"pfcount", -2, W, 1, -1, 1, "read hyperloglog slow", pk_cmd_pfcount, NULL},
    {"pfmerge", -2, W, 1, -1, 1, "write hyperloglog slow", pk_cmd_pfmerge,
     NULL},
    {"ping", -1, F | S, 0, 0, 0, "fast connection", pk_cmd_ping, NULL},
    {"pk.auth", 2, N | F, 0, 0, 0, "fast connection", pk_cmd_pk_auth, NULL},
    {"pk.coord", -3, N, 0, 0, 0, "slow", pk_cmd_pk_coord, NULL},
    {"pk.ftgapply", 4, R, 0, 0, 0, "read slow", pk_cmd_pk_ftgapply, NULL},
    {"pk.ftquery", -6, R, 0, 0, 0, "read slow", pk_cmd_pk_ftquery, NULL},
    {"pk.hotkeys", -1, R, 0, 0, 0, "read slow", pk_cmd_pk_hotkeys, NULL},
    {"pk.map", 1, R | F, 0, 0, 0, "read fast", pk_cmd_pk_map, NULL},
    {"pk.merge", 2, N, 0, 0, 0, "slow", pk_cmd_pk_split, NULL},
    {"pk.move", -2, N, 0, 0, 0, "slow", pk_cmd_pk_move, NULL},
    {"pk.moves", 1, R | F, 0, 0, 0, "read fast", pk_cmd_pk_moves, NULL},
    {"pk.partitions", 1, R, 0, 0, 0, "read slow", pk_cmd_pk_partitions, NULL},
    {"pk.range", -3, R | PK_CMD_BOUNDS, 1, 2, 1, "read keyspace slow",
     pk_cmd_pk_range, pk_cmd_keys_pk_range},
    {"pk.rawkeys", 1, F, 0, 0, 0, "fast connection", pk_cmd_pk_rawkeys, NULL},
    {"pk.readindex", 6, F, 0, 0, 0, "fast read", pk_cmd_pk_readindex, NULL},
    {"pk.repl", -2, N, 0, 0, 0, "slow", pk_cmd_pk_repl, NULL},
    {"pk.salt", 3, W, 1, 1, 1, "slow", pk_cmd_pk_salt, NULL},
    {"pk.saltadd", -4, W, 1, 1, 1, "write slow", pk_cmd_pk_saltadd, NULL},
    {"pk.saltdrop", 2, W, 1, 1, 1, "write slow", pk_cmd_pk_saltdrop, NULL},
    {"pk.salttake", -3, R, 1, 1, 1, "read slow", pk_cmd_pk_salttake, NULL},
    {"pk.split", 2, N, 0, 0, 0, "slow", pk_cmd_pk_split, NULL},
    {"pk.unsalt", 2, W, 1, 1, 1, "slow", pk_cmd_pk_salt, NULL},
    {"pk.unsplit", 2, N, 0, 0, 0, "slow", pk_cmd_pk_split, NULL},
    {"psetex", 4, W, 1, 1, 1, "write string slow", pk_cmd_psetex, NULL},
    {"pttl", 2, R | F, 1, 1, 1, "keyspace read fast", pk_cmd_pttl, NULL},
    {"quit", -1, N | F | S | L | T, 0, 0, 0, "fast connection", pk_cmd_quit,
     NULL},
    {"randomkey", 1, R, 0, 0, 0, "keyspace read slow", pk_cmd_randomkey, NULL},
    {"readonly", 1, F | L | S, 0, 0, 0, "fast connection", pk_cmd_readonly,
     NULL},
    {"readwrite", 1, F | L | S, 0, 0, 0, "fast connection", pk_cmd_readwrite,
     NULL},
    {"rename", 3, W, 1, 2, 1, "keyspace write slow", pk_cmd_rename, NULL},
    {"renamenx", 3, W | F, 1, 2, 1, "keyspace write fast", pk_cmd_renamenx,
     NULL},
    {"reset", 1, N | F | S | L | T, 0, 0, 0, "fast connection", pk_cmd_reset,
     NULL},
    {"restore", -4, W, 1, 1, 1, "keyspace write slow dangerous", pk_cmd_restore,
     NULL},
    {"rpop", -2, W | F, 1, 1, 1, "write list fast", pk_cmd_rpop, NULL},
    {"rpoplpush", 3, W, 1, 2, 1, "write list slow", pk_cmd_rpoplpush, NULL},
    {"rpush", -3, W | F, 1, 1, 1, "write list fast", pk_cmd_rpush, NULL},
    {"rpushx", -3, W | F, 1, 1, 1, "write list fast", pk_cmd_rpushx, NULL},
    {"sadd", -3, W | F, 1, 1, 1, "write set fast", pk_cmd_sadd, NULL},
    {"save", 1, A | M, 0, 0, 0, "admin slow dangerous", pk_cmd_save, NULL},
    {"scan", -2, R, 0, 0, 0, "keyspace read slow", pk_cmd_scan, NULL},
    {"scard", 2, R | F, 1, 1, 1, "read set fast", pk_cmd_scard, NULL},
    {"sdiff", -2, R, 1, -1, 1, "read set slow", pk_cmd_sdiff, NULL},
    {"sdiffstore", -3, W, 1, -1, 1, "write set slow", pk_cmd_sdiffstore, NULL},
    {"select", 2, F | S | L, 0, 0, 0, "fast connection", pk_cmd_select, NULL},
    {"set", -3, W, 1, 1, 1, "write string slow", pk_cmd_set, NULL},
    {"setbit", 4, W, 1, 1, 1, "write bitmap slow", pk_cmd_setbit, NULL},
    {"setex", 4, W, 1, 1, 1, "write string slow", pk_cmd_setex, NULL},
    {"setnx", 3, W | F, 1, 1, 1, "write string fast", pk_cmd_setnx, NULL},
    {"setrange", 4, W, 1, 1, 1, "write string slow", pk_cmd_setrange, NULL},
    {"shutdown", -1, A | S | L | M, 0, 0, 0, "admin slow dangerous",
     pk_cmd_shutdown, NULL},
    {"sinter", -2, R, 1, -1, 1, "read set slow", pk_cmd_sinter, NULL},
    {"sintercard", -3, R, 0, 0, 0, "read set slow", pk_cmd_sintercard,
     pk_cmd_sintercard_keys},
    {"sinterstore", -3, W, 1, -1, 1, "write set slow", pk_cmd_sinterstore,
     NULL},
    {"sismember", 3, R | F, 1, 1, 1, "read set fast", pk_cmd_sismember, NULL},
    {"smembers", 2, R, 1, 1, 1, "read set slow", pk_cmd_smembers, NULL},
    {"smismember", -3, R | F, 1, 1, 1, "read set fast", pk_cmd_smismember,
     NULL},
    {"smove", 4, W | F, 1, 2, 1, "write set fast", pk_cmd_smove, NULL},
    {"sort", -2, W, 1, 1, 1, "write set sortedset list slow dangerous",
     pk_cmd_sort, pk_cmd_keys_sort},
    {"sort_ro", -2, R, 1, 1, 1, "read set sortedset list slow dangerous",
     pk_cmd_sort_ro, pk_cmd_keys_sort_ro},
    {"spop", -2, W | F, 1, 1, 1, "write set fast", pk_cmd_spop, NULL},
    {"srandmember", -2, R, 1, 1, 1, "read set slow", pk_cmd_srandmember, NULL},
    {"srem", -3, W | F, 1, 1, 1, "write set fast", pk_cmd_srem, NULL},
    {"sscan", -3, R, 1, 1, 1, "read set slow", pk_cmd_sscan, NULL},
    {"strlen", 2, R | F, 1, 1, 1, "read string fast", pk_cmd_strlen, NULL},
    {"substr", 4, R, 1, 1, 1, "read string slow", pk_cmd_getrange, NULL},
    {"sunion", -2, R, 1, -1, 1, "read set slow", pk_cmd_sunion, NULL},
    {"sunionstore", -3, W, 1, -1, 1, "write set slow", pk_cmd_sunionstore,
     NULL},
    {"time", 1, F | L | S, 0, 0, 0, "fast", pk_cmd_time, NULL},
    {"touch", -2, R | F, 1, -1, 1, "keyspace read fast", pk_cmd_exists, NULL},
    {"ttl", 2, R | F, 1, 1, 1, "keyspace read fast", pk_cmd_ttl, NULL},
    {"type", 2, R | F, 1, 1, 1, "keyspace read fast", pk_cmd_type, NULL},
    {"unlink", -2, W | F, 1, -1, 1, "keyspace write fast", pk_cmd_del, NULL},
    {"unwatch", 1, F | L | S, 0, 0, 0, "fast transaction", pk_cmd_unwatch,
     NULL},
    {"wait", 3, 0, 0, 0, 0, "slow connection", pk_cmd_wait, NULL},
    {"watch", -2, F | L | S | PK_CMD_LOCAL | T, 1, -1, 1, "fast transaction",
     pk_cmd_watch, NULL},
    {"zadd", -4, W | F, 1, 1, 1, "write sortedset fast", pk_cmd_zadd, NULL},
    {"zcard", 2, R | F, 1, 1, 1, "read sortedset fast", pk_cmd_zcard, NULL},
    {"zcount", 4, R | F, 1, 1, 1, "read sortedset fast", pk_cmd_zcount, NULL},
    {"zdiff", -3, R, 0, 0, 0, "read sortedset slow", pk_cmd_zdiff,
     pk_cmd_keys_num1},
    {"zdiffstore", -4, W, 1, 1, 1, "write sortedset slow", pk_cmd_zdiffstore,
     pk_cmd_keys_dest_num2},
    {"zincrby", 4, W | F, 1, 1, 1, "write sortedset fast", pk_cmd_zincrby,
     NULL},
    {"zinter", -3, R, 0, 0, 0, "read sortedset slow", pk_cmd_zinter,
     pk_cmd_keys_num1},
    {"zintercard", -3, R, 0, 0, 0, "read sortedset slow", pk_cmd_zintercard,
     pk_cmd_keys_num1},
    {"zinterstore", -4, W, 1, 1, 1, "write sortedset slow", pk_cmd_zinterstore,
     pk_cmd_keys_dest_num2},
    {"zlexcount", 4, R | F, 1, 1, 1, "read sortedset fast", pk_cmd_zlexcount,
     NULL},
    {"zmpop", -4, W, 0, 0, 0, "write sortedset slow", pk_cmd_zmpop,
     pk_cmd_keys_num1},
    {"zmscore", -3, R | F, 1, 1, 1, "read sortedset fast", pk_cmd_zmscore,
     NULL},
    {"zpopmax", -2, W | F, 1, 1, 1, "write sortedset fast", pk_cmd_zpopmax,
     NULL},
    {"zpopmin", -2, W | F, 1, 1, 1, "write sortedset fast", pk_cmd_zpopmin,
     NULL},
    {"zrandmember", -2, R, 1, 1, 1, "read sortedset slow", pk_cmd_zrandmember,
     NULL},
    {"zrange", -4, R, 1, 1, 1, "read sortedset slow", pk_cmd_zrange, NULL},
    {"zrangebylex", -4, R, 1, 1, 1, "read sortedset slow", pk_cmd_zrangebylex,
     NULL},
    {"zrangebyscore", -4, R, 1, 1, 1, "read sortedset slow",
     pk_cmd_zrangebyscore, NULL},
    {"zrangestore", -5, W, 1, 2, 1, "write sortedset slow", pk_cmd_zrangestore,
     NULL},
    {"zrank", 3, R | F, 1, 1, 1, "read sortedset fast", pk_cmd_zrank, NULL},
    {"zrem", -3, W | F, 1, 1, 1, "write sortedset fast", pk_cmd_zrem, NULL},
    {"zremrangebylex", 4, W, 1, 1, 1, "write sortedset slow",
     pk_cmd_zremrangebylex, NULL},
    {"zremrangebyrank", 4, W, 1, 1, 1, "write sortedset slow",
     pk_cmd_zremrangebyrank, NULL},
    {"zremrangebyscore", 4, W, 1, 1, 1, "write sortedset slow",
     pk_cmd_zremrangebyscore, NULL},
    {"zrevrange", -4, R, 1, 1, 1, "read sortedset slow", pk_cmd_zrevrange,
     NULL},
    {"zrevrangebylex", -4, R, 1, 1, 1, "read sortedset slow",
     pk_cmd_zrevrangebylex, NULL},
    {"zrevrangebyscore", -4, R, 1, 1, 1, "read sortedset slow",
     pk_cmd_zrevrangebyscore, NULL},
    {"zrevrank", 3, R | F, 1, 1, 1, "read sortedset fast", pk_cmd_zrevrank,
     NULL},
    {"zscan", -3, R, 1, 1, 1, "read sortedset slow", pk_cmd_zscan, NULL},
    {"zscore", 3, R | F, 1, 1, 1, "read sortedset fast", pk_cmd_zscore, NULL},
    {"zunion", -3, R, 0, 0, 0, "read sortedset slow", pk_cmd_zunion,
     pk_cmd_keys_num1},
    {"zunionstore", -4, W, 1, 1, 1, "write sortedset slow", pk_cmd_zunionstore,
     pk_cmd_keys_dest_num2},
};

#define NCMDS (sizeof(table) / sizeof(table[0]))

const pk_cmd *pk_cmd_table(size_t *n)
{
    *n = NCMDS;
    return table;
}

/* Compares a counted, any-case name with a table name. */
static int name_cmp(const char *name, size_t len, const char *tname)
{
    size_t i;

    for (i = 0; i < len && tname[i]; i++) {
        int a = (unsigned char)name[i], b = (unsigned char)tname[i];
        /* Only letters fold: '.' and '_' (pk.map, bitfield_ro) stay. */
        if (a >= 'A' && a <= 'Z')
            a |= 0x20;
        if (a != b)
            return a - b;
    }
    if (i < len)
        return 1;
    return tname[i] ? -1 : 0;
}

/*
 * pk_cmd_find's index: the table's entries (index + 1, 0 for none) by a
 * hash of their case-folded names, open addressing, built once; the
 * binary search over the table took a quarter of a GET's dispatch.
 */
#define FIND_SLOTS 1024u
static uint16_t find_index[FIND_SLOTS];
static pthread_once_t find_once = PTHREAD_ONCE_INIT;

static uint32_t name_hash(const char *name, size_t len)
{
    uint32_t h = 2166136261u; /* FNV-1a over the folded bytes */

    for (size_t i = 0; i < len; i++) {
        unsigned c = (unsigned char)name[i];
        h = (h ^ (c >= 'A' && c <= 'Z' ? c | 0x20 : c)) * 16777619u;
    }
    return h;
}

static void find_build(void)
{
    static_assert(NCMDS < FIND_SLOTS / 2 && NCMDS < UINT16_MAX,
                  "the index stays at most half full");
    for (size_t i = 0; i < NCMDS; i++) {
        uint32_t h = name_hash(table[i].name, strlen(table[i].name));

        while (find_index[h % FIND_SLOTS] != 0)
            h++;
        find_index[h % FIND_SLOTS] = (uint16_t)(i + 1);
    }
}

const pk_cmd *pk_cmd_find(const char *name, size_t len)
{
    uint32_t h = name_hash(name, len);

    pthread_once(&find_once, find_build);
    for (uint16_t e; (e = find_index[h % FIND_SLOTS]) != 0; h++) {
        if (name_cmp(name, len, table[e - 1].name) == 0)
            return &table[e - 1];
    }
    return NULL;
}

int pk_cmd_internal(const char *name, size_t len)
{
    /* Each answers NOAUTH or NOPERM without c->internal (pk_cmd_coord.c,
     * pk_move_dst.c, pk_repl_follow.c, pk_hotread.c, pk_split.c,
     * pk_ft_global.c, pk_salted.c). */
    static const char *const names[] = {
        "pk.coord",     "pk.ftgapply", "pk.merge", "pk.move",    "pk.rawkeys",
        "pk.readindex", "pk.repl",     "pk.split", "pk.unsplit",
    };

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (name_cmp(name, len, names[i]) == 0)
            return 1;
    return 0;
}

int pk_cmd_scan_opt(pk_cmd_ctx *x, int i, pk_scan_opts *o)
{
    const pk_arg *a = &x->argv[i], *v;
    int64_t count;

    if (i + 1 >= x->argc) {
        pk_reply_syntax(x);
        return -1;
    }
    v = &x->argv[i + 1];
    if (pk_arg_eq(a, "match")) {
        /* "*" matches everything, the empty key too, as in Redis. */
        o->match = v->len == 1 && v->ptr[0] == '*' ? NULL : v->ptr;
        o->match_len = v->len;
        return 1;
    }
    if (!pk_arg_eq(a, "count"))
        return 0;
    if (!pk_arg_i64(v, &count)) {
        pk_reply_notint(x);
        return -1;
    }
    if (count < 1) {
        pk_reply_syntax(x);
        return -1;
    }
    o->count = (size_t)count;
    return 1;
}

/* "ERR unknown command 'FOO', with args beginning with: 'bar' " */
static void reply_unknown(pk_cmd_ctx *x)
{
    char msg[1024];
    size_t n = 0;

    n += (size_t)snprintf(msg, sizeof(msg),
                          "ERR unknown command '%.*s', with args beginning "
                          "with: ",
                          (int)(x->argv[0].len > 128 ? 128 : x->argv[0].len),
                          x->argv[0].ptr);
    for (int i = 1; i < x->argc && n < sizeof(msg) - 140; i++)
        n += (size_t)snprintf(
            msg + n, sizeof(msg) - n, "'%.*s' ",
            (int)(x->argv[i].len > 128 ? 128 : x->argv[i].len), x->argv[i].ptr);
    pk_reply_error(x->out, msg);
}

void pk_cmd_run(pk_cmd_ctx *x, const pk_cmd *cmd)
{
    pk_server *s = x->srv;
    int watched = s->nwatched && (cmd->flags & PK_CMD_WRITE);
    uint64_t before = watched && s->txn ? pk_txn_changes(s->txn) : 0;
    pk_block_mark mark;

    /* Clients blocked on keys this command changes are served once the
     * outermost command is done (after EXEC, not inside it); inside EXEC
     * a blocking command answers as if its timeout had passed. */
    x->noblock = x->c->in_exec;
    x->touch_arg = 0;
    pk_block_before(x, cmd, &mark);
    s->dispatch_depth++;
    cmd->fn(x);
    if (s->ft && (cmd->flags & PK_CMD_WRITE))
        pk_ft_note_write(x, cmd);
    s->dispatch_depth--;
    /* A transaction begun by cmd started from 0 changes. */
    if (watched && s->txn && pk_txn_changes(s->txn) != before)
        pk_watch_touch_cmd(x, cmd);
    pk_block_after(x, cmd, &mark);
}

static uint64_t mono_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* Decimal digits of n. */
static size_t digits(size_t n)
{
    size_t d = 1;

    while (n >= 10) {
        n /= 10;
        d++;
    }
    return d;
}

/* A command ran, from t0 on: its duration to the latency histogram; if
 * it ran on a partition, its time, and its request's RESP bytes and its
 * reply's, to that partition's counters. */
static void account(pk_cmd_ctx *x, const pk_cmd *cmd, uint64_t t0, size_t out0)
{
    uint64_t us = mono_us() - t0;
    pk_part_rate *r;
    size_t in = 3 + digits((size_t)x->argc), out = pk_obuf_pending(x->out);

    pk_metrics_observe(&x->srv->lat,
                       (cmd->flags & PK_CMD_WRITE)      ? PK_LAT_WRITE
                       : (cmd->flags & PK_CMD_READONLY) ? PK_LAT_READ
                                                        : PK_LAT_OTHER,
                       us);
    /* A single node keeps every key in partition 0. */
    if (x->have_part ? x->part >= PK_SLOTS
                     : x->srv->cluster.enabled || cmd->first <= 0)
        return;
    r = &x->srv->rates[x->have_part ? x->part : 0];
    for (int i = 0; i < x->argc; i++)
        in += 5 + digits(x->argv[i].len) + x->argv[i].len;
    r->cpu_us += us;
    r->net_in += in;
    r->net_out += out > out0 ? out - out0 : 0;
}

void pk_cmd_dispatch(pk_cmd_ctx *x)
{
    const pk_cmd *cmd = x->c->cmd_seen;
    uint64_t t0;
    size_t out0;

    if (cmd == NULL || name_cmp(x->argv[0].ptr, x->argv[0].len, cmd->name))
        cmd = pk_cmd_find(x->argv[0].ptr, x->argv[0].len);
    x->have_part = 0;
    if (cmd == NULL) {
        pk_multi_reject(x->c);
        reply_unknown(x);
        return;
    }
    x->c->cmd_seen = cmd;
    x->c->last_cmd = cmd->name;
    x->c->last_sub = NULL;
    if (!pk_arity_ok(cmd->arity, x->argc)) {
        pk_multi_reject(x->c);
        pk_reply_errorf(x->out,
                        "ERR wrong number of arguments for '%s' command",
                        cmd->name);
        return;
    }
    if (!x->c->authed && !(cmd->flags & PK_CMD_NOAUTH)) {
        pk_multi_reject(x->c);
        pk_reply_error(x->out, "NOAUTH Authentication required.");
        return;
    }
    /* The default user, unrestricted, costs one test; node-to-node
     * connections (PK.AUTH) are not users. */
    if (x->c->user && !x->c->internal &&
        !pk_acl_user_unrestricted(x->c->user) && !pk_acl_conn_allows(x, cmd)) {
        pk_multi_reject(x->c);
        return;
    }
    if (x->c->multi && !pk_multi_runs_now(cmd)) {
        pk_multi_queue(x, cmd);
        return;
    }
    if (!pk_route(x, cmd)) {
        /* Only WATCH routes among what runs inside MULTI, and it is
         * neither forwarded nor held: this was a rejection. */
        pk_multi_reject(x->c);
        return;
    }
    t0 = mono_us();
    out0 = pk_obuf_pending(x->out);
    pk_cmd_run(x, cmd);
    account(x, cmd, t0, out0);
    pk_hot_note(x, cmd->first, (cmd->flags & PK_CMD_WRITE) != 0);
    if (x->have_part)
        pk_repl_note(x, (cmd->flags & PK_CMD_WRITE) != 0);
    if (x->srv->dispatch_depth == 0)
        pk_block_serve(x->srv);
}

/* One COMMAND entry, in Redis 7's 10-field shape. */
static void reply_entry(pk_cmd_ctx *x, const pk_cmd *c)
{
    static const struct {
        unsigned flag;
        const char *name;
    } flags[] = {{PK_CMD_WRITE, "write"}, {PK_CMD_READONLY, "readonly"},
                 {PK_CMD_ADMIN, "admin"}, {PK_CMD_NOAUTH, "no_auth"},
                 {PK_CMD_STALE, "stale"}, {PK_CMD_LOADING, "loading"},
                 {PK_CMD_FAST, "fast"}};
    size_t nflags = 0, ncats = 1;
    const char *p;

    pk_reply_array(x->out, 10);
    pk_reply_bulk_str(x->out, c->name);
    pk_reply_int(x->out, c->arity);
    for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
        nflags += (c->flags & flags[i].flag) != 0;
    pk_reply_set(x->out, x->proto, nflags + (c->keys != NULL));
    for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
        if (c->flags & flags[i].flag)
            pk_reply_simple(x->out, flags[i].name);
    /* Clients ask COMMAND GETKEYS for the keys of these. */
    if (c->keys)
        pk_reply_simple(x->out, "movablekeys");
    pk_reply_int(x->out, c->first);
    pk_reply_int(x->out, c->last);
    pk_reply_int(x->out, c->step);
    for (p = c->acl; *p; p++)
        ncats += *p == ' ';
    pk_reply_set(x->out, x->proto, ncats);
    for (p = c->acl; *p;) {
        size_t n = strcspn(p, " ");
        char cat[64];
        snprintf(cat, sizeof(cat), "@%.*s", (int)n, p);
        pk_reply_simple(x->out, cat);
        p += n + (p[n] == ' ');
    }
    pk_reply_set(x->out, x->proto, 0); /* tips */
    pk_reply_array(x->out, 0);         /* key specs */
    pk_reply_array(x->out, 0);         /* subcommands */
}

void pk_cmd_command(pk_cmd_ctx *x)
{
    if (x->argc == 1) {
        pk_reply_array(x->out, NCMDS);
        for (size_t i = 0; i < NCMDS; i++)
            reply_entry(x, &table[i]);
    } else if (pk_arg_eq(&x->argv[1], "count") && x->argc == 2) {
        pk_reply_int(x->out, (int64_t)NCMDS);
    } else if (pk_arg_eq(&x->argv[1], "info")) {
        pk_reply_array(x->out, (size_t)x->argc - 2);
        for (int i = 2; i < x->argc; i++) {
            const pk_cmd *c = pk_cmd_find(x->argv[i].ptr, x->argv[i].len);
            if (c)
                reply_entry(x, c);
            else
                pk_reply_null_array(x->out, x->proto);
        }
    } else if (pk_arg_eq(&x->argv[1], "docs")) {
        /* Clients ask for docs only to show hints; an empty map is what
         * Redis answers for commands without docs. */
        pk_reply_map(x->out, x->proto, 0);
    } else if (pk_arg_eq(&x->argv[1], "list")) {
        pk_reply_array(x->out, NCMDS);
        for (size_t i = 0; i < NCMDS; i++)
            pk_reply_bulk_str(x->out, table[i].name);
    } else if (pk_arg_eq(&x->argv[1], "getkeys") && x->argc >= 3) {
        const pk_cmd *c = pk_cmd_find(x->argv[2].ptr, x->argv[2].len);
        const pk_arg *args = x->argv + 2;
        int nargs = x->argc - 2, nruns, n = 0;
        pk_keyrun r[PK_KEYRUNS_MAX];
        if (c == NULL) {
            pk_reply_error(x->out, "ERR Invalid command specified");
            return;
        }
        if (!pk_arity_ok(c->arity, nargs)) {
            pk_reply_error(x->out,
                           "ERR Invalid number of arguments specified for "
                           "command");
            return;
        }
        nruns = pk_cmd_keyruns(c, nargs, args, r);
        if (nruns == 0) {
            pk_reply_error(x->out, "ERR The command has no key arguments");
            return;
        }
        for (int k = 0; k < nruns; k++)
            n += (r[k].last - r[k].first) / r[k].step + 1;
        pk_reply_array(x->out, (size_t)n);
        for (int k = 0; k < nruns; k++)
            for (int i = r[k].first; i <= r[k].last; i += r[k].step) {
                pk_slice key = pk_cmd_key(c, &args[i]);
                pk_reply_bulk(x->out, key.ptr, key.len);
            }
    } else {
        pk_reply_errorf(
            x->out, "ERR unknown subcommand '%.*s'. Try COMMAND HELP.",
            (int)(x->argv[1].len > 128 ? 128 : x->argv[1].len), x->argv[1].ptr);
    }
}
