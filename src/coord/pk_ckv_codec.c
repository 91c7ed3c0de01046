/*
 * pk_ckv_codec: the versioned binary encoding of the embedded
 * coordinator's state (format 1), which pk_coord_file writes to disk.
 *
 *   offset size field
 *   0      4    magic "PKCK"
 *   4      2    version, 1
 *   6      2    flags, 0
 *   8      8    revision
 *   16     8    next_lease (the id the next grant returns, >= 1)
 *   24     4    nleases
 *   28     4    nkeys
 *   32          lease[nleases], kv[nkeys], u32 CRC32C
 *
 *   lease  u64 id | u64 ttl_ms                                (16 bytes)
 *   kv     u16 klen | key | u32 vlen | value | u64 create_revision |
 *          u64 mod_revision | u64 version | u64 lease      (38 + k + v)
 *
 * Integers are big-endian.  The CRC32C (Castagnoli, as pk_pmap's) covers
 * every byte before it.  Deadlines are not stored: a decoded lease is
 * granted afresh for its whole TTL, as etcd does after a restart, so a
 * restart can only lengthen a lease, never cut one short.
 *
 * Decoding treats its input as hostile.  Magic and version come first, then
 * the checksum, then a bounds-checked reader with a sticky error parses the
 * body; counts are checked against the bytes left before anything is
 * allocated.  Beyond bounds, the state must be one this file could have
 * encoded, so that a buffer that passes can be served from:
 *
 *   - lease ids strictly increasing, in 1..next_lease-1; TTLs in
 *     1..PK_COORD_TTL_MAX_MS;
 *   - keys strictly increasing, 1..PK_COORD_KEY_MAX bytes; values at most
 *     PK_COORD_VALUE_MAX;
 *   - 1 <= create_revision <= mod_revision <= revision, and
 *     1 <= version <= mod_revision - create_revision + 1 (each put after
 *     the first takes a revision of its own);
 *   - no revision is claimed twice: the puts that created and last changed
 *     the keys are distinct events;
 *   - a key's lease is 0 or a lease of the table;
 *   - no trailing bytes; revision < 2^63.
 *
 * The format is canonical: decode-then-encode gives back the input.
 */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "coord/pk_ckv.h"
#include "coord/pk_ckv_int.h"
#include "coord/pk_coord.h"
#include "core/pk_err.h"

/*
 * CRC32C, internal to the core library (pk_pmap_codec.c), where the
 * partition map's codec, its tests and its fuzzer share it.  Declared here
 * until core gives it a header of its own.
 */
uint32_t pk__crc32c(const void *data, size_t len);

#define PK__CKV_MAGIC "PKCK"
#define PK__CKV_VERSION 1

enum {
    OFF_MAGIC = 0,
    OFF_VERSION = 4,
    OFF_FLAGS = 6,
    OFF_REVISION = 8,
    OFF_NEXT_LEASE = 16,
    OFF_NLEASES = 24,
    OFF_NKEYS = 28,
    HDR_LEN = 32,
    CRC_LEN = 4,
    LEASE_LEN = 16,
    KV_FIXED = 2 + 4 + 4 * 8, /* a kv without its key and value bytes */
};

static_assert(sizeof(PK__CKV_MAGIC) - 1 == OFF_VERSION - OFF_MAGIC, "magic");
static_assert(OFF_FLAGS == OFF_VERSION + 2 && OFF_REVISION == OFF_FLAGS + 2,
              "header layout");
static_assert(OFF_NEXT_LEASE == OFF_REVISION + 8 &&
                  OFF_NLEASES == OFF_NEXT_LEASE + 8,
              "header layout");
static_assert(OFF_NKEYS == OFF_NLEASES + 4 && HDR_LEN == OFF_NKEYS + 4,
              "header layout");
static_assert(KV_FIXED == 38, "kv record layout");
static_assert(PK_COORD_KEY_MAX <= UINT16_MAX, "key lengths fit in u16");
static_assert(PK_COORD_VALUE_MAX <= UINT32_MAX, "value lengths fit in u32");

#define PK__CKV_REVISION_LIMIT (1ull << 63)

/* ---- writing ---------------------------------------------------------- */

static uint8_t *put_be(uint8_t *p, uint64_t v, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        p[i] = (uint8_t)(v >> (8 * (n - 1 - i)));
    }
    return p + n;
}

static uint8_t *put_bytes(uint8_t *p, const void *src, size_t n)
{
    if (n > 0) {
        memcpy(p, src, n);
    }
    return p + n;
}

int pk_ckv_encode(const pk_ckv *s, uint8_t **buf, size_t *len)
{
    uint64_t n = HDR_LEN + (uint64_t)s->nleases * LEASE_LEN + CRC_LEN;
    uint8_t *out;
    uint8_t *p;

    if (buf == NULL || len == NULL) {
        return PK_EINVAL;
    }
    for (size_t i = 0; i < s->nkeys; i++) {
        n += KV_FIXED + (uint64_t)s->keys[i]->klen + s->keys[i]->vlen;
    }
    if (n > SIZE_MAX) {
        return PK_ENOMEM;
    }
    out = malloc((size_t)n);
    if (out == NULL) {
        return PK_ENOMEM;
    }
    p = put_bytes(out, PK__CKV_MAGIC, 4);
    p = put_be(p, PK__CKV_VERSION, 2);
    p = put_be(p, 0, 2);
    p = put_be(p, s->revision, 8);
    p = put_be(p, s->next_lease, 8);
    p = put_be(p, s->nleases, 4);
    p = put_be(p, s->nkeys, 4);
    for (size_t i = 0; i < s->nleases; i++) {
        p = put_be(p, s->leases[i].id, 8);
        p = put_be(p, s->leases[i].ttl_ms, 8);
    }
    for (size_t i = 0; i < s->nkeys; i++) {
        const pk__ckv_rec *r = s->keys[i];

        p = put_be(p, r->klen, 2);
        p = put_bytes(p, r->bytes, r->klen);
        p = put_be(p, r->vlen, 4);
        p = put_bytes(p, r->bytes + r->klen, r->vlen);
        p = put_be(p, r->create_rev, 8);
        p = put_be(p, r->mod_rev, 8);
        p = put_be(p, r->version, 8);
        p = put_be(p, r->lease, 8);
    }
    put_be(p, pk__crc32c(out, (size_t)n - CRC_LEN), 4);
    *buf = out;
    *len = (size_t)n;
    return PK_OK;
}

/* ---- reading ---------------------------------------------------------- */

/*
 * Bounds-checked reader.  The first failure sticks: later reads return
 * zeros and take no bytes, so a record can be read whole and r->err
 * checked once.
 */
typedef struct pk_rd {
    const uint8_t *buf; /* borrowed; the bytes before the checksum */
    size_t len;
    size_t pos; /* <= len */
    int err;    /* PK_OK or the first error */
} pk_rd;

static void rd_fail(pk_rd *r, int err)
{
    if (r->err == PK_OK) {
        r->err = err;
    }
}

static const uint8_t *rd_take(pk_rd *r, size_t n)
{
    const uint8_t *p;

    if (r->err != PK_OK) {
        return NULL;
    }
    if (n > r->len - r->pos) {
        rd_fail(r, PK_ECORRUPT);
        return NULL;
    }
    p = r->buf + r->pos;
    r->pos += n;
    return p;
}

static uint64_t rd_be(pk_rd *r, unsigned n)
{
    const uint8_t *p = rd_take(r, n);
    uint64_t v = 0;

    for (unsigned i = 0; p != NULL && i < n; i++) {
        v = v << 8 | p[i];
    }
    return v;
}

static void rd_leases(pk_rd *r, pk_ckv *s, uint32_t n, uint64_t now_ms)
{
    for (uint32_t i = 0; i < n && r->err == PK_OK; i++) {
        pk__ckv_lease *l = &s->leases[i];

        l->id = rd_be(r, 8);
        l->ttl_ms = rd_be(r, 8);
        if (r->err != PK_OK || l->id == 0 || l->id >= s->next_lease ||
            (i > 0 && l->id <= s->leases[i - 1].id) || l->ttl_ms == 0 ||
            l->ttl_ms > PK_COORD_TTL_MAX_MS) {
            rd_fail(r, PK_ECORRUPT);
            return;
        }
        l->deadline_ms =
            now_ms > UINT64_MAX - l->ttl_ms ? UINT64_MAX : now_ms + l->ttl_ms;
        s->nleases++;
    }
}

/* Reads one kv into s->keys[s->nkeys]. */
static void rd_kv(pk_rd *r, pk_ckv *s, uint64_t revision)
{
    const pk__ckv_rec *prev = s->nkeys > 0 ? s->keys[s->nkeys - 1] : NULL;
    size_t klen = (size_t)rd_be(r, 2);
    const uint8_t *key = rd_take(r, klen);
    size_t vlen = (size_t)rd_be(r, 4);
    const uint8_t *val = rd_take(r, vlen);
    uint64_t create = rd_be(r, 8);
    uint64_t mod = rd_be(r, 8);
    uint64_t version = rd_be(r, 8);
    uint64_t lease = rd_be(r, 8);
    pk__ckv_rec *rec;
    size_t common;

    if (r->err != PK_OK || klen == 0 || klen > PK_COORD_KEY_MAX ||
        vlen > PK_COORD_VALUE_MAX || create == 0 || create > mod ||
        mod > revision || version == 0 || version > mod - create + 1 ||
        (lease != 0 && pk__ckv_lease_find(s, lease) == SIZE_MAX)) {
        rd_fail(r, PK_ECORRUPT);
        return;
    }
    if (prev != NULL) {
        common = prev->klen < klen ? prev->klen : klen;
        if (memcmp(prev->bytes, key, common) > 0 ||
            (memcmp(prev->bytes, key, common) == 0 && prev->klen >= klen)) {
            rd_fail(r, PK_ECORRUPT);
            return;
        }
    }
    rec = pk__ckv_rec_new(key, klen, val, vlen);
    if (rec == NULL) {
        rd_fail(r, PK_ENOMEM);
        return;
    }
    rec->create_rev = create;
    rec->mod_rev = mod;
    rec->version = version;
    rec->lease = lease;
    s->keys[s->nkeys++] = rec;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a;
    uint64_t y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

/* 0 when no revision is claimed by two events, else PK_ECORRUPT. */
static int check_revisions(const pk_ckv *s)
{
    uint64_t *revs;
    size_t n = 0;
    int rc = PK_OK;

    if (s->nkeys == 0) {
        return PK_OK;
    }
    revs = malloc(2 * s->nkeys * sizeof(*revs));
    if (revs == NULL) {
        return PK_ENOMEM;
    }
    for (size_t i = 0; i < s->nkeys; i++) {
        revs[n++] = s->keys[i]->mod_rev;
        if (s->keys[i]->create_rev != s->keys[i]->mod_rev) {
            revs[n++] = s->keys[i]->create_rev;
        }
    }
    qsort(revs, n, sizeof(*revs), cmp_u64);
    for (size_t i = 1; i < n; i++) {
        if (revs[i - 1] == revs[i]) {
            rc = PK_ECORRUPT;
        }
    }
    free(revs);
    return rc;
}

/* Parses the body after magic and version into s. */
static int rd_state(pk_rd *r, pk_ckv *s, uint64_t now_ms)
{
    uint32_t flags = (uint32_t)rd_be(r, 2);
    uint64_t revision = rd_be(r, 8);
    uint64_t next_lease = rd_be(r, 8);
    uint32_t nleases = (uint32_t)rd_be(r, 4);
    uint32_t nkeys = (uint32_t)rd_be(r, 4);
    uint64_t need = (uint64_t)nleases * LEASE_LEN + (uint64_t)nkeys * KV_FIXED;

    if (r->err != PK_OK || flags != 0 || revision >= PK__CKV_REVISION_LIMIT ||
        next_lease == 0 || need > r->len - r->pos) {
        return PK_ECORRUPT;
    }
    /* The counts fit in the input, so these allocations are bounded. */
    if (nleases > 0) {
        s->leases = calloc(nleases, sizeof(*s->leases));
        if (s->leases == NULL) {
            return PK_ENOMEM;
        }
        s->cap_leases = nleases;
    }
    if (nkeys > 0) {
        s->keys = calloc(nkeys, sizeof(*s->keys));
        if (s->keys == NULL) {
            return PK_ENOMEM;
        }
        s->cap_keys = nkeys;
    }
    s->next_lease = next_lease;
    rd_leases(r, s, nleases, now_ms);
    for (uint32_t i = 0; i < nkeys && r->err == PK_OK; i++) {
        rd_kv(r, s, revision);
    }
    if (r->err == PK_OK && r->pos != r->len) {
        rd_fail(r, PK_ECORRUPT); /* trailing bytes */
    }
    if (r->err == PK_OK) {
        rd_fail(r, check_revisions(s));
    }
    s->revision = revision;
    s->visible = revision;
    return r->err;
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
           p[3];
}

int pk_ckv_decode(const uint8_t *buf, size_t len, const pk_ckv_opts *o,
                  uint64_t now_ms, pk_ckv **out)
{
    pk_ckv *s = NULL;
    pk_rd r;
    int rc;

    if (out == NULL) {
        return PK_EINVAL;
    }
    if (buf == NULL || len < OFF_FLAGS ||
        memcmp(buf + OFF_MAGIC, PK__CKV_MAGIC, 4) != 0) {
        return PK_ECORRUPT;
    }
    if ((buf[OFF_VERSION] << 8 | buf[OFF_VERSION + 1]) != PK__CKV_VERSION) {
        return PK_EVERSION;
    }
    if (len < HDR_LEN + CRC_LEN) {
        return PK_ECORRUPT;
    }
    if (pk__crc32c(buf, len - CRC_LEN) != be32(buf + len - CRC_LEN)) {
        return PK_ECHECKSUM;
    }
    rc = pk_ckv_new(o, &s);
    if (rc != PK_OK) {
        return rc;
    }
    r.buf = buf;
    r.len = len - CRC_LEN;
    r.pos = OFF_FLAGS;
    r.err = PK_OK;
    rc = rd_state(&r, s, now_ms);
    if (rc != PK_OK) {
        pk_ckv_free(s);
        return rc;
    }
    *out = s;
    return PK_OK;
}
