/*
 * pk_ctrl_int: what the controller's files share -- its state, its calls
 * to nodes (pk_ctrl.c) and its decisions on the map (pk_ctrl_decide.c:
 * promotions, leader balance, replica replacement).
 */
#ifndef PK_CTRL_INT_H
#define PK_CTRL_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "core/pk_pmap.h"
#include "proto/pk_rreply.h"
#include "server/pk_ctrl.h"
#include "server/pk_sclient.h"
#include "server/pk_srv.h"

#define CALL_MS 1000
/* A poll or a hint a stopped node would hold the controller up with: the
 * failover of that node waits for the controller's next tick. */
#define SHORT_CALL_MS 250

typedef struct peer {
    char addr[PK_ADDR_MAX + 1];
    pk_sclient *cli;
} peer;

typedef struct down {
    char name[PK_NAME_MAX + 1];
    int64_t since;
} down;

struct pk_ctrl {
    pk_server *srv;
    pthread_t thread;
    atomic_int stop;
    char host[256];
    int port;
    char secret[256];
    pk_sclient *co; /* the coordinator, NULL while disconnected */
    uint64_t lease; /* the controller lease while we act */
    int64_t last_keepalive;
    int fresh; /* just took the lease: bump the map epoch once */
    int stepped_tick, balance_tick;
    down *downs; /* nodes seen DOWN, and since when (our clock) */
    uint32_t ndowns;
    peer *peers;
    uint32_t npeers;
    /* Partitions whose followers we fenced at leader epoch + 1 but did
     * not promote yet (not enough answers, a lost CAS): retried until
     * their epoch moves on, live leader or not -- it cannot serve them. */
    uint64_t *pend; /* 2 * (leader epoch + 1 fenced at) + 1 if for a
                     * handoff, or 0 */
    uint32_t npend;
    /* Range scheme: each range's reads + writes per second as its leader
     * last said (pk_ctrl_decide.c, balancing by load), nload entries. */
    double *load;
    uint32_t nload;
    int load_round; /* balancing rounds since the last poll */
    int load_ok;    /* load holds a poll of every node */
    int load_hold;  /* rounds left before the next handoff by load */
};

int64_t pk__ctrl_mono_ms(void);
/* One call on *cli, given timeout_ms (pk__ctrl_call: CALL_MS); a transport
 * failure closes it. */
int pk__ctrl_call_for(pk_sclient **cli, pk_rr **r, int argc,
                      const char *const *argv, const size_t *lens,
                      int timeout_ms);
int pk__ctrl_call(pk_sclient **cli, pk_rr **r, int argc,
                  const char *const *argv, const size_t *lens);
/* The connection to the node at addr (dialled if needed), or NULL. */
pk_sclient **pk__ctrl_peer_of(pk_ctrl *c, const char *addr);
/* 1 if name is in the live node list names ("a\nb\n"). */
int pk__ctrl_is_live(const char *names, const char *name);
down *pk__ctrl_down_of(pk_ctrl *c, const char *name, int add);

/* pk_ctrl_decide.c: each changes m and returns the changes made. */
int pk__ctrl_retry(pk_ctrl *c, pk_pmap *m, const char *names);
int pk__ctrl_orphans(pk_ctrl *c, pk_pmap *m, const char *names);
int pk__ctrl_failover(pk_ctrl *c, pk_pmap *m, const char *names);
int pk__ctrl_balance(pk_ctrl *c, pk_pmap *m, const char *names);
int pk__ctrl_replace(pk_ctrl *c, pk_pmap *m);

#endif
