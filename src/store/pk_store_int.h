/*
 * pk_store_int: what the store's source files share and nothing outside
 * src/store may use -- the structs behind the opaque handles, the on-disk
 * record formats, the record layer (pk__rec_*) through which every write
 * to the data DB goes, and the stats cache (pk__stat_*).
 *
 * The record layer keeps the derived state exact: each put or delete of a
 * data record adjusts its partition's key and byte counts, keeps the expiry
 * index in step with META records and appends a physical entry to the
 * change record of the current operation.  Operations are framed by
 * pk__op_begin / pk__op_end: one operation touches one partition, loads its
 * stats once, and ends by appending one change record (one log sequence
 * number per command) and saving the stats.  Because followers, imports
 * and local commands all go through this layer, applying a log or a
 * snapshot reproduces counters and expiry index as well as the data.
 * A group (pk_txn_group_begin) widens the frame of the log only: the
 * operations on its partition keep their own stats and checks, and their
 * change records are concatenated into one record when the group ends
 * (MULTI/EXEC ships as one unit to followers).
 *
 * Per-operation cost is what bounds write throughput (a group commit
 * holds hundreds of commands), so a write transaction keeps one cursor
 * per DB it writes (a put right after a get of the same key then finds
 * its page without descending from the root), and stats go through a
 * cache in pk_store that checkpoints write back (pk_store_stcache.c).
 *
 *   META value     0 u8 type | 1 u8 flags | 2 u64 expire ms (0 none)
 *                  | 10 full key, if flags bit 0: u32 length | user key
 *                  | body: string value, or u64 element count (hash, zset,
 *                  set, list) | list only: u64 head, the position of its
 *                  first element (elements sit at head .. head + count
 *                  - 1, no gaps: pk_list.c)
 *                  flags: bit 0 (PK__META_FKEY) is set exactly for keys
 *                  whose prefix is the long form (pk_keyenc.h), other
 *                  bits 0.  The body starts after the full key
 *                  (pk__meta_body), so type-specific fields are at offsets
 *                  relative to it and a key of any length combines with
 *                  any body layout.
 *   LITEM value    the element (sub-key: its u64 position, big-endian)
 *   HFIELD value   the field's value; for a long field (its sub-key is
 *                  the long form, pk_keyenc.h): u32 field length | field
 *                  | the field's value
 *   ZMEMBER value  u64 bits of the score (big-endian); long member: the
 *                  same 8 bytes | member
 *   ZSCORE value   empty; long member: the member (so that a walk by
 *                  score has it without a second lookup)
 *   SMEMBER value  empty; long member: the member
 *   stats key      u32 group (part >> 8), big-endian
 *   stats value    for each of the group's 256 partitions, in order:
 *                  u8 mask | the fields whose mask bit is set, as LEB128
 *                  varints: keys (bit 0), bytes (1), log last (2),
 *                  log last - log trim (3), log pos (4)
 *   journal key    u64 position (1, 2, ... in append order, big-endian)
 *   journal value  u32 part (top bit: deferred) | u64 seq | u64 prev
 *                  (position of the part's previous record, 0 none)
 *                  | u64 keys | u64 bytes (the part's counts after the
 *                  record) | change record
 *   info "stats"   u64 journal position the stats DB reflects
 *   info "settled" u64 journal position up to which deferred records
 *                  are in the data DB (pk_store_settle.c)
 *   change record  (u8 op | u16 klen | key without part
 *                  | PUT only: u32 vlen | value)+
 *
 * The log DB is one journal for all partitions, in commit order, so an
 * append touches only its last page; each partition's records form a
 * chain backwards from stats.log_pos (pk_store_journal.c).  The stats DB
 * is written at checkpoints; in between, the journal records carry the
 * stats (pk_store_stat.c).
 */
#ifndef PK_STORE_PK_STORE_INT_H
#define PK_STORE_PK_STORE_INT_H

#include <lmdb.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/pk_pmap.h"
#include "store/pk_keyenc.h"
#include "store/pk_slice.h"
#include "store/pk_store.h"
#include "store/pk_store_log.h"

#define PK__META_HDR 10
#define PK__META_AGG (PK__META_HDR + 8) /* hash/zset META of a short key */
#define PK__META_FKEY 0x01u /* flags: the full user key follows the header */
/* Longest META value: header, full key, string value. */
#define PK__META_MAX                                                           \
    ((uint64_t)PK__META_HDR + 4 + PK_STORE_KEY_MAX + PK_STORE_VALUE_MAX)
/* The body of a list's META: count, head (offsets from the body). */
#define PK__LIST_BODY 16
#define PK__SGROUP 256u /* partitions per stats record */
#define PK__SGROUP_MAX (PK__SGROUP * (1 + 5 * 10)) /* mask, 5 varints */
#define PK__CKPT_RECORDS 8192u /* journal records between checkpoints */
#define PK__JHDR 36 /* journal value header: part, seq, prev, keys, bytes */
#define PK__CTR_PAGE 1024u

enum pk__log_op { PK__LOG_PUT = 1, PK__LOG_DEL = 2, PK__LOG_DELPREFIX = 3 };

/* Record types in META values; equal to the public pk_type values. */
enum pk__type {
    PK__T_STRING = 1,
    PK__T_HASH = 2,
    PK__T_ZSET = 3,
    PK__T_LIST = 4,
    PK__T_SET = 5,
    PK__T_LASTTYPE = PK__T_SET,
};

/* pk__op_begin flags. */
#define PK__OP_NOLOG 1u /* do not append a change record */
#define PK__OP_QUIET 2u /* do not count as a write command */
#define PK__OP_DEFER 4u /* appends a deferred record (pk_store_settle.c) */
#define PK__OP_RAW 8u   /* data behind the log is fine: no settling first */

/* In a journal header's part field: the record is deferred. */
#define PK__JDEFER 0x80000000u

typedef struct pk__ctr {
    uint64_t reads;
    uint64_t writes;
} pk__ctr;

typedef struct pk__stat {
    uint64_t keys;
    uint64_t bytes;
    uint64_t log_last;
    uint64_t log_trim; /* records with seq <= log_trim are gone */
    uint64_t log_pos;  /* journal position of record log_last, 0 none */
    /* Memory only (the stats DB does not hold it): journal position of
     * the newest deferred record not yet settled, 0 none. */
    uint64_t pend;
} pk__stat;

/*
 * One stats record in the stats cache (pk_store_stcache.c): the stats of
 * partitions group * PK__SGROUP + i.  Allocated once, never moved or
 * freed before pk_store_close, so pointers to it stay valid.
 */
typedef struct pk__sgrp {
    uint32_t group;
    uint8_t valid;   /* st is current (else never changed since open) */
    uint8_t pending; /* listed in pk_store.pending */
    uint8_t written; /* by a checkpoint of the open write transaction */
    /* While valid: enc (owned, enc_cap bytes) holds the record as in the
     * stats DB, entry i at enc[off[i]..off[i + 1]); edirty marks the
     * entries of st that may differ from it, undone those whose value
     * before the open write transaction is in its undo log. */
    uint8_t *enc;
    size_t enc_cap;
    uint16_t off[PK__SGROUP + 1];
    uint64_t edirty[PK__SGROUP / 64];
    uint64_t undone[PK__SGROUP / 64];
    pk__stat st[PK__SGROUP];
    uint64_t hold[PK__SGROUP]; /* pk_store_log_hold, 0 none (memory) */
} pk__sgrp;

/* An undo log entry: entry idx of g before the transaction changed it. */
typedef struct pk__undo {
    pk__sgrp *g;
    unsigned idx;
    pk__stat st;
} pk__undo;

/* A read transaction's stats of partitions changed since the checkpoint. */
typedef struct pk__ovl {
    uint32_t part;
    pk__stat st;
} pk__ovl;

/* A journal record as parsed from the map (pk_store_journal.c). */
typedef struct pk__jrec {
    uint64_t pos;
    uint32_t part;
    int deferred; /* appended by pk_store_log_defer */
    uint64_t seq;
    uint64_t prev;      /* position of the partition's previous record */
    uint64_t keys;      /* the partition's keys after this record */
    uint64_t bytes;     /* and bytes */
    const uint8_t *rec; /* the change record, borrowed from the map */
    size_t len;
} pk__jrec;

/*
 * The walk cache (pk_store_journal.c): journal positions of one
 * partition's records first..first + n - 1, so that a reader that is far
 * behind does not walk the whole chain back for every batch it reads.
 * Memory only, never trusted: each position is checked on use.
 */
#define PK__WCACHE_WAYS 8u        /* entries, by part % ways */
#define PK__WCACHE_MAX (1u << 20) /* positions worth keeping */

typedef struct pk__sbatch pk__sbatch; /* pk_store_settle.c */
void pk__sbatch_free(pk__sbatch *b);

/* Rank indexes (pk_store_rank.c): memory only, in the write transaction. */
#define PK__RANK_SLOTS 4u
typedef struct pk__rank pk__rank;

typedef struct pk__wcache {
    uint32_t part;
    uint64_t first, n;
    uint64_t *pos; /* owned, cap entries */
    size_t cap;
} pk__wcache;

struct pk_store {
    MDB_env *env; /* owned */
    int lock_fd;  /* owned: the directory's flock (pk_store_open) */
    MDB_dbi data, log, expiry, stats, info;
    int wtxn_open;     /* a write pk_txn exists */
    uint64_t log_keep; /* journal records kept (pk_store_log_retain) */
    /* The stats cache (pk_store_stcache.c): an open-addressing table of
     * stc_mask + 1 slots (or NULL), each NULL or an owned group; pending
     * lists the groups that differ from the stats DB. */
    pk__sgrp **stc;
    uint32_t stc_mask;
    uint32_t stc_used;  /* groups in the table */
    pk__sgrp **pending; /* owned array of borrowed groups */
    size_t npending, pending_cap;
    uint64_t since_ckpt; /* journal records committed since a checkpoint */
    uint64_t log_top;    /* highest journal position ever committed */
    /* Deferred records (pk_store_settle.c): those at journal positions
     * <= settled are in the data DB, the unsettled ones above are not. */
    uint64_t settled;
    uint64_t unsettled;
    int settle_open; /* unsettled is known (pk_store_open got that far) */
    pk__sbatch *sb;  /* the batch being settled, owned, or NULL */
    pk__wcache wcache[PK__WCACHE_WAYS];
    /* In-memory read/write counters, pages of PK__CTR_PAGE partitions
     * allocated on first use; partitions >= PK_PARTITIONS_MAX are not
     * counted. */
    pk__ctr *ctr[PK_PARTITIONS_MAX / PK__CTR_PAGE];
    /* pk_store_prefault: the map (found on first use) is faulted in up
     * to offset pf_upto; pf_off once that cannot be done. */
    char *pf_map;
    uint64_t pf_upto;
    int pf_off;
    pk__rank *rank[PK__RANK_SLOTS]; /* owned, nrank used */
    uint32_t nrank;
    uint64_t rank_tick;
};

/* A growable byte buffer, owned by its transaction. */
typedef struct pk__buf {
    uint8_t *p;
    size_t len;
    size_t cap;
} pk__buf;

/* Coalescing hints (pk_store_journal.c): per partition slot, the newest
 * record this transaction appended there and a hash of its lone key. */
#define PK__COAL_SLOTS 64u
typedef struct pk__coal {
    uint64_t pos;
    uint32_t part;
    uint32_t khash; /* 0: the record is not one PUT or DEL */
} pk__coal;

struct pk_txn {
    pk_store *s;  /* borrowed */
    MDB_txn *txn; /* owned */
    int rdonly;
    int err; /* sticky error, 0 while healthy */
    /* Data records inserted or deleted (counted by pk__rank_note). */
    uint64_t ins_del;
    /* pk__meta_load found META key absent_key (absent_len bytes, 0 for
     * none) missing when ins_del was absent_at: while no record comes or
     * goes, pk__rec_put inserts it without looking for it again. */
    pk__coal coal[PK__COAL_SLOTS];
    uint8_t absent_key[PK_KEYENC_SHORT + 1];
    size_t absent_len;
    uint64_t absent_at;
    /* Cursors opened on first use (pk__cursor), closed with the
     * transaction; any function may move them, none keeps a position in
     * them across calls. */
    MDB_cursor *dc; /* data */
    MDB_cursor *lc; /* log */
    /* data, for META records only (pk__meta_load, pk__rec_put): between
     * an operation's load of a key and its META write it stays on that
     * META while dc walks the members, so the write needs no search. */
    MDB_cursor *mc;
    uint64_t log_next; /* next journal position, 0 until looked up */
    /* Stats, write transactions (pk_store_stcache.c): the undo log of
     * their changes to the stats cache; ckpt 1 when the commit must be
     * a checkpoint (a change the journal does not carry), 2 once one ran
     * (ckpt_* as it left them); saves and appended count pk__stat_save
     * calls and journal records, op_appended as the operation began. */
    pk__undo *undo; /* owned */
    size_t nundo, undo_cap;
    int ckpt;
    uint64_t ckpt_top; /* the journal position it recorded */
    uint64_t ckpt_saves, ckpt_appended;
    uint64_t saves;
    uint64_t appended;
    uint64_t op_appended;
    /* Deferred records: settled as the transaction sees it (0: the
     * store's), and its change to the store's unsettled count. */
    uint64_t settled;
    int64_t unsettled;
    /* The store's batch: sb_made when this transaction made it, else
     * sb_touched with its next as it found it; sb_fin (owned) one it
     * finished, freed at the commit and back at an abort. */
    int sb_made, sb_touched;
    size_t sb_next;
    pk__sbatch *sb_fin;
    /* Stats, read transactions (pk_store_stat.c): the partitions changed
     * since the checkpoint they see, sorted (once ovl_ok).  Both kinds:
     * the stats group last decoded from the stats DB (owned, or NULL;
     * rgrp_ok while it matches the DB), so that a walk over all
     * partitions decodes each record once. */
    pk__ovl *ovl; /* owned */
    size_t novl;
    int ovl_ok;
    pk__stat *rgrp;
    uint32_t rgrp_id;
    int rgrp_ok;
    /* The operation in progress (write transactions only). */
    int op_open;
    unsigned op_flags;
    uint32_t op_part;
    int st_dirty;
    pk__stat st;     /* op_part's stats, saved by pk__op_end */
    pk__buf log;     /* change record being built */
    pk__buf val;     /* META value being built */
    pk__buf scratch; /* bytes handed back by writes */
    pk__buf subv;    /* a long member's record value (pk__sub_val) */
    /* A group (pk_txn_group_begin, pk_store_log.h): while grp_open, the
     * logged operations on grp_part end by adding their change records
     * to grp_log instead of the journal (their stats are saved as
     * usual); pk_txn_group_end appends grp_log as one record, under one
     * sequence number, in an operation of its own. */
    int grp_open;
    uint32_t grp_part;
    pk__buf grp_log;
    uint64_t changes; /* logged data changes so far (pk_txn_changes) */
};

/* A key's META record as loaded by pk__meta_load. */
typedef struct pk__meta {
    int exists;
    uint8_t type; /* enum pk__type */
    uint64_t expire;
    uint64_t count;     /* hash fields, zset members or list elements */
    uint64_t head;      /* list: position of the first element */
    const uint8_t *val; /* string value, borrowed from the map */
    size_t vlen;
    size_t plen; /* prefix length; key[plen] is the tag */
    uint8_t key[PK_KEYENC_MAX];
    /* The user key as pk__meta_load got it (borrowed from its caller, so
     * valid for the operation); longkey: the prefix is the long form and
     * pk__meta_put writes the full key into the META value. */
    const uint8_t *ukey;
    size_t uklen;
    int longkey;
} pk__meta;

int pk__err(int mdb_rc);
int pk__fail(pk_txn *t, int rc);
int pk__buf_reserve(pk__buf *b, size_t extra);
/*
 * splitmix64: the next 64 random bits from a generator whose whole state
 * is *s (any value, a caller's seed).  For spreading one random number
 * over several draws (RANDOMKEY, SPOP, SRANDMEMBER), not for secrets.
 */
uint64_t pk__rand_next(uint64_t *s);
pk__ctr *pk__ctr_get(pk_store *s, uint32_t part);

/*
 * Stats of part as t sees them: from the cache in a write transaction,
 * from the stats DB and the journal tail in a read transaction.  0,
 * PK_ENOMEM or an error.
 */
int pk__stat_load(pk_txn *t, uint32_t part, pk__stat *st);
/* pk__stat_load of a write transaction (pk_store_stcache.c). */
int pk__stc_load(pk_txn *t, uint32_t part, pk__stat *st);
/* part's row in the stats DB as t sees it, not brought up to date. */
int pk__stat_row(pk_txn *t, uint32_t part, pk__stat *st);
/* The stats DB record codec (format above); encode returns the length. */
int pk__stat_zero(const pk__stat *st);
size_t pk__stat_encode(uint8_t *p, const pk__stat *st);
int pk__stat_decode(const MDB_val *v, pk__stat *st, uint16_t *offs);
/* Sets part's stats in write transaction t (undone if t aborts). */
int pk__stat_save(pk_txn *t, uint32_t part, const pk__stat *st);
/*
 * Checkpoint: trims the journal to its budget, writes every changed stats
 * group and the journal position they reflect (write transactions).
 */
int pk__stat_checkpoint(pk_txn *t);
/* Called by pk_txn_commit before mdb_txn_commit: checkpoints if due. */
int pk__stat_commit(pk_txn *t);
/* Ends t's use of the cache: committed != 0 keeps its changes. */
void pk__stat_end(pk_txn *t, int committed);
/*
 * The first partition >= from with non-zero stats as t sees them.  0,
 * PK_ENOTFOUND or an error.
 */
int pk__stat_next(pk_txn *t, uint64_t from, uint32_t *part, pk__stat *st);
/* At open: brings the stats DB up to the journal (pk_store_open). */
int pk__stat_recover(pk_store *s);
/* part's log hold (0 none). */
uint64_t pk__stat_hold(pk_store *s, uint32_t part);
int pk__stat_set_hold(pk_store *s, uint32_t part, uint64_t seq);
void pk__stat_free(pk_store *s);

/* t's cursor on dbi (t->s->data or t->s->log), opened on first use. */
int pk__cursor(pk_txn *t, MDB_dbi dbi, MDB_cursor **out);
/* t's META cursor on the data DB (t->mc), opened on first use. */
int pk__meta_cursor(pk_txn *t, MDB_cursor **out);

int pk__read_begin(pk_txn *t, uint32_t part);
int pk__op_begin(pk_txn *t, uint32_t part, unsigned flags);
int pk__op_end(pk_txn *t, int rc);

/*
 * Checks a META value and takes its header apart (0 or PK_ECORRUPT).
 * pk__meta_body gives, for a value pk__meta_parse accepted, the offset of
 * its body and in *ukey the full user key (borrowed from v; {NULL, 0}
 * without PK__META_FKEY).
 */
int pk__meta_parse(const uint8_t *v, size_t n, uint8_t *type, uint64_t *expire,
                   uint64_t *count);
size_t pk__meta_body(const uint8_t *v, size_t n, pk_slice *ukey);
int pk__rec_check(const uint8_t *k, size_t klen, const uint8_t *v, size_t vlen);

int pk__rec_get(pk_txn *t, const uint8_t *k, size_t klen, MDB_val *v);

/*
 * Rank indexes (pk_store_rank.c).  pk__rank_find finds the record of rank
 * r (0-based) among the count records prefix | tag | sub of one key, in
 * key order: the walk seeks to prefix | tag | *start (borrowed until the
 * next write) and steps *skip records from the first one there.  It
 * returns 0, PK_ENOTFOUND when the caller should walk instead (a read
 * transaction, a small collection, no memory), or a sticky error
 * (PK_ECORRUPT when count is not the number of records).
 * pk__rank_note is called by the record layer after it inserted (delta
 * 1) or deleted (-1) the data record k; pk__rank_clear drops every index.
 */
int pk__rank_find(pk_txn *t, const uint8_t *prefix, size_t plen, uint8_t tag,
                  uint64_t count, uint64_t r, pk_slice *start, uint64_t *skip);
void pk__rank_note(pk_txn *t, const uint8_t *k, size_t klen, int delta);
void pk__rank_clear(pk_store *s);
int pk__rec_put(pk_txn *t, const uint8_t *k, size_t klen, const void *v,
                size_t vlen);
/*
 * Writes the record k -> v unless k is there already, in one search;
 * *added says which.  For sub-key records only: it keeps no expiry index
 * and key count, which META records need.  0 or a sticky error.
 */
int pk__rec_add(pk_txn *t, const uint8_t *k, size_t klen, const void *v,
                size_t vlen, int *added);
int pk__rec_del(pk_txn *t, const uint8_t *k, size_t klen, int *deleted);
/* Deletes the data record under c, a cursor of t on the data DB, as
 * pk__rec_del would (a sub-key record of the operation's partition). */
int pk__rec_del_here(pk_txn *t, MDB_cursor *c);
int pk__rec_delprefix(pk_txn *t, const uint8_t *prefix, size_t plen,
                      size_t limit, size_t *n);

/* Inside an operation on the key whose data prefix is prefix: deletes its
 * entries in every secondary index of its partition (pk_ftidx.c), and
 * sends the deletes of its global entries to the outbox (stamped now_ms),
 * as active expiry drops the key. */
int pk__ftidx_forget(pk_txn *t, const uint8_t *prefix, size_t plen,
                     uint64_t now_ms);

int pk__meta_load(pk_txn *t, uint32_t part, const void *key, size_t klen,
                  uint64_t now, pk__meta *m);
int pk__meta_put(pk_txn *t, pk__meta *m, const void *a, size_t alen,
                 const void *b, size_t blen);
int pk__key_drop(pk_txn *t, pk__meta *m);
/* Loads a key that must be missing or a sorted set (pk_zset.c). */
int pk__zset_load(pk_txn *t, uint32_t part, const void *key, size_t klen,
                  uint64_t now, pk__meta *m);

/*
 * Fields and members (pk_store_rec.c), for HFIELD, ZMEMBER, ZSCORE and
 * SMEMBER records; the layouts are above and in pk_keyenc.h.
 *
 * pk__sub_key builds prefix | tag | sub-key of member mem into buf
 * (PK_KEYENC_MAX bytes) for the tags other than ZSCORE: 0, PK_ERANGE (a
 * member longer than PK_STORE_VALUE_MAX) or PK_ENOMEM.
 *
 * pk__sub_full takes a record apart: sub is the record's sub-key (after
 * the tag; ZSCORE's begins with score8), val its value; *mem gets the
 * full member and *rest what a short member's record holds as its value
 * (the field's value, the score; empty for SMEMBER and ZSCORE), both
 * borrowing sub or val.  0, or PK_ECORRUPT when the lengths do not fit
 * the layout (the digest is not checked: pk__rec_check does).
 *
 * pk__sub_val gives the value to store for member mem whose short form
 * would store rest: rest itself, or for a long member bytes in t->subv
 * (valid until the next pk__sub_val) or mem.  0 or PK_ENOMEM (sticky).
 *
 * pk__sub_get looks up the record k (built by pk__sub_key) of member mem
 * and sets *rest as pk__sub_full: 0, PK_ENOTFOUND, PK_ERANGE when the
 * record holds another member (a digest collision: reads take it as
 * missing, writes refuse before writing), or an error.
 */
int pk__sub_key(const uint8_t *prefix, size_t plen, uint8_t tag,
                const void *mem, size_t mlen, uint8_t *buf, size_t *len);
int pk__sub_full(uint8_t tag, pk_slice sub, pk_slice val, pk_slice *mem,
                 pk_slice *rest);
int pk__sub_val(pk_txn *t, uint8_t tag, pk_slice mem, pk_slice rest,
                pk_slice *out);
int pk__sub_get(pk_txn *t, uint8_t tag, const uint8_t *k, size_t klen,
                const void *mem, size_t mlen, pk_slice *rest);
/* Whether a sub-key (without ZSCORE's score8) is a long member's. */
static inline int pk__sub_long(size_t sub_len)
{
    return sub_len == PK_KEYENC_SUB;
}

/*
 * A cursor over one key's records prefix | tag | sub (tag HFIELD, ZMEMBER
 * or SMEMBER; pk_store_walk.c), in sub-key order (rev: from the last):
 * byte order of the members but for long ones sharing a head
 * (pk_keyenc.h).  While valid, mem (the full member), rest (the rest of
 * the record as pk__sub_full gives it: a field's value, a member's 8
 * score bytes, nothing for a set) and sub (the sub-key, what the order is
 * of) borrow the map until the next write or step.
 */
typedef struct pk__sub_walk {
    MDB_cursor *c;         /* owned; NULL once closed */
    const uint8_t *prefix; /* borrowed; plen bytes */
    size_t plen;
    uint8_t tag;
    int valid;
    pk_slice mem;
    pk_slice rest;
    pk_slice sub;
} pk__sub_walk;

/*
 * Opens w on the records prefix | tag (plen bytes of an existing key's
 * prefix, so that prefix | tag fits in a key) at the first one, or at the
 * last when rev.  Returns 0 or a sticky error; w must be closed either
 * way.  pk__sub_walk_from opens w forward at the first record whose
 * sub-key is >= sub.
 */
int pk__sub_walk_open(pk_txn *t, pk__sub_walk *w, const uint8_t *prefix,
                      size_t plen, uint8_t tag, int rev);
int pk__sub_walk_from(pk_txn *t, pk__sub_walk *w, const uint8_t *prefix,
                      size_t plen, uint8_t tag, pk_slice sub);
int pk__sub_walk_next(pk_txn *t, pk__sub_walk *w, int rev);
/* Closes w; a closed or zeroed walk may be closed again. */
void pk__sub_walk_close(pk__sub_walk *w);

/*
 * Uniform random choices among the count records prefix | tag of a
 * loaded key m (m->exists, count >= 1; pk_store_rand.c), for SPOP,
 * SRANDMEMBER, HRANDFIELD and ZRANDMEMBER.  *seed is the splitmix64
 * state, advanced.
 *
 * pk__rand_walk opens w (to be closed either way) at a record drawn
 * uniformly.  pk__rand_pick calls cb with the member and rest of each
 * pick (borrowing the map until the next write): distinct records
 * (min(k, count) of them, each subset equally likely, in sub-key order)
 * unless repeat, else exactly k independent draws in draw order.  Memory
 * is bounded by PK__RAND_BATCH draws whatever k is.  Both return 0, cb's
 * value, PK_ENOMEM or a sticky error.
 */
#define PK__RAND_BATCH 65536u
typedef int (*pk__rand_cb)(void *ctx, pk_slice mem, pk_slice rest);
int pk__rand_walk(pk_txn *t, const pk__meta *m, uint8_t tag, uint64_t *seed,
                  pk__sub_walk *w);
int pk__rand_pick(pk_txn *t, const pk__meta *m, uint8_t tag, uint64_t k,
                  int repeat, uint64_t *seed, pk__rand_cb cb, void *ctx);

/*
 * HSCAN / ZSCAN / SSCAN over the records prefix | tag of the loaded key m
 * (pk_store_subscan.c).  Sub-keys form groups by their first 8 bytes
 * (zero padded); cursor is the big-endian value of a group (0: start).
 * At least count records are examined, then the rest of the last one's
 * group, and *next gets the following group (0 at the end).  Those whose
 * full member matches the glob (NULL: all) go to cb with the member and
 * the rest of the record (pk__sub_full), both borrowed from the map.
 * Returns 0, cb's value or an error.
 */
typedef int (*pk__sub_cb)(void *ctx, pk_slice sub, pk_slice val);
int pk__sub_scan(pk_txn *t, const pk__meta *m, uint8_t tag, uint64_t cursor,
                 size_t count, const void *match, size_t mlen, pk__sub_cb cb,
                 void *ctx, uint64_t *next);
/*
 * Strings (pk_str.c), shared with pk_bits.c.  pk__str_load loads a key that
 * must be missing or a string, inside an open operation: 0, PK_STORE_WRONGTYPE
 * or an error. pk__str_grow gives a copy of m's value, zero-padded to len bytes
 * (len >= m->vlen or not), in t's scratch memory: writing it with pk__meta_put
 * needs no copy of the map first.  0 or PK_ENOMEM (sticky).
 */
int pk__str_load(pk_txn *t, uint32_t part, const void *key, size_t klen,
                 uint64_t now, pk__meta *m);
int pk__str_grow(pk_txn *t, const pk__meta *m, size_t len, uint8_t **out);
/*
 * Writes the string val as m's key with this expiry (0 none), dropping
 * the key first if it holds another type; an expiry <= now leaves the key
 * deleted.  0, PK_ERANGE or a sticky error.
 */
int pk__str_put(pk_txn *t, pk__meta *m, const void *val, size_t vlen,
                uint64_t expire, uint64_t now);

/* The score stored in a ZMEMBER value (8 bytes, big-endian bits). */
static inline double pk__score_get(const uint8_t *p)
{
    uint64_t u = pk_be64_get(p);
    double d;

    memcpy(&d, &u, sizeof(d));
    return d;
}

/*
 * Journal (pk_store_log.c).  pk__log_append appends the open operation's
 * record under seq and updates t->st.  pk__log_drop deletes up to limit
 * (0: no bound) of the open operation's partition's records, newest
 * first, updating t->st.log_pos; *n gets the number deleted, *all whether
 * none is left.  pk__log_retain trims the journal's head to the retention
 * bound; the commit calls it before writing stats back.
 */
int pk__log_append(pk_txn *t, uint64_t seq, const void *rec, size_t len);
/* Puts the open operation's record in the place of its partition's newest
 * one, under the same seq, when that one was written in this transaction
 * and both are one PUT or DEL of the same key (the new one alone gives the
 * same data), unless the operation is raw or deferred: 1 when it did, 0
 * when that does not apply, else an error. */
int pk__log_coalesce(pk_txn *t, const void *rec, size_t len);
int pk__log_drop(pk_txn *t, size_t limit, size_t *n, int *all);
int pk__log_retain(pk_txn *t);
/* The highest journal position ever assigned, as t sees it. */
uint64_t pk__log_top(const pk_txn *t);
/* At open: finds log_top (the last record or, if higher, ckpt). */
int pk__log_open(pk_txn *t, uint64_t ckpt);
/* Calls fn for each journal record after position after, in order. */
int pk__log_scan(pk_txn *t, uint64_t after,
                 int (*fn)(void *ctx, const pk__jrec *r), void *ctx);
/*
 * Calls cb(ctx, seq, record, len) for part's records first..st->log_last
 * (st: part's stats as t sees them; log_trim < first <= log_last).
 */
int pk__log_walk(pk_txn *t, uint32_t part, const pk__stat *st, uint64_t first,
                 pk_log_cb cb, void *ctx);

int pk__scratch_copy(pk_txn *t, const void *p, size_t n, const void **out);

/* One entry of a change record (pk_store_log.h); key and val borrow it. */
typedef struct pk__entry {
    uint8_t op;
    const uint8_t *key;
    size_t klen;
    const uint8_t *val;
    size_t vlen;
} pk__entry;

/* Parses the entry at *off of rec; 0 or PK_ECORRUPT (pk_store_log.c). */
int pk__entry_next(const uint8_t *rec, size_t len, size_t *off, pk__entry *e);
/* Checks a whole record from another node; 0 or PK_ECORRUPT. */
int pk__rec_valid(uint32_t part, const uint8_t *rec, size_t len);

/*
 * Deferred records (pk_store_settle.c).  pk__part_ready makes part's data
 * current before a use of it: a write transaction settles, a read-only
 * one gets PK_EBUSY while part has deferred records.  pk__settled is the
 * settled position t sees.  pk__settle_end folds t's changes into the
 * store (committed != 0).
 */
int pk__part_ready(pk_txn *t, uint32_t part);
uint64_t pk__settled(const pk_txn *t);
void pk__settle_end(pk_txn *t, int committed);
/* At a checkpoint: with nothing unsettled, settled may rise to top. */
int pk__settle_mark(pk_txn *t, uint64_t top);
int pk__settle_open(pk_store *s);
/* The pend of part in the stats cache (0 when never loaded). */
uint64_t pk__stat_pend(pk_store *s, uint32_t part);

#endif
