/* pk_move_int: state shared by pk_move*.c only (see pk_move.h). */
#ifndef PK_SERVER_PK_MOVE_INT_H
#define PK_SERVER_PK_MOVE_INT_H

#include <stdint.h>
#include <uv.h>

#include "core/pk_num.h"
#include "server/pk_agent.h"
#include "server/pk_move.h"
#include "server/pk_srv.h"
#include "store/pk_store_snap.h"

#define MV_CHUNK (32u << 10)       /* bytes of snapshot per PK.MOVE DATA */
#define MV_WINDOW 16               /* calls in flight per session */
#define MV_FENCE_BYTES (64u << 10) /* a tail round this small: fence */
#define MV_TAIL_CAP (MV_CHUNK * MV_WINDOW) /* log bytes per tail round */
#define MV_FENCE_MAX_MS 2000               /* a fence longer than this aborts */
#define MV_STALL_MS 10000                  /* no reply for this long aborts */
#define MV_FAILED_DRAIN_MS 1000      /* a failed session waits this long */
#define MV_HOLD_MAX_MS 3000          /* a held write is answered TRYAGAIN */
#define MV_SESSION_MAX 4096          /* partitions per session */
#define MV_SESSION_BYTES (64u << 20) /* ... and bytes, about */

enum mv_phase {
    MV_BEGIN,  /* BEGIN sent */
    MV_COPY,   /* snapshot chunks */
    MV_TAIL,   /* log rounds */
    MV_FENCE,  /* writes held; the final round runs next iteration */
    MV_FINAL,  /* final records sent */
    MV_SYNC,   /* SYNC sent */
    MV_COMMIT, /* the agent is committing */
    MV_AWAIT,  /* committed; waiting for our map to show it */
    MV_PUSH,   /* the new map is on its way to the target */
};

typedef struct pk_msess {
    pk_mover *mv;
    uint32_t target;
    char addr[PK_ADDR_MAX + 1];
    uint32_t n;
    uint32_t *parts;
    uint64_t *seq;     /* per partition: last log position shipped */
    uint8_t *switched; /* per partition: committed (agent job) */
    int phase;
    int failed;  /* 1: end once no call is in flight */
    int sending; /* inside pk_link_call: replies must not pump */
    char why[128];
    char *chunk;    /* COPY: MV_CHUNK bytes of buffer */
    pk_txn *snap;   /* COPY: the snapshot */
    pk_export *exp; /* COPY: exporter of parts[cur] */
    uint32_t cur;   /* COPY: partition being exported */
    uint32_t inflight;
    uint64_t bytes;       /* sent, snapshot and log */
    uint64_t round_bytes; /* TAIL: this round's log bytes */
    int rounds;
    double tokens; /* throttle, bytes */
    uint64_t tok_ms, started_ms, fence_ms, reply_ms;
    pk_agent_job job;
    struct pk_msess *next;
} pk_msess;

typedef struct mv_import {
    uint32_t part;
    pk_import *im; /* NULL once the snapshot is complete */
    pk_conn *c;
} mv_import;

struct pk_mover {
    pk_server *srv;
    uint32_t cap;    /* length of the per-partition arrays */
    uint8_t *fenced; /* writes held */
    uint8_t *busy;   /* in a source session */
    uint8_t *held;   /* the map names this node (janitor) */
    uint8_t *check;  /* stopped holding it: the janitor looks */
    pk_msess *sessions;
    mv_import *imports;
    uint32_t nimports, cap_imports;
    uint64_t *retry_at; /* per target node id: no session before (ms) */
    uint32_t nretry;
    uint32_t moving;  /* partitions the map says are moving */
    uint32_t sources; /* nodes the map says are sending them */
    uv_timer_t tick;
    uint64_t slow_ms; /* last scan and janitor step */
    int janitor;      /* 1: look for partitions to drop */
    int swept;        /* the janitor walked the store once since the start */
    int polled;       /* a map from the coordinator was installed */
    int closing;      /* shutting down: no new calls */
};

uint64_t pk__mv_now(void);

/* Appends v as a bulk string (a decimal argument of a request). */
static inline void pk__mv_put_u64(pk_obuf *ob, uint64_t v)
{
    char b[PK_I64_CHARS];

    pk_reply_bulk(ob, b, pk_i64_format(b, (int64_t)v));
}

/* Source sessions (pk_move_src.c). */
void pk__mv_scan(pk_mover *mv);
void pk__mv_pump_all(pk_mover *mv);
void pk__mv_check(pk_mover *mv); /* cancelled moves, deadlines */
void pk__mv_end_all(pk_mover *mv);
void pk__mv_wake(pk_mover *mv); /* pk_move.c: a session needs the tick */
/* Target side (pk_move_dst.c). */
void pk__mv_imports_free(pk_mover *mv);
int pk__mv_importing(const pk_mover *mv, uint32_t part);

#endif
