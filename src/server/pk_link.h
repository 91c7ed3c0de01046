/*
 * pk_link: forwarding -- a node in forward mode, or the proxy, sends a
 * command it does not own to the owner over a link (one TCP connection
 * per peer, pipelined) and relays the reply to the client.
 *
 * Order: a client connection with a forwarded command outstanding runs no
 * further command until the reply arrives (pk_conn.c), so replies leave in
 * the order their commands came, pipelined or not.  A `-MOVED` from the
 * peer (its map is newer than ours) is followed once, to the node it names.
 * When a link fails, every command waiting on it gets an error reply.
 */
#ifndef PK_SERVER_PK_LINK_H
#define PK_SERVER_PK_LINK_H

#include "proto/pk_reply.h"
#include "proto/pk_resp.h"

struct pk_rr;

typedef struct pk_server pk_server;
typedef struct pk_conn pk_conn;

/*
 * Forwards argv to the node at addr ("host:port") for connection c, which
 * then waits (c->waiting_fwd) until its reply has been appended to c->out.
 * Returns 0, or an error after which nothing was sent (the caller replies).
 */
int pk_link_forward(pk_server *s, pk_conn *c, const char *addr, int argc,
                    const pk_arg *argv);

/*
 * Splits a multi-key MGET, MSET, DEL or EXISTS whose keys live in several
 * partitions: one single-key command per key to addrs[i] (the owner of key
 * i, possibly this node), merged into one reply for c (values in key
 * order, counts summed, the first error if any).  Returns 0, or an error
 * after which nothing was sent.
 */
int pk_link_scatter(pk_server *s, pk_conn *c, int argc, const pk_arg *argv,
                    const char *const *addrs);

/*
 * Node-to-node calls (partition moves): sends the request in cmd (whose
 * bytes are consumed) on a link to addr kept apart from forwarding, and
 * calls cb with its reply, or with r NULL and err set when the link
 * failed.  Calls to one address are answered in order.  Returns 0, or an
 * error after which nothing was sent and cb is never called.
 */
typedef void (*pk_link_cb)(void *ctx, const struct pk_rr *r, const char *err);
int pk_link_call(pk_server *s, const char *addr, pk_obuf *cmd, pk_link_cb cb,
                 void *ctx);

/* pk_link_call on a link of its own that reaches keys as they are stored
 * (PK.RAWKEYS: a salted key's parts one by one, pk_salted.h). */
int pk_link_call_raw(pk_server *s, const char *addr, pk_obuf *cmd,
                     pk_link_cb cb, void *ctx);

/* pk_link_call on a link of its own for replication streams: a follower's
 * answers to them wait behind no reply that waits for replication (a read
 * index waits for its position's acknowledgement, pk_hotread.c). */
int pk_link_call_stream(pk_server *s, const char *addr, pk_obuf *cmd,
                        pk_link_cb cb, void *ctx);

/* Fails every call in flight to addr (a stuck peer) and closes the link;
 * pk_link_drop_all_calls does it for every call link. */
void pk_link_drop(pk_server *s, const char *addr);
void pk_link_drop_all_calls(pk_server *s);

/* Drops c from every queue (it is closing); its replies are discarded. */
void pk_link_forget(pk_server *s, pk_conn *c);

/* Closes every link (shutdown). */
void pk_link_close_all(pk_server *s);

#endif
