"""Global (term-partitioned) secondary indexes in a 3-node cluster with 3
copies: FT.CREATE ... GLOBAL, checked against test_ft's brute-force model.

A global index keeps each TAG value, TEXT word and NUMERIC bucket of a
document in the partition its (index, field, term) hashes to; a write
reaches those entries through the outbox of the document's own partition,
which the leader's feeder ships every few ticks.  So a plain query may lag,
and FT.SEARCH ... CONSISTENT must not: it waits until every write
acknowledged before it began is applied, so it never misses an
acknowledged write, and never returns a document that an acknowledged
change took out of the answer.

What is checked:

  1. random queries (test_ft's generator: tags, ranges, words, prefixes,
     phrases, AND/OR/NOT, PARAMS, FILTER, SORTBY, LIMIT, RETURN) with
     CONSISTENT, from every node, right after 1,200 writes: each answer
     equals the model's; the same queries without CONSISTENT once FT.INFO
     shows no lag;
  2. HSET, HDEL, a field outside the schema (the global entry holds a copy
     of the whole hash), DEL, RENAME, MULTI/EXEC and expiry: CONSISTENT
     queries equal the model right after each batch is acknowledged;
  3. CONSISTENT under concurrent writes: a unique tag written, then
     queried at once from another node, is found; the value it replaced
     no longer finds it;
  4. a query for one tag value or one word asks one node (INFO search
     deltas), '*' asks all three;
  5. FT.INFO (index_type, global_lag_*), FT.AGGREGATE GROUPBY, DROPINDEX
     and a new index of the same name, python3-redis's ft() on a global
     index, and a node alone accepting GLOBAL as a local index.

The cluster is shared by the module: each test uses its own index names and
key prefixes.  Every wait is bounded.
"""
import os
import random
import threading
import time

import pytest
import redis
from redis.commands.search.field import NumericField, TagField, TextField
from redis.commands.search.indexDefinition import IndexDefinition
from redis.commands.search.query import NumericFilter, Query

import cluster as pkcluster
import test_ft as ft

pytestmark = pytest.mark.partkv_only

WAIT_S = 20.0  # the longest any wait for the index may take


# ---------------------------------------------------------------------------
# Fixtures and helpers
# ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def gcluster():
    yield from pkcluster.serving(pkcluster.Cluster(nodes=3, replicas=3))


@pytest.fixture
def genv(gcluster):
    """test_ft.Env over the module's cluster: a client per node and a
    RedisCluster writer."""
    clients = [n.client(socket_timeout=60) for n in gcluster.nodes]
    rc = gcluster.rc(socket_timeout=60)
    yield ft.Env("cluster", clients, rc, cluster=gcluster)
    for c in clients:
        c.close()
    rc.close()
    dead = [n for n in gcluster.nodes if not gcluster.node_alive(n.pid)]
    assert not dead, "nodes died during the test: %r\n%s" % (
        dead, gcluster.logs())


def create_args(name, schema, prefixes, glob=True):
    """FT.CREATE's arguments for test_ft.Field's (python3-redis writes the
    field arguments; it has no GLOBAL)."""
    args = ["FT.CREATE", name, "ON", "HASH", "PREFIX", str(len(prefixes))]
    args += list(prefixes)
    if glob:
        args.append("GLOBAL")
    args.append("SCHEMA")
    for f in schema:
        args += f.redis_field().redis_args()
    return args


def create_global(env, name, schema, prefixes, node=0, glob=True):
    return env.clients[node].execute_command(
        *create_args(name, schema, prefixes, glob))


def info(client, name):
    res = client.execute_command("FT.INFO", name)
    return dict(zip(res[::2], res[1::2]))


def lag(client, name):
    d = info(client, name)
    return int(d["global_lag_records"]), int(d["global_lag_ms"])


def wait_no_lag(env, name, timeout=WAIT_S):
    """Until FT.INFO on every node says no record of the index waits."""
    t0 = time.monotonic()
    while True:
        lags = [lag(c, name) for c in env.clients]
        if all(r == 0 and ms == 0 for r, ms in lags):
            return time.monotonic() - t0
        assert time.monotonic() - t0 < timeout, (
            "global_lag (records, ms) per node still %r after %.0fs"
            % (lags, timeout))
        time.sleep(0.05)


def with_consistent(query, rng):
    """query (a python3-redis Query) sending CONSISTENT among its options:
    right after the query text, or after LIMIT (before PARAMS)."""
    base = query.get_args
    at_start = rng.random() < 0.5

    def get_args():
        a = base()
        a.insert(1 if at_start else len(a), "CONSISTENT")
        return a
    query.get_args = get_args
    return query


def answer(client, name, q, consistent=None):
    """(total, [(key, fields)]), as test_ft.answer, with CONSISTENT when
    consistent is an rng (where the flag goes is drawn from it)."""
    query = q.query()
    if consistent is not None:
        query = with_consistent(query, consistent)
    res = client.ft(name).search(query, query_params=q.params or None)
    out = []
    for d in res.docs:
        fields = {k: v for k, v in vars(d).items()
                  if k not in ("id", "payload", "score")}
        out.append((d.id, fields))
    return res.total, out


def check(env, name, model, queries, consistent=None, nodes=None,
          limit=5):
    """test_ft.check with CONSISTENT (when consistent is an rng):
    returns (mismatches, answers, message)."""
    bad, n = [], 0
    for q in queries:
        want = model.expect(q)
        for i in (nodes if nodes is not None else range(len(env.clients))):
            n += 1
            try:
                got = answer(env.clients[i], name, q, consistent)
            except redis.ResponseError as e:
                got = "error: %s" % e
            if got != want:
                bad.append((i, q, want, got))
    msgs = []
    for i, q, want, got in bad[:limit]:
        msgs.append("node %d: %s%s\n  want %s\n  got  %s"
                    % (i, ft.short(q), " CONSISTENT" * (consistent is not None),
                       ft.short(want), ft.short(got)))
    return bad, n, "\n".join(msgs)


def q_all(text, tree, num=1000, nocontent=False):
    q = ft.Q(tree, text)
    q.num, q.nocontent = num, nocontent
    return q


def tag_q(attr, value, **kw):
    return q_all("@%s:{%s}" % (attr, value.replace(" ", "\\ ")),
                 ("tag", attr, value, False), **kw)


def word_q(w, **kw):
    return q_all(w, ("text", [(w, False)]), **kw)


def search_info(client):
    i = client.info("search")
    return int(i["search_queries"]), int(i["search_query_nodes"])


# ---------------------------------------------------------------------------
# 1. random queries against the model, CONSISTENT right after the writes
# ---------------------------------------------------------------------------

def test_random_queries_match_model(genv):
    env = genv
    seed = int(os.environ.get("FT_SEED", random.randrange(1 << 30)))
    rng = random.Random(seed)
    name, prefix = "grnd", "gd:"
    prices = ft.unique_prices(rng)
    model = ft.Model(ft.SCHEMA, [prefix])
    # Before the index: the background build puts them in.
    first = ft.make_docs(rng, 800, prefix, prices)
    env.write(first)
    model.docs.update(first)
    other = {"gother:%d" % i: {"tags": "red", "title": "apple",
                               "price": "1"} for i in range(10)}
    env.write(other)
    model.docs.update(other)
    assert create_global(env, name, ft.SCHEMA, [prefix], node=2) == "OK"
    infos = env.wait_indexed(name)
    for i, d in enumerate(infos):
        assert d["index_definition"][-2:] == ["index_type", "GLOBAL"], (i, d)
    # After it: each write ships its entries through the outbox.
    second = ft.make_docs(rng, 1200, prefix + "n", prices)
    env.write(second)
    model.docs.update(second)
    # ... and some of the first batch changed, some deleted.
    changed = rng.sample(sorted(first), 60)
    p = env.writer.pipeline()
    for k in changed[:40]:
        d = ft.make_docs(rng, 1, prefix, prices)
        new = next(iter(d.values()))
        p.delete(k)
        p.hset(k, mapping=new)
        model.docs[k] = new
    for k in changed[40:]:
        p.delete(k)
        del model.docs[k]
    p.execute()
    lag_after_writes = [lag(c, name)[0] for c in env.clients]

    gen = ft.Gen(rng, model)
    queries = ft.fixed_queries(gen) + [gen.query() for _ in range(300)]
    # CONSISTENT at once, from every node in turn.
    t0 = time.monotonic()
    bad, n, msg = check(env, name, model, queries, consistent=rng)
    took = time.monotonic() - t0
    assert not bad, ("FT_SEED=%d: %d of %d CONSISTENT answers differ from "
                     "the model:\n%s" % (seed, len(bad), n, msg))
    hits = sum(1 for q in queries if model.expect(q)[0] > 0)
    assert hits > len(queries) // 5, (hits, len(queries))
    # Without CONSISTENT once nothing waits in the outboxes.
    waited = wait_no_lag(env, name)
    bad, n, msg = check(env, name, model, queries)
    assert not bad, ("FT_SEED=%d: with no lag left, %d of %d answers "
                     "differ from the model:\n%s" % (seed, len(bad), n, msg))
    assert env.num_docs(name) == [len(model.covered())] * len(env.clients)
    print("FT_SEED=%d: lag after writes %r, %d CONSISTENT answers in %.1fs, "
          "lag gone %.2fs later" % (seed, lag_after_writes, n, took, waited))
    env.alive()
