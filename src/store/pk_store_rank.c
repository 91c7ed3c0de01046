/*
 * pk_store_rank: ranks over one collection's member records, so that a
 * uniform random pick (SPOP, SRANDMEMBER) does not walk from an end.
 *
 * LMDB keeps no ranks.  A rank index over the records prefix | tag | sub
 * of one key splits them, in key order, into blocks of PK__RANK_BLOCK
 * records (more when there would be over PK__RANK_BLOCKS_MAX blocks): the
 * sub-key each block starts at (block 0 at the first record) and how many
 * records it holds, summed in a Fenwick tree.  Rank r is found by a
 * descent of the tree to its block, then by seeking to the block's start
 * and stepping inside it: O(log n + block) for a pick instead of O(n).
 * Building one is a walk over the collection; PK__RANK_SLOTS indexes are
 * kept, the least recently used one giving way.
 *
 * Exactness.  The record layer reports every insert and delete of a data
 * record (pk__rank_note), so an index counts every write of this process:
 * commands, replication, settling, imports.  Deleting a META record drops
 * the indexes of its key; a block that grew past PK__RANK_GROW times its
 * built size drops its index (the next pick rebuilds it); a write
 * transaction that does not commit drops them all, since they count its
 * writes.  Only write transactions use an index, because only they see
 * every change it has counted; an index whose total is not the count the
 * caller read from the META record is rebuilt, as a guard.
 *
 * Memory only, never persisted.  Every function runs in the one write
 * transaction of the store, so no lock is needed.
 */
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "core/pk_range.h" /* pk_key_cmp: LMDB's default order */
#include "store/pk_store_int.h"

#define PK__RANK_MIN 256u          /* smaller collections are walked */
#define PK__RANK_BLOCK 8u          /* records per block as built */
#define PK__RANK_BLOCKS_MAX 65536u /* larger blocks beyond */
#define PK__RANK_GROW 4u /* a block this many times its size: rebuild */

struct pk__rank {
    uint8_t prefix[PK_KEYENC_SHORT];
    size_t plen;
    uint8_t tag;
    uint64_t total; /* records counted */
    uint64_t limit; /* a block holding more drops the index */
    uint64_t used;  /* store's rank_tick when last used */
    uint32_t nblk;  /* blocks; block 0 starts at the first record */
    uint64_t *cnt;  /* owned, nblk: records per block */
    uint64_t *fen;  /* owned, nblk + 1: Fenwick sums of cnt, 1-based */
    uint32_t top;   /* the highest power of two <= nblk */
    size_t *off;    /* owned, nblk: block i's start in subs */
    uint16_t *len;  /* owned, nblk: its length (block 0's is 0) */
    uint8_t *subs;  /* owned: the start sub-keys, back to back */
    size_t subs_len;
    uint32_t hint; /* the block pk__rank_find found last */
};

static void rank_free(pk__rank *x)
{
    if (x != NULL) {
        free(x->cnt);
        free(x->fen);
        free(x->off);
        free(x->len);
        free(x->subs);
        free(x);
    }
}

/* Drops slot i, moving the last slot into it. */
static void drop_slot(pk_store *s, uint32_t i)
{
    rank_free(s->rank[i]);
    s->rank[i] = s->rank[--s->nrank];
    s->rank[s->nrank] = NULL;
}

void pk__rank_clear(pk_store *s)
{
    while (s->nrank > 0) {
        drop_slot(s, s->nrank - 1);
    }
}

/* The slot holding the index of prefix | tag, or nrank. */
static uint32_t find_slot(const pk_store *s, const uint8_t *prefix, size_t plen,
                          uint8_t tag)
{
    for (uint32_t i = 0; i < s->nrank; i++) {
        const pk__rank *x = s->rank[i];

        if (x->tag == tag && x->plen == plen &&
            memcmp(x->prefix, prefix, plen) == 0) {
            return i;
        }
    }
    return s->nrank;
}

/* Whether sub falls in block b: its start <= sub < the next start. */
static int in_block(const pk__rank *x, uint32_t b, const uint8_t *sub, size_t n)
{
    return pk_key_cmp(x->subs + x->off[b], x->len[b], sub, n) <= 0 &&
           (b + 1 == x->nblk ||
            pk_key_cmp(sub, n, x->subs + x->off[b + 1], x->len[b + 1]) < 0);
}

/* The block sub falls in: the last whose start is <= sub.  A pick deletes
 * or replaces in the block it was found in, so that block is tried
 * first. */
static uint32_t block_of(const pk__rank *x, const uint8_t *sub, size_t n)
{
    uint32_t lo = 0, hi = x->nblk - 1;

    if (x->hint < x->nblk && in_block(x, x->hint, sub, n)) {
        return x->hint;
    }

    while (lo < hi) {
        uint32_t mid = lo + (hi - lo + 1) / 2;

        if (pk_key_cmp(x->subs + x->off[mid], x->len[mid], sub, n) <= 0) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    return lo;
}

void pk__rank_note(pk_txn *t, const uint8_t *k, size_t klen, int delta)
{
    pk_store *s = t->s;
    pk_keyparts kp;
    pk__rank *x;
    uint32_t i, b;

    t->ins_del++;
    if (s->nrank == 0 || pk_keyenc_parse(k, klen, &kp) != 0) {
        return;
    }
    if (kp.tag == PK_TAG_META) {
        for (i = s->nrank; i-- > 0;) {
            if (s->rank[i]->plen == kp.prefix_len &&
                memcmp(s->rank[i]->prefix, k, kp.prefix_len) == 0) {
                drop_slot(s, i);
            }
        }
        return;
    }
    if ((i = find_slot(s, k, kp.prefix_len, kp.tag)) == s->nrank) {
        return;
    }
    x = s->rank[i];
    b = block_of(x, kp.sub, kp.sub_len);
    if (delta < 0 && (x->cnt[b] == 0 || x->total == 0)) {
        drop_slot(s, i); /* cannot be: an index that missed a write */
        return;
    }
    x->cnt[b] += (uint64_t)(int64_t)delta;
    x->total += (uint64_t)(int64_t)delta;
    if (x->cnt[b] > x->limit) {
        drop_slot(s, i);
        return;
    }
    for (b++; b <= x->nblk; b += b & -b) {
        x->fen[b] += (uint64_t)(int64_t)delta;
    }
}

/* The block holding rank *r (< total), *r made the rank inside it. */
static uint32_t block_at(const pk__rank *x, uint64_t *r)
{
    uint32_t pos = 0;

    for (uint32_t step = x->top; step > 0; step >>= 1) {
        if (pos + step <= x->nblk && x->fen[pos + step] <= *r) {
            pos += step;
            *r -= x->fen[pos];
        }
    }
    return pos;
}

/* Sums the built counts into the Fenwick tree; 0 or PK_ENOMEM. */
static int sum_blocks(pk__rank *x)
{
    uint32_t n = x->nblk;

    if ((x->fen = calloc((size_t)n + 1, sizeof(*x->fen))) == NULL) {
        return PK_ENOMEM;
    }
    for (uint32_t i = 1; i <= n; i++) {
        uint32_t j = i + (i & -i);

        x->fen[i] += x->cnt[i - 1];
        if (j <= n) {
            x->fen[j] += x->fen[i];
        }
    }
    for (x->top = 1; x->top * 2 <= n; x->top *= 2) {
    }
    return 0;
}

/* Appends the start sub-key of a new block; 0 or PK_ENOMEM. */
static int add_block(pk__rank *x, uint32_t *cap, size_t *subs_cap,
                     const uint8_t *sub, size_t n)
{
    if (x->nblk == *cap) {
        uint32_t c = *cap ? *cap * 2 : 64;
        uint64_t *cnt = realloc(x->cnt, c * sizeof(*cnt));
        size_t *off = cnt ? realloc(x->off, c * sizeof(*off)) : NULL;
        uint16_t *len = off ? realloc(x->len, c * sizeof(*len)) : NULL;

        x->cnt = cnt ? cnt : x->cnt;
        x->off = off ? off : x->off;
        x->len = len ? len : x->len;
        if (len == NULL) {
            return PK_ENOMEM;
        }
        *cap = c;
    }
    if (x->subs == NULL || x->subs_len + n > *subs_cap) {
        size_t c = (*subs_cap + n) * 2 + 64;
        uint8_t *p = realloc(x->subs, c);

        if (p == NULL) {
            return PK_ENOMEM;
        }
        x->subs = p;
        *subs_cap = c;
    }
    if (n > 0) {
        memcpy(x->subs + x->subs_len, sub, n);
    }
    x->off[x->nblk] = x->subs_len;
    x->len[x->nblk] = (uint16_t)n;
    x->cnt[x->nblk] = 0;
    x->subs_len += n;
    x->nblk++;
    return 0;
}

/* Walks prefix | tag's records into a new index.  0, PK_ENOMEM, or a
 * sticky error. */
static int build(pk_txn *t, const uint8_t *prefix, size_t plen, uint8_t tag,
                 uint64_t count, pk__rank **out)
{
    uint8_t kb[PK_KEYENC_MAX + 1];
    uint64_t size = PK__RANK_BLOCK;
    uint32_t cap = 0;
    size_t subs_cap = 0, n = plen + 1;
    pk__rank *x = calloc(1, sizeof(*x));
    MDB_cursor *c = NULL;
    MDB_val k, v;
    int rc, mrc;

    if (x == NULL) {
        return PK_ENOMEM;
    }
    while (count / size >= PK__RANK_BLOCKS_MAX) {
        size *= 2;
    }
    memcpy(x->prefix, prefix, plen);
    x->plen = plen;
    x->tag = tag;
    x->limit = size * PK__RANK_GROW;
    memcpy(kb, prefix, plen);
    kb[plen] = tag;
    k = (MDB_val){n, kb};
    rc = pk__cursor(t, t->s->data, &c);
    mrc = rc ? 0 : mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
    while (rc == 0 && mrc == 0 && k.mv_size >= n &&
           memcmp(k.mv_data, prefix, plen) == 0 &&
           ((const uint8_t *)k.mv_data)[plen] == tag) {
        /* Block 0 starts at the start: members may come before its
         * first one later. */
        if (x->total % size == 0) {
            rc = add_block(x, &cap, &subs_cap, (const uint8_t *)k.mv_data + n,
                           x->nblk ? k.mv_size - n : 0);
        }
        if (rc == 0) {
            x->cnt[x->nblk - 1]++;
            x->total++;
            mrc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
        }
    }
    if (rc == 0 && mrc != 0 && mrc != MDB_NOTFOUND) {
        rc = pk__fail(t, pk__err(mrc));
    }
    if (rc == 0 && x->total != count) {
        rc = pk__fail(t, PK_ECORRUPT); /* the META count is wrong */
    }
    rc = rc ? rc : sum_blocks(x);
    if (rc != 0) {
        rank_free(x);
        return rc;
    }
    *out = x;
    return 0;
}

int pk__rank_find(pk_txn *t, const uint8_t *prefix, size_t plen, uint8_t tag,
                  uint64_t count, uint64_t r, pk_slice *start, uint64_t *skip)
{
    pk_store *s = t->s;
    pk__rank *x = NULL;
    uint32_t i, b;
    int rc;

    if (t->rdonly || count < PK__RANK_MIN || r >= count ||
        plen > sizeof(x->prefix)) {
        return PK_ENOTFOUND;
    }
    i = find_slot(s, prefix, plen, tag);
    if (i < s->nrank && s->rank[i]->total != count) {
        drop_slot(s, i);
        i = s->nrank;
    }
    if (i == s->nrank) {
        if ((rc = build(t, prefix, plen, tag, count, &x)) != 0) {
            return rc == PK_ENOMEM ? PK_ENOTFOUND : rc;
        }
        if (s->nrank == PK__RANK_SLOTS) {
            uint32_t old = 0;

            for (uint32_t j = 1; j < s->nrank; j++) {
                old = s->rank[j]->used < s->rank[old]->used ? j : old;
            }
            drop_slot(s, old);
        }
        i = s->nrank++;
        s->rank[i] = x;
    }
    x = s->rank[i];
    x->used = ++s->rank_tick;
    b = block_at(x, &r);
    x->hint = b;
    *start = (pk_slice){x->subs + x->off[b], x->len[b]};
    *skip = r;
    return 0;
}
