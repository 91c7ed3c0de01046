/*
 * pk_metrics: Prometheus text exposition (format 0.0.4) on --metrics-port,
 * GET /metrics, one response per connection.
 *
 *   partkv_commands_total, partkv_connected_clients, partkv_keys,
 *   partkv_partitions{role="leader"|"follower"}
 *   partkv_command_duration_seconds{class="read"|"write"|"other"}
 *       histogram of the time a command runs on this node (its own work:
 *       not the wait for replicas' acks or a forwarded owner)
 *   partkv_partition_{keys,bytes,reads_per_second,writes_per_second,
 *       cpu_seconds_total,network_bytes_in_total,network_bytes_out_total,
 *       log_last_seq}{partition, role}
 *   partkv_hot_key_{reads,writes}_per_second{key, partition}
 *
 * Partition series cover the partitions with data here.  The listener
 * and its connections live on the server's loop; a request is answered
 * from the loop's state as it stands.
 */
#ifndef PK_SERVER_PK_METRICS_H
#define PK_SERVER_PK_METRICS_H

#include <stdint.h>

typedef struct pk_server pk_server;

typedef struct pk_latency pk_latency; /* pk_srv.h */

/* One command of class cls took us microseconds. */
void pk_metrics_observe(pk_latency *l, int cls, uint64_t us);

/* Listens on --metrics-port (cfg.metrics_port >= 0; 0 picks a free port)
 * and logs "partkv: metrics on HOST:PORT".  Returns 0 or -1. */
int pk_metrics_start(pk_server *s);

/* Closes the listener and every connection (at teardown); _free, once
 * the loop has run their close callbacks. */
void pk_metrics_stop(pk_server *s);
void pk_metrics_free(pk_server *s);

#endif
