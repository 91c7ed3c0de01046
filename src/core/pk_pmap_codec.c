/*
 * pk_pmap_codec: the versioned binary encoding of a pk_pmap (format 1).
 *
 * The encoded map is what the coordinator stores and what every node, proxy
 * and client fetches, so decoding treats its input as hostile: every read is
 * bounds-checked through a reader with a sticky error, every count is
 * checked against the bytes that remain before anything is allocated, and
 * the finished map must pass pk_pmap_validate.  The format is canonical:
 * each map has exactly one encoding and decoding accepts nothing else, so
 * decode-then-encode reproduces the input byte for byte.
 *
 *   offset size field
 *   0      4    magic "PKMP"
 *   4      2    version, 1
 *   6      2    flags: bit 0 PFLAGS (range scheme only: each partition
 *               ends with a u8 of its PK_PART_* flags; set iff one of
 *               them is not 0), bit 1 SALTS (the salt table follows the
 *               partitions; set iff it is not empty), bit 2 FTDEFS (the
 *               index definitions follow; set iff there are any), the
 *               other bits 0
 *   8      8    epoch
 *   16     1    scheme (pk_scheme)
 *   17     1    hash (pk_hash_kind)
 *   18     1    replicas, target R
 *   19     1    reserved, 0
 *   20     4    nnodes (ids are implicit: id == index)
 *   24     4    npartitions
 *   28          node[nnodes], partition[npartitions],
 *               [SALTS: vu nsalts, salt[nsalts]],
 *               [FTDEFS: vu n, (vu len, a pk_ftdef encoding)[n]],
 *               u32 CRC32C
 *
 *   node       u8 state | u64 weight (IEEE-754 bits) |
 *              u8 len, name | u8 len, addr | u8 len, zone
 *   partition  u8 pflags | [MOVE: u8 move_state, u32 move_target] |
 *              vu leader_epoch | u16 replicas[nrep] | u16 learners[nlrn] |
 *              [range scheme: vu lo_len, lo | [HI: vu hi_len, hi] |
 *              [PFLAGS: u8 flags]]
 *   pflags     bit 0-2 nreplicas, 3-5 nlearners,
 *              6 MOVE (set iff move_state or move_target is not "none"),
 *              7 HI (range scheme only: the upper bound is finite)
 *   salt       vu key_len, key | u8 n | u8 state | vu tags[1..n-1]
 *   vu         unsigned varint, big-endian base 128: most significant
 *              7-bit group first, bit 7 set on every byte but the last, no
 *              leading 0x80 byte (minimal)
 *
 * Integers are big-endian.  The CRC32C (Castagnoli, reflected, init and
 * xorout 0xffffffff) covers every byte before it.  The partition record is
 * what the size of a map is made of, so it is packed: with R = 3, no move
 * and a leader_epoch below 128 it takes 8 bytes, and a 16384-slot map
 * fits in about 130 KB (fixed-width u8 counts, u32 ids and a u64 epoch
 * would take 27 bytes a partition, 440 KB).  Node ids fit in 16 bits
 * because PK_NODES_MAX is 65536; move_target keeps 32 bits so that it can
 * hold PK_NODE_NONE.
 *
 * Decoding checks magic and version first (a later version may place its
 * checksum elsewhere), then the checksum, then parses.  Because counts are
 * bounded by the input's length, a decoded map takes at most about 50
 * times as many bytes of memory as its encoding.
 *
 * Encoding refuses (PK_EINVAL) a map that decoding would refuse, so that
 * whatever is encoded can be read back.
 */
#include <assert.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pk_err.h"
#include "pk_pmap.h"

#define PK__MAGIC "PKMP"
#define PK__VERSION 1

enum {
    OFF_MAGIC = 0,
    OFF_VERSION = 4,
    OFF_FLAGS = 6,
    OFF_EPOCH = 8,
    OFF_SCHEME = 16,
    OFF_HASH = 17,
    OFF_REPLICAS = 18,
    OFF_RESERVED = 19,
    OFF_NNODES = 20,
    OFF_NPARTS = 24,
    HDR_LEN = 28,
    CRC_LEN = 4,
    /* Smallest encodings, used to bound counts before allocating. */
    NODE_MIN = 1 + 8 + 2 + 1 + 1,
    PART_MIN = 1 + 1,
    PART_MIN_RANGE = PART_MIN + 1,
};

enum {
    PF_NREP_MASK = 0x07,
    PF_NLRN_SHIFT = 3,
    PF_MOVE = 0x40,
    PF_HI = 0x80,
};

enum { MF_PFLAGS = 0x0001, MF_SALTS = 0x0002, MF_FTDEFS = 0x0004 };

/* Whether the range map m needs the MF_PFLAGS form. */
static int has_pflags(const pk_pmap *m)
{
    for (uint32_t p = 0; m->scheme == PK_SCHEME_RANGE && p < m->npartitions;
         p++)
        if (m->parts[p].flags)
            return 1;
    return 0;
}

static_assert(sizeof(PK__MAGIC) - 1 == OFF_VERSION - OFF_MAGIC, "magic");
static_assert(OFF_FLAGS == OFF_VERSION + 2 && OFF_EPOCH == OFF_FLAGS + 2,
              "header layout");
static_assert(OFF_SCHEME == OFF_EPOCH + 8 && OFF_NNODES == OFF_RESERVED + 1,
              "header layout");
static_assert(OFF_NPARTS == OFF_NNODES + 4 && HDR_LEN == OFF_NPARTS + 4,
              "header layout");
static_assert(PK_REPLICAS_MAX <= PF_NREP_MASK, "counts fit in 3 bits");
static_assert(PK_NODES_MAX <= 65536u, "node ids fit in u16");
static_assert(PK_NAME_MAX <= 255 && PK_ADDR_MAX <= 255 && PK_ZONE_MAX <= 255,
              "string lengths fit in u8");
static_assert(sizeof(double) == sizeof(uint64_t) && FLT_RADIX == 2 &&
                  DBL_MANT_DIG == 53,
              "weights travel as IEEE-754 binary64 bits");

/*
 * CRC32C of data.  Internal to the core library (pk__), shared with the
 * codec tests and the fuzz target, which declare it themselves.
 */
uint32_t pk__crc32c(const void *data, size_t len);

uint32_t pk__crc32c(const void *data, size_t len)
{
    /* table[i] = CRC of byte i, reflected polynomial 0x82f63b78. */
    static const uint32_t table[256] = {
        0x00000000u, 0xf26b8303u, 0xe13b70f7u, 0x1350f3f4u, 0xc79a971fu,
        0x35f1141cu, 0x26a1e7e8u, 0xd4ca64ebu, 0x8ad958cfu, 0x78b2dbccu,
        0x6be22838u, 0x9989ab3bu, 0x4d43cfd0u, 0xbf284cd3u, 0xac78bf27u,
        0x5e133c24u, 0x105ec76fu, 0xe235446cu, 0xf165b798u, 0x030e349bu,
        0xd7c45070u, 0x25afd373u, 0x36ff2087u, 0xc494a384u, 0x9a879fa0u,
        0x68ec1ca3u, 0x7bbcef57u, 0x89d76c54u, 0x5d1d08bfu, 0xaf768bbcu,
        0xbc267848u, 0x4e4dfb4bu, 0x20bd8edeu, 0xd2d60dddu, 0xc186fe29u,
        0x33ed7d2au, 0xe72719c1u, 0x154c9ac2u, 0x061c6936u, 0xf477ea35u,
        0xaa64d611u, 0x580f5512u, 0x4b5fa6e6u, 0xb93425e5u, 0x6dfe410eu,
        0x9f95c20du, 0x8cc531f9u, 0x7eaeb2fau, 0x30e349b1u, 0xc288cab2u,
        0xd1d83946u, 0x23b3ba45u, 0xf779deaeu, 0x05125dadu, 0x1642ae59u,
        0xe4292d5au, 0xba3a117eu, 0x4851927du, 0x5b016189u, 0xa96ae28au,
        0x7da08661u, 0x8fcb0562u, 0x9c9bf696u, 0x6ef07595u, 0x417b1dbcu,
        0xb3109ebfu, 0xa0406d4bu, 0x522bee48u, 0x86e18aa3u, 0x748a09a0u,
        0x67dafa54u, 0x95b17957u, 0xcba24573u, 0x39c9c670u, 0x2a993584u,
        0xd8f2b687u, 0x0c38d26cu, 0xfe53516fu, 0xed03a29bu, 0x1f682198u,
        0x5125dad3u, 0xa34e59d0u, 0xb01eaa24u, 0x42752927u, 0x96bf4dccu,
        0x64d4cecfu, 0x77843d3bu, 0x85efbe38u, 0xdbfc821cu, 0x2997011fu,
        0x3ac7f2ebu, 0xc8ac71e8u, 0x1c661503u, 0xee0d9600u, 0xfd5d65f4u,
        0x0f36e6f7u, 0x61c69362u, 0x93ad1061u, 0x80fde395u, 0x72966096u,
        0xa65c047du, 0x5437877eu, 0x4767748au, 0xb50cf789u, 0xeb1fcbadu,
        0x197448aeu, 0x0a24bb5au, 0xf84f3859u, 0x2c855cb2u, 0xdeeedfb1u,
        0xcdbe2c45u, 0x3fd5af46u, 0x7198540du, 0x83f3d70eu, 0x90a324fau,
        0x62c8a7f9u, 0xb602c312u, 0x44694011u, 0x5739b3e5u, 0xa55230e6u,
        0xfb410cc2u, 0x092a8fc1u, 0x1a7a7c35u, 0xe811ff36u, 0x3cdb9bddu,
        0xceb018deu, 0xdde0eb2au, 0x2f8b6829u, 0x82f63b78u, 0x709db87bu,
        0x63cd4b8fu, 0x91a6c88cu, 0x456cac67u, 0xb7072f64u, 0xa457dc90u,
        0x563c5f93u, 0x082f63b7u, 0xfa44e0b4u, 0xe9141340u, 0x1b7f9043u,
        0xcfb5f4a8u, 0x3dde77abu, 0x2e8e845fu, 0xdce5075cu, 0x92a8fc17u,
        0x60c37f14u, 0x73938ce0u, 0x81f80fe3u, 0x55326b08u, 0xa759e80bu,
        0xb4091bffu, 0x466298fcu, 0x1871a4d8u, 0xea1a27dbu, 0xf94ad42fu,
        0x0b21572cu, 0xdfeb33c7u, 0x2d80b0c4u, 0x3ed04330u, 0xccbbc033u,
        0xa24bb5a6u, 0x502036a5u, 0x4370c551u, 0xb11b4652u, 0x65d122b9u,
        0x97baa1bau, 0x84ea524eu, 0x7681d14du, 0x2892ed69u, 0xdaf96e6au,
        0xc9a99d9eu, 0x3bc21e9du, 0xef087a76u, 0x1d63f975u, 0x0e330a81u,
        0xfc588982u, 0xb21572c9u, 0x407ef1cau, 0x532e023eu, 0xa145813du,
        0x758fe5d6u, 0x87e466d5u, 0x94b49521u, 0x66df1622u, 0x38cc2a06u,
        0xcaa7a905u, 0xd9f75af1u, 0x2b9cd9f2u, 0xff56bd19u, 0x0d3d3e1au,
        0x1e6dcdeeu, 0xec064eedu, 0xc38d26c4u, 0x31e6a5c7u, 0x22b65633u,
        0xd0ddd530u, 0x0417b1dbu, 0xf67c32d8u, 0xe52cc12cu, 0x1747422fu,
        0x49547e0bu, 0xbb3ffd08u, 0xa86f0efcu, 0x5a048dffu, 0x8ecee914u,
        0x7ca56a17u, 0x6ff599e3u, 0x9d9e1ae0u, 0xd3d3e1abu, 0x21b862a8u,
        0x32e8915cu, 0xc083125fu, 0x144976b4u, 0xe622f5b7u, 0xf5720643u,
        0x07198540u, 0x590ab964u, 0xab613a67u, 0xb831c993u, 0x4a5a4a90u,
        0x9e902e7bu, 0x6cfbad78u, 0x7fab5e8cu, 0x8dc0dd8fu, 0xe330a81au,
        0x115b2b19u, 0x020bd8edu, 0xf0605beeu, 0x24aa3f05u, 0xd6c1bc06u,
        0xc5914ff2u, 0x37faccf1u, 0x69e9f0d5u, 0x9b8273d6u, 0x88d28022u,
        0x7ab90321u, 0xae7367cau, 0x5c18e4c9u, 0x4f48173du, 0xbd23943eu,
        0xf36e6f75u, 0x0105ec76u, 0x12551f82u, 0xe03e9c81u, 0x34f4f86au,
        0xc69f7b69u, 0xd5cf889du, 0x27a40b9eu, 0x79b737bau, 0x8bdcb4b9u,
        0x988c474du, 0x6ae7c44eu, 0xbe2da0a5u, 0x4c4623a6u, 0x5f16d052u,
        0xad7d5351u,
    };
    const uint8_t *p = data;
    uint32_t c = 0xffffffffu;

    for (size_t i = 0; i < len; i++)
        c = table[(c ^ p[i]) & 0xff] ^ (c >> 8);
    return c ^ 0xffffffffu;
}

/* ---- writing ---------------------------------------------------------- */

/*
 * A writer runs twice over the same code: first with buf == NULL to size
 * the output, then into a buffer of exactly that size.
 */
typedef struct pk_wr {
    uint8_t *buf; /* borrowed; NULL in the sizing pass */
    uint64_t pos; /* bytes written (or counted) so far */
} pk_wr;

static void wr_bytes(pk_wr *w, const void *src, size_t n)
{
    if (w->buf != NULL && n > 0)
        memcpy(w->buf + w->pos, src, n);
    w->pos += n;
}

static void wr_be(pk_wr *w, uint64_t v, unsigned n)
{
    uint8_t b[8];

    for (unsigned i = 0; i < n; i++)
        b[i] = (uint8_t)(v >> (8 * (n - 1 - i)));
    wr_bytes(w, b, n);
}

static void wr_vu(pk_wr *w, uint64_t v)
{
    uint8_t b[10];
    size_t n = 0;

    do {
        b[sizeof(b) - 1 - n] = (uint8_t)((v & 0x7f) | (n ? 0x80 : 0));
        v >>= 7;
        n++;
    } while (v != 0);
    wr_bytes(w, b + sizeof(b) - n, n);
}

static void wr_str(pk_wr *w, const char *s, size_t cap)
{
    size_t n = strnlen(s, cap);

    wr_be(w, n, 1);
    wr_bytes(w, s, n);
}

static void wr_bound(pk_wr *w, const uint8_t *b, uint32_t len)
{
    wr_vu(w, len);
    wr_bytes(w, b, len);
}

static void wr_part(pk_wr *w, const pk_pmap *m, const pk_partition *pt,
                    int pflags)
{
    int move =
        pt->move_state != PK_MOVE_NONE || pt->move_target != PK_NODE_NONE;
    int range = m->scheme == PK_SCHEME_RANGE;
    uint8_t f;

    f = (uint8_t)(pt->nreplicas | pt->nlearners << PF_NLRN_SHIFT);
    f |= move ? PF_MOVE : 0;
    f |= range && pt->hi != NULL ? PF_HI : 0;
    wr_be(w, f, 1);
    if (move) {
        wr_be(w, pt->move_state, 1);
        wr_be(w, pt->move_target, 4);
    }
    wr_vu(w, pt->leader_epoch);
    for (unsigned i = 0; i < pt->nreplicas; i++)
        wr_be(w, pt->replicas[i], 2);
    for (unsigned i = 0; i < pt->nlearners; i++)
        wr_be(w, pt->learners[i], 2);
    if (!range)
        return;
    wr_bound(w, pt->lo, pt->lo_len);
    if (pt->hi != NULL)
        wr_bound(w, pt->hi, pt->hi_len);
    if (pflags)
        wr_be(w, pt->flags, 1);
}

static void wr_map(pk_wr *w, const pk_pmap *m)
{
    wr_bytes(w, PK__MAGIC, 4);
    int pflags = has_pflags(m);

    wr_be(w, PK__VERSION, 2);
    wr_be(w,
          (pflags ? MF_PFLAGS : 0) | (m->nsalts ? MF_SALTS : 0) |
              (m->nftdefs ? MF_FTDEFS : 0),
          2);
    wr_be(w, m->epoch, 8);
    wr_be(w, m->scheme, 1);
    wr_be(w, m->hash, 1);
    wr_be(w, m->replicas, 1);
    wr_be(w, 0, 1);
    wr_be(w, m->nnodes, 4);
    wr_be(w, m->npartitions, 4);
    for (uint32_t i = 0; i < m->nnodes; i++) {
        const pk_node *n = &m->nodes[i];
        uint64_t bits;

        memcpy(&bits, &n->weight, sizeof(bits));
        wr_be(w, n->state, 1);
        wr_be(w, bits, 8);
        wr_str(w, n->name, sizeof(n->name));
        wr_str(w, n->addr, sizeof(n->addr));
        wr_str(w, n->zone, sizeof(n->zone));
    }
    for (uint32_t p = 0; p < m->npartitions; p++)
        wr_part(w, m, &m->parts[p], pflags);
    if (m->nsalts)
        wr_vu(w, m->nsalts);
    for (uint32_t i = 0; i < m->nsalts; i++) {
        const pk_salt *st = &m->salts[i];
        wr_bound(w, st->key, st->len);
        wr_be(w, st->n, 1);
        wr_be(w, st->state, 1);
        for (unsigned k = 1; k < st->n; k++)
            wr_vu(w, st->tags[k]);
    }
    if (m->nftdefs)
        wr_vu(w, m->nftdefs);
    for (uint32_t i = 0; i < m->nftdefs; i++)
        wr_bound(w, m->ftdefs[i].bytes, m->ftdefs[i].len);
}

/* ---- checks shared by both directions --------------------------------- */

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* 0 when no two non-removed nodes share a name, else PK_ECORRUPT. */
static int check_names(const pk_pmap *m)
{
    const char **names = NULL; /* owned; borrows the nodes' names */
    uint32_t n = 0;
    int rc = PK_OK;

    if (m->nnodes < 2)
        return PK_OK;
    names = malloc(m->nnodes * sizeof(*names));
    if (names == NULL)
        return PK_ENOMEM;
    for (uint32_t i = 0; i < m->nnodes; i++)
        if (m->nodes[i].state != PK_NODE_REMOVED)
            names[n++] = m->nodes[i].name;
    qsort(names, n, sizeof(*names), cmp_names);
    for (uint32_t i = 1; i < n; i++)
        if (strcmp(names[i - 1], names[i]) == 0)
            rc = PK_ECORRUPT;
    free(names);
    return rc;
}

/*
 * Everything a map must satisfy to be encodable, beyond pk_pmap_validate:
 * the limits the format relies on, terminated strings, finite weights,
 * unique names, bounds only on range maps.  A map passes exactly when its
 * encoding decodes.  Returns 0, PK_ECORRUPT or PK_ENOMEM.
 */
static int check_map(const pk_pmap *m)
{
    if (pk_pmap_validate(m) != PK_OK || m->nnodes > PK_NODES_MAX ||
        m->npartitions == 0 || m->npartitions > PK_PARTITIONS_MAX ||
        (m->scheme == PK_SCHEME_SLOTS && m->npartitions != PK_SLOTS))
        return PK_ECORRUPT;
    for (uint32_t i = 0; i < m->nnodes; i++) {
        const pk_node *n = &m->nodes[i];

        if (!isfinite(n->weight) ||
            strnlen(n->addr, sizeof(n->addr)) == sizeof(n->addr) ||
            strnlen(n->zone, sizeof(n->zone)) == sizeof(n->zone))
            return PK_ECORRUPT;
    }
    for (uint32_t p = 0; p < m->npartitions; p++)
        if (m->scheme != PK_SCHEME_RANGE && m->parts[p].hi != NULL)
            return PK_ECORRUPT;
    return check_names(m);
}

int pk_pmap_encode(const pk_pmap *m, uint8_t **buf, size_t *len)
{
    pk_wr w = {NULL, 0};
    uint8_t *out = NULL; /* owned until handed to *buf */
    size_t n;
    int rc;

    rc = check_map(m);
    if (rc != PK_OK) {
        rc = rc == PK_ECORRUPT ? PK_EINVAL : rc;
        goto done;
    }
    wr_map(&w, m);
    if (w.pos > SIZE_MAX - CRC_LEN) {
        rc = PK_ENOMEM;
        goto done;
    }
    n = (size_t)w.pos + CRC_LEN;
    out = malloc(n);
    if (out == NULL) {
        rc = PK_ENOMEM;
        goto done;
    }
    w.buf = out;
    w.pos = 0;
    wr_map(&w, m);
    wr_be(&w, pk__crc32c(out, n - CRC_LEN), 4);
    *buf = out;
    *len = n;
    out = NULL;
done:
    free(out);
    return rc;
}

/* ---- reading ---------------------------------------------------------- */

/*
 * Bounds-checked reader.  The first failure sticks: later reads return
 * zeros and take no bytes, so parsing code can read a whole record and
 * check r->err once.
 */
typedef struct pk_rd {
    const uint8_t *buf; /* borrowed; the bytes before the checksum */
    size_t len;
    size_t pos; /* <= len */
    int err;    /* PK_OK, or the first error */
} pk_rd;

static void rd_fail(pk_rd *r, int err)
{
    if (r->err == PK_OK)
        r->err = err;
}

static const uint8_t *rd_take(pk_rd *r, size_t n)
{
    const uint8_t *p;

    if (r->err != PK_OK)
        return NULL;
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

    for (unsigned i = 0; p != NULL && i < n; i++)
        v = v << 8 | p[i];
    return v;
}

static uint8_t rd_u8(pk_rd *r)
{
    return (uint8_t)rd_be(r, 1);
}

/* Reads a minimal varint of at most 64 bits. */
static uint64_t rd_vu(pk_rd *r)
{
    uint64_t v = 0;

    for (unsigned i = 0; i < 10; i++) {
        uint8_t b = rd_u8(r);

        if (r->err != PK_OK || (i == 0 && b == 0x80) || v >> 57 != 0)
            break;
        v = v << 7 | (b & 0x7f);
        if (!(b & 0x80))
            return v;
    }
    rd_fail(r, PK_ECORRUPT);
    return 0;
}

/* A u8-length string: no NUL bytes, shorter than cap, non-empty if asked. */
static void rd_str(pk_rd *r, char *dst, size_t cap, int required)
{
    size_t n = rd_u8(r);
    const uint8_t *p;

    if (n >= cap || (required && n == 0)) {
        rd_fail(r, PK_ECORRUPT);
        return;
    }
    p = rd_take(r, n);
    if (p == NULL)
        return;
    if (memchr(p, 0, n) != NULL) {
        rd_fail(r, PK_ECORRUPT);
        return;
    }
    memcpy(dst, p, n);
    dst[n] = '\0';
}

/* A range bound; *dst becomes owned by the map (freed with it). */
static void rd_bound(pk_rd *r, uint8_t **dst, uint32_t *dst_len)
{
    uint64_t n = rd_vu(r);
    const uint8_t *p;
    uint8_t *b;

    if (n > UINT32_MAX) {
        rd_fail(r, PK_ECORRUPT);
        return;
    }
    p = rd_take(r, (size_t)n); /* proves the bytes exist before malloc */
    if (p == NULL)
        return;
    b = malloc(n ? (size_t)n : 1);
    if (b == NULL) {
        rd_fail(r, PK_ENOMEM);
        return;
    }
    if (n > 0)
        memcpy(b, p, (size_t)n);
    *dst = b;
    *dst_len = (uint32_t)n;
}

static void rd_node(pk_rd *r, pk_node *n, uint32_t id)
{
    uint64_t bits;

    n->id = id;
    n->state = rd_u8(r);
    bits = rd_be(r, 8);
    memcpy(&n->weight, &bits, sizeof(bits));
    rd_str(r, n->name, sizeof(n->name), 1);
    rd_str(r, n->addr, sizeof(n->addr), 0);
    rd_str(r, n->zone, sizeof(n->zone), 0);
    if (n->state > PK_NODE_REMOVED || !isfinite(n->weight) || !(n->weight >= 0))
        rd_fail(r, PK_ECORRUPT);
}

/* The salt table: at least one entry; pk_pmap_validate checks the order
 * and each entry's fields. */
static void rd_salts(pk_rd *r, pk_pmap *m)
{
    uint64_t n = rd_vu(r);

    if (r->err == PK_OK && (n == 0 || n > PK_SALTS_MAX || n > r->len - r->pos))
        rd_fail(r, PK_ECORRUPT);
    if (r->err == PK_OK && (m->salts = calloc(n, sizeof(*m->salts))) == NULL)
        rd_fail(r, PK_ENOMEM);
    for (; r->err == PK_OK && m->nsalts < n; m->nsalts++) {
        pk_salt *st = &m->salts[m->nsalts];
        rd_bound(r, &st->key, &st->len);
        st->n = rd_u8(r);
        st->state = rd_u8(r);
        if (st->n > PK_SALT_PARTS_MAX)
            rd_fail(r, PK_ECORRUPT);
        for (unsigned k = 1; r->err == PK_OK && k < st->n; k++) {
            uint64_t t = rd_vu(r);
            if (t > UINT32_MAX)
                rd_fail(r, PK_ECORRUPT);
            st->tags[k] = (uint32_t)t;
        }
    }
}

/* The index definitions: at least one; pk_pmap_validate decodes each. */
static void rd_ftdefs(pk_rd *r, pk_pmap *m)
{
    uint64_t n = rd_vu(r);

    if (r->err == PK_OK && (n == 0 || n > PK_FTDEFS_MAX || n > r->len - r->pos))
        rd_fail(r, PK_ECORRUPT);
    if (r->err == PK_OK && (m->ftdefs = calloc(n, sizeof(*m->ftdefs))) == NULL)
        rd_fail(r, PK_ENOMEM);
    for (; r->err == PK_OK && m->nftdefs < n; m->nftdefs++)
        rd_bound(r, &m->ftdefs[m->nftdefs].bytes, &m->ftdefs[m->nftdefs].len);
}

static void rd_part(pk_rd *r, const pk_pmap *m, pk_partition *pt, int pflags)
{
    uint8_t f = rd_u8(r);

    pt->nreplicas = f & PF_NREP_MASK;
    pt->nlearners = (f >> PF_NLRN_SHIFT) & PF_NREP_MASK;
    if (f & PF_MOVE) {
        pt->move_state = rd_u8(r);
        pt->move_target = (uint32_t)rd_be(r, 4);
        /* Both "none" would have been written without the MOVE bit. */
        if (pt->move_state == PK_MOVE_NONE && pt->move_target == PK_NODE_NONE)
            rd_fail(r, PK_ECORRUPT);
    }
    pt->leader_epoch = rd_vu(r);
    for (unsigned i = 0; i < pt->nreplicas; i++)
        pt->replicas[i] = (uint32_t)rd_be(r, 2);
    for (unsigned i = 0; i < pt->nlearners; i++)
        pt->learners[i] = (uint32_t)rd_be(r, 2);
    if (m->scheme != PK_SCHEME_RANGE) {
        if (f & PF_HI)
            rd_fail(r, PK_ECORRUPT);
        return;
    }
    rd_bound(r, &pt->lo, &pt->lo_len);
    if (f & PF_HI)
        rd_bound(r, &pt->hi, &pt->hi_len);
    if (pflags)
        pt->flags = rd_u8(r);
}

/* Parses the body after magic and version; *out is set only on success. */
static int rd_map(pk_rd *r, pk_pmap **out)
{
    pk_pmap *m = NULL; /* owned until handed to *out */
    uint64_t epoch, need;
    uint32_t nnodes, nparts, flags;
    uint8_t scheme, hash, replicas, reserved;
    int rc;

    flags = (uint32_t)rd_be(r, 2);
    epoch = rd_be(r, 8);
    scheme = rd_u8(r);
    hash = rd_u8(r);
    replicas = rd_u8(r);
    reserved = rd_u8(r);
    nnodes = (uint32_t)rd_be(r, 4);
    nparts = (uint32_t)rd_be(r, 4);
    if (r->err != PK_OK || (flags & ~(MF_PFLAGS | MF_SALTS | MF_FTDEFS)) ||
        ((flags & MF_PFLAGS) && scheme != PK_SCHEME_RANGE) ||
        ((flags & MF_SALTS) && scheme == PK_SCHEME_RANGE) || reserved != 0 ||
        scheme > PK_SCHEME_RANGE || pk_hash_get(hash) == NULL ||
        replicas == 0 || replicas > PK_REPLICAS_MAX || nnodes > PK_NODES_MAX ||
        nparts == 0 || nparts > PK_PARTITIONS_MAX ||
        (scheme == PK_SCHEME_SLOTS && nparts != PK_SLOTS)) {
        rc = PK_ECORRUPT;
        goto done;
    }
    /* No allocation before the counts are known to fit in the input. */
    need = (uint64_t)nnodes * NODE_MIN +
           (uint64_t)nparts *
               (scheme == PK_SCHEME_RANGE ? PART_MIN_RANGE : PART_MIN);
    if (need > r->len - r->pos) {
        rc = PK_ECORRUPT;
        goto done;
    }
    rc = pk_pmap_new(scheme, hash, nparts, replicas, &m);
    if (rc != PK_OK) {
        rc = rc == PK_ENOMEM ? PK_ENOMEM : PK_ECORRUPT;
        goto done;
    }
    m->epoch = epoch;
    if (nnodes > 0) {
        m->nodes = calloc(nnodes, sizeof(*m->nodes));
        if (m->nodes == NULL) {
            rc = PK_ENOMEM;
            goto done;
        }
        m->cap_nodes = m->nnodes = nnodes;
    }
    for (uint32_t i = 0; i < nnodes && r->err == PK_OK; i++)
        rd_node(r, &m->nodes[i], i);
    for (uint32_t p = 0; p < nparts && r->err == PK_OK; p++)
        rd_part(r, m, &m->parts[p], flags & MF_PFLAGS);
    if (flags & MF_SALTS)
        rd_salts(r, m);
    if (flags & MF_FTDEFS)
        rd_ftdefs(r, m);
    if (r->err == PK_OK && r->pos != r->len)
        rd_fail(r, PK_ECORRUPT); /* trailing bytes */
    if (r->err == PK_OK && (flags & MF_PFLAGS) && !has_pflags(m))
        rd_fail(r, PK_ECORRUPT); /* not the canonical form */
    if (r->err == PK_OK)
        rd_fail(r, check_map(m));
    rc = r->err;
    if (rc == PK_OK) {
        *out = m;
        m = NULL;
    }
done:
    pk_pmap_free(m);
    return rc;
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
           p[3];
}

int pk_pmap_decode(const uint8_t *buf, size_t len, pk_pmap **out)
{
    pk_rd r;

    if (buf == NULL || len < OFF_FLAGS ||
        memcmp(buf + OFF_MAGIC, PK__MAGIC, 4) != 0)
        return PK_ECORRUPT;
    if ((buf[OFF_VERSION] << 8 | buf[OFF_VERSION + 1]) != PK__VERSION)
        return PK_EVERSION;
    if (len < HDR_LEN + CRC_LEN)
        return PK_ECORRUPT;
    if (pk__crc32c(buf, len - CRC_LEN) != be32(buf + len - CRC_LEN))
        return PK_ECHECKSUM;
    r.buf = buf;
    r.len = len - CRC_LEN;
    r.pos = OFF_FLAGS;
    r.err = PK_OK;
    return rd_map(&r, out);
}

int pk_pmap_peek_epoch(const uint8_t *buf, size_t len, uint64_t *epoch)
{
    uint64_t e = 0;

    /* Magic and version first: a later version may place its epoch
     * elsewhere (see the layout above). */
    if (buf == NULL || len < 16 || memcmp(buf, "PKMP", 4) != 0 || buf[4] != 0 ||
        buf[5] != 1)
        return PK_ECORRUPT;
    for (int i = 0; i < 8; i++)
        e = e << 8 | buf[8 + i];
    *epoch = e;
    return PK_OK;
}
