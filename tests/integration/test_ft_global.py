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
     of the whole hash), DEL, RENAME, MULTI/EXEC: CONSISTENT queries equal
     the model right after each batch is acknowledged; and once keys have
     expired (a read and num_docs say so), right after that;
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


class FastModel(ft.Model):
    """test_ft.Model with the terms of each value and query computed once:
    the test asks it hundreds of times over 2,000 documents.  Tags and
    words are matched by the same rules (test_ft.tag_terms, text_terms,
    query_terms, phrase_in)."""

    def __init__(self, schema, prefixes):
        super().__init__(schema, prefixes)
        self._terms = {}

    def terms(self, fn, *args):
        k = (fn, args)
        v = self._terms.get(k)
        if v is None:
            v = self._terms[k] = fn(*args)
        return v

    def eval(self, n, doc, field=None):
        if n[0] == "tag":
            f = self.attr(n[1])
            qt = self.terms(ft.tag_terms, n[2], f.sep, f.cs)
            assert qt, "the generator wrote an empty tag"
            if len(qt) > 1 or f.name not in doc:
                return False
            return any(t == qt[0] or (n[3] and t.startswith(qt[0]))
                       for t in self.terms(ft.tag_terms, doc[f.name], f.sep,
                                           f.cs))
        if n[0] == "text":
            qterms = self.terms(query_terms_t, tuple(n[1]))
            if not qterms:
                return None
            fields = ([self.attr(field)] if field is not None else
                      [f for f in self.schema
                       if f.kind == "TEXT" and not f.noindex])
            return any(f.name in doc and
                       ft.phrase_in(self.terms(ft.text_terms, doc[f.name]),
                                    qterms)
                       for f in fields)
        return super().eval(n, doc, field)


def query_terms_t(words):
    return ft.query_terms(list(words))


def check(env, name, model, queries, consistent=None, first_node=0,
          wants=None, limit=5):
    """Query i goes to node (first_node + i) % nodes, with CONSISTENT when
    consistent is an rng; each answer is compared with the model's (or
    with wants[i]).  Returns (mismatches, answers, message)."""
    bad = []
    nn = len(env.clients)
    for j, q in enumerate(queries):
        want = wants[j] if wants is not None else model.expect(q)
        i = (first_node + j) % nn
        try:
            got = answer(env.clients[i], name, q, consistent)
        except redis.ResponseError as e:
            got = "error: %s" % e
        if got != want:
            bad.append((i, q, want, got))
    msgs = []
    flag = " CONSISTENT" if consistent is not None else ""
    for i, q, want, got in bad[:limit]:
        msgs.append("node %d: %s%s\n  want %s\n  got  %s%s"
                    % (i, ft.short(q), flag, ft.short(want), ft.short(got),
                       diff(want, got)))
    return bad, len(queries), "\n".join(msgs)


def diff(want, got):
    """What differs between two answers, in short."""
    if isinstance(got, str):
        return ""
    wk, gk = [k for k, _ in want[1]], [k for k, _ in got[1]]
    out = []
    if want[0] != got[0]:
        out.append("total %d, want %d" % (got[0], want[0]))
    if set(wk) != set(gk):
        out.append("missing %s, extra %s" % (
            ft.short(sorted(set(wk) - set(gk))[:5]),
            ft.short(sorted(set(gk) - set(wk))[:5])))
    elif wk != gk:
        out.append("order differs")
    else:
        wf, gf = dict(want[1]), dict(got[1])
        ks = [k for k in wk if wf[k] != gf[k]][:3]
        out += ["%s: %s, want %s" % (k, ft.short(gf[k]), ft.short(wf[k]))
                for k in ks]
    return "\n  (%s)" % "; ".join(out) if out else ""


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
    model = FastModel(ft.SCHEMA, [prefix])
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
    # After it, in rounds: the model first, then the writes, then at once
    # the round's queries with CONSISTENT, each from the next node.  Each
    # write ships its entries through the outbox, so the first queries of
    # a round run while the entries are on their way.
    rounds, per_round = 10, 15
    second = list(ft.make_docs(rng, 1200, prefix + "n", prices).items())
    changed = rng.sample(sorted(first), 60)
    step = len(second) // rounds
    gen = ft.Gen(rng, model)
    queries, hits, lagged, took = [], 0, 0, 0.0
    for r in range(rounds):
        batch = dict(second[r * step:(r + 1) * step])
        model.docs.update(batch)
        p = env.writer.pipeline()
        for k, d in batch.items():
            p.hset(k, mapping=d)
        for j, k in enumerate(changed[r * 6:(r + 1) * 6]):
            p.delete(k)
            if j < 4:  # replaced by other values
                new = next(iter(ft.make_docs(rng, 1, prefix,
                                             prices).values()))
                p.hset(k, mapping=new)
                model.docs[k] = new
            else:
                del model.docs[k]
        probe = tag_q("tags", "red", nocontent=True)
        qs = [probe] + (ft.fixed_queries(gen) if r == 0 else []) + \
            [gen.query() for _ in range(per_round)]
        ws = [model.expect(q) for q in qs]
        p.execute()
        # A plain query at once may lag (not asserted: it shows the
        # CONSISTENT answers below are not trivially right).
        lagged += answer(env.clients[r % 3], name, probe) != ws[0]
        t0 = time.monotonic()
        bad, n, msg = check(env, name, model, qs, consistent=rng,
                            first_node=r, wants=ws)
        took += time.monotonic() - t0
        assert not bad, ("FT_SEED=%d round %d: %d of %d CONSISTENT answers "
                         "differ from the model:\n%s"
                         % (seed, r, len(bad), n, msg))
        queries += qs
        hits += sum(1 for w in ws if w[0] > 0)
    assert hits > len(queries) // 5, (hits, len(queries))
    # Without CONSISTENT, once nothing waits in the outboxes.
    wants = [model.expect(q) for q in queries]
    waited = wait_no_lag(env, name)
    bad, n, msg = check(env, name, model, queries, first_node=1,
                        wants=wants)
    assert not bad, ("FT_SEED=%d: with no lag left, %d of %d answers "
                     "differ from the model:\n%s" % (seed, len(bad), n, msg))
    assert env.num_docs(name) == [len(model.covered())] * len(env.clients)
    print("FT_SEED=%d: %d CONSISTENT answers in %.1fs; a plain query right "
          "after the writes lagged in %d of %d rounds; lag gone %.2fs after "
          "the last" % (seed, len(queries), took, lagged, rounds, waited))
    env.alive()



# ---------------------------------------------------------------------------
# 2. the index follows writes: CONSISTENT right after each batch
# ---------------------------------------------------------------------------

UPD_SCHEMA = [ft.Field("tags", "TAG"), ft.Field("uid", "TAG"),
              ft.Field("cat", "TAG", sep=";"),
              ft.Field("price", "NUMERIC", sortable=True),
              ft.Field("title", "TEXT")]


def leader_client(env, key):
    """A plain client to the node leading key's slot (MULTI/EXEC)."""
    return env.cluster.node_for_slot(pkcluster.keyslot(key)).client()


def test_updates_and_deletes(genv):
    env = genv
    rng = random.Random(5)
    name, prefix = "gupd", "gu:"
    model = ft.Model(UPD_SCHEMA, [prefix])
    docs = {}
    for i in range(60):
        docs["gu:{%02d}x" % i] = {
            "tags": rng.choice(["red", "blue", "green"]),
            "uid": "i%02d" % i, "cat": rng.choice(["a;b", "b", "c ; a"]),
            "price": "%d" % (i * 10 + 1), "title": ft.rand_text(rng, 1, 3)}
    assert create_global(env, name, UPD_SCHEMA, [prefix]) == "OK"
    env.wait_indexed(name)
    env.write(docs)  # through the outboxes
    model.docs.update(docs)
    gen = ft.Gen(rng, model)
    base = ft.fixed_queries(gen) + [
        q_all("@cat:{a}", ("tag", "cat", "a", False)),
        q_all("@cat:{b}", ("tag", "cat", "b", False)),
        word_q("zebra"), word_q("quantum"),
        tag_q("tags", "new"), tag_q("tags", "multi")]
    w = env.writer
    touched = set()

    def same(step, keys=()):
        """Every query, CONSISTENT, from every node, at once; the queries
        of the documents touched so far (by their unique id tag, whole
        and with RETURN of a field outside the schema) too."""
        touched.update(keys)
        qs = list(base)
        for k in sorted(touched):
            i = k[4:6]
            qs.append(tag_q("uid", "i" + i))
            q = tag_q("uid", "i" + i)
            q.ret = [("extra", "extra"), ("price", "price")]
            qs.append(q)
        for first in range(len(env.clients)):
            bad, n, msg = check(env, name, model, qs, consistent=rng,
                                first_node=first)
            assert not bad, "after %s: %d of %d CONSISTENT answers " \
                "differ:\n%s" % (step, len(bad), n, msg)

    same("the first writes")
    # HSET changes a tag, then back.
    k = "gu:{00}x"
    old = model.docs[k]["tags"]
    w.hset(k, "tags", "new")
    model.docs[k]["tags"] = "new"
    same("HSET tags", [k])
    w.hset(k, "tags", old)
    model.docs[k]["tags"] = old
    same("HSET tags back")
    # HSET changes a number and the text.
    k = "gu:{01}x"
    w.hset(k, mapping={"price": "-5", "title": "quantum zebra"})
    model.docs[k].update({"price": "-5", "title": "quantum zebra"})
    same("HSET price, title", [k])
    # HDEL of an indexed field: still a document.
    k = "gu:{02}x"
    assert w.hdel(k, "tags", "title") == 2
    del model.docs[k]["tags"], model.docs[k]["title"]
    same("HDEL tags, title", [k])
    # A field outside the schema: the global entries hold a copy of the
    # whole hash, so what a tag query returns must change too.
    for j, k in enumerate(("gu:{03}x", "gu:{04}x")):
        w.hset(k, "extra", "first %d" % j)
        model.docs[k]["extra"] = "first %d" % j
    same("HSET extra", ["gu:{03}x", "gu:{04}x"])
    w.hset("gu:{03}x", "extra", "second")
    model.docs["gu:{03}x"]["extra"] = "second"
    assert w.hdel("gu:{04}x", "extra") == 1
    del model.docs["gu:{04}x"]["extra"]
    same("HSET, HDEL extra")
    # DEL, UNLINK, HDEL of every field.
    w.delete("gu:{05}x")
    w.unlink("gu:{06}x")
    w.hdel("gu:{07}x", *list(model.docs["gu:{07}x"]))
    for k in ("gu:{05}x", "gu:{06}x", "gu:{07}x"):
        del model.docs[k]
    same("DEL, UNLINK, HDEL all", ["gu:{05}x", "gu:{06}x", "gu:{07}x"])
    # A deleted key written again, with other values.
    w.hset("gu:{05}x", mapping={"tags": "new", "uid": "i05", "title": "zebra"})
    model.docs["gu:{05}x"] = {"tags": "new", "uid": "i05", "title": "zebra"}
    same("HSET after DEL")
    # RENAME within the prefix, out of it, and into it.
    w.rename("gu:{08}x", "gu:{08}y")
    model.docs["gu:{08}y"] = model.docs.pop("gu:{08}x")
    w.rename("gu:{09}x", "gv:{09}x")
    model.docs["gv:{09}x"] = model.docs.pop("gu:{09}x")
    w.hset("gv:{10}z", mapping={"tags": "new", "uid": "i10",
                                "title": "quantum"})
    w.rename("gv:{10}z", "gu:{10}x")  # over an existing document
    model.docs["gu:{10}x"] = {"tags": "new", "uid": "i10",
                              "title": "quantum"}
    same("RENAME", ["gu:{08}y", "gu:{09}x", "gu:{10}x"])
    # MULTI/EXEC on the keys' leader: each queued write re-indexes.
    tx = ["gu:{11}x", "gu:{11}y"]
    c = leader_client(env, tx[0])
    p = c.pipeline(transaction=True)
    p.hset(tx[0], "tags", "multi")
    p.hset(tx[1], mapping={"tags": "multi", "uid": "i11", "price": "7"})
    p.hdel(tx[0], "title")
    p.hset(tx[0], "extra", "in multi")
    assert p.execute() == [0, 3, 1, 1]
    c.close()
    model.docs[tx[0]]["tags"] = "multi"
    model.docs[tx[0]].pop("title")
    model.docs[tx[0]]["extra"] = "in multi"
    model.docs[tx[1]] = {"tags": "multi", "uid": "i11", "price": "7"}
    same("MULTI/EXEC", tx)
    # A MULTI/EXEC that deletes one document and writes it again.
    c = leader_client(env, "gu:{12}x")
    p = c.pipeline(transaction=True)
    p.delete("gu:{12}x")
    p.hset("gu:{12}x", mapping={"uid": "i12", "tags": "multi"})
    assert p.execute() == [1, 2]
    c.close()
    model.docs["gu:{12}x"] = {"uid": "i12", "tags": "multi"}
    same("MULTI DEL + HSET", ["gu:{12}x"])
    # And a write after all that.
    w.hset("gu:{16}x", mapping={"tags": "new", "title": "zebra"})
    model.docs["gu:{16}x"].update({"tags": "new", "title": "zebra"})
    same("a last HSET", ["gu:{16}x"])
    # Without CONSISTENT once the outboxes are empty.
    wait_no_lag(env, name)
    bad, n, msg = check(env, name, model, base)
    assert not bad, "with no lag left: %d of %d differ:\n%s" % (
        len(bad), n, msg)
    assert env.num_docs(name) == [len(model.covered())] * len(env.clients)
    env.alive()


def test_expiry(genv):
    """Keys that expire (PEXPIRE, EXPIRE; nobody writes them after): once
    they are gone -- a read says so, num_docs no longer counts them, '*'
    no longer finds them -- a CONSISTENT query must not return them
    either.  (The deletes of expiry reach the outbox without a client's
    write marking it.)  A few rounds: whether a stale entry is still
    there when the keys are seen gone depends on timing."""
    env = genv
    name, prefix = "gexp", "ge:"
    schema = [ft.Field("tags", "TAG"), ft.Field("price", "NUMERIC"),
              ft.Field("title", "TEXT")]
    model = ft.Model(schema, [prefix])
    assert create_global(env, name, schema, [prefix]) == "OK"
    env.wait_indexed(name)
    rounds, per = 6, 4
    docs = {"ge:{%02d}" % i: {"tags": ["red", "blue"][i % 2],
                              "price": str(i), "title": "zebra %d" % i}
            for i in range(rounds * per + 4)}
    env.write(docs)
    model.docs.update(docs)
    queries = [q_all("*", ("all",)), tag_q("tags", "red"),
               tag_q("tags", "blue"), word_q("zebra"),
               q_all("@tags:{re*}", ("tag", "tags", "re", True)),
               q_all("@price:[-inf +inf]",
                     ("range", "price", "-inf", False, "+inf", False)),
               q_all("@price:[4 7]",
                     ("range", "price", "4", False, "7", False))]
    rng = random.Random(1)
    bad, n, msg = check(env, name, model, queries, consistent=rng)
    assert not bad, "before expiry: %d of %d differ:\n%s" % (len(bad), n,
                                                              msg)
    w = env.writer
    assert w.pexpire("ge:{%02d}" % (rounds * per), 200)
    assert w.persist("ge:{%02d}" % (rounds * per))  # stays
    for r in range(rounds):
        gone = ["ge:{%02d}" % (r * per + j) for j in range(per)]
        for k in gone[:-1]:
            assert w.pexpire(k, 100)
        if r == 0:
            assert w.expire(gone[-1], 1)
        else:
            assert w.pexpire(gone[-1], 150)
        for k in gone:
            del model.docs[k]
        want = [len(model.covered())] * len(env.clients)
        t0 = time.monotonic()
        while w.exists(*gone) or env.num_docs(name) != want:
            assert time.monotonic() - t0 < 10.0, (
                "num_docs %r, want %r, after expiry" % (env.num_docs(name),
                                                        want))
            time.sleep(0.02)
        t1 = time.monotonic()
        bad, n, msg = check(env, name, model, queries * 2, consistent=rng)
        if bad:  # how long the expired documents stay: for the report
            while time.monotonic() - t1 < 5.0 and check(
                    env, name, model, queries, consistent=rng)[0]:
                time.sleep(0.02)
            msg += "\n(right again %.2fs after the keys were seen gone)" \
                % (time.monotonic() - t1)
        assert not bad, ("round %d: keys %s expired (EXISTS 0, num_docs %r):"
                         " %d of %d CONSISTENT answers differ:\n%s"
                         % (r, gone, want, len(bad), n, msg))
    wait_no_lag(env, name)
    bad, n, msg = check(env, name, model, queries)
    assert not bad, "with no lag left: %d of %d differ:\n%s" % (
        len(bad), n, msg)


# ---------------------------------------------------------------------------
# 3. CONSISTENT never misses an acknowledged write, under concurrent writes
# ---------------------------------------------------------------------------

class Leaders:
    """Which node leads each slot (CLUSTER SLOTS once: the map does not
    move during these tests)."""

    def __init__(self, env):
        slots = env.clients[0].execute_command("CLUSTER", "SLOTS")
        self.owner = pkcluster.slot_owner_ports(slots)
        self.ports = [n.port for n in env.cluster.nodes]

    def other(self, key, k):
        """The index of a node that does not lead key (the k-th such)."""
        lead = self.owner[pkcluster.keyslot(key)]
        others = [i for i, p in enumerate(self.ports) if p != lead]
        return others[k % len(others)]


def test_consistent_sees_acknowledged_writes(genv):
    env = genv
    name, prefix = "gcw", "cw:"
    assert create_global(env, name, [ft.Field("t", "TAG"),
                                     ft.Field("n", "NUMERIC")],
                         [prefix]) == "OK"
    env.wait_indexed(name)
    leaders = Leaders(env)
    nodes = env.cluster.nodes
    stop = threading.Event()
    errors, stats = [], {"ops": [0, 0], "plain_missed": 0, "plain": 0,
                         "noise": 0}

    def search(c, value, *opts):
        res = c.execute_command("FT.SEARCH", name, "@t:{%s}" % value,
                                "NOCONTENT", "LIMIT", "0", "100", *opts)
        return res[0], res[1:]

    def writer(w):
        rc = env.cluster.rc(socket_timeout=30)
        cs = [n.client(socket_timeout=30) for n in nodes]
        live = []  # (key, value) written by this thread
        i = 0
        try:
            while not stop.is_set() and i < 400:
                if live and i % 3 == 2:  # a changed value
                    j = (i * 7) % len(live)
                    key, old = live[j]
                    new = "v%dc%d" % (w, i)
                    rc.hset(key, "t", new)
                    live[j] = (key, new)
                    c = cs[leaders.other(key, i)]
                    got_old = search(c, old, "CONSISTENT")
                    got_new = search(c, new, "CONSISTENT")
                    if key in got_old[1] or got_new != (1, [key]):
                        errors.append(
                            "HSET %s t %s (was %s) acknowledged, then "
                            "CONSISTENT from %s: @t:{%s} -> %r, @t:{%s} "
                            "-> %r" % (key, new, old, nodes[cs.index(c)],
                                       old, got_old, new, got_new))
                else:
                    key, value = "cw:%d:%d" % (w, i), "v%dn%d" % (w, i)
                    rc.hset(key, mapping={"t": value, "n": i})
                    live.append((key, value))
                    c = cs[leaders.other(key, i)]
                    if i % 10 == 0:  # how often a plain one lags
                        stats["plain"] += 1
                        if search(c, value) != (1, [key]):
                            stats["plain_missed"] += 1
                    got = search(c, value, "CONSISTENT")
                    if got != (1, [key]):
                        errors.append(
                            "HSET %s t %s acknowledged, then CONSISTENT "
                            "from %s: @t:{%s} -> %r"
                            % (key, value, nodes[cs.index(c)], value, got))
                stats["ops"][w] += 1
                i += 1
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append("writer %d: %r" % (w, e))
        finally:
            rc.close()
            for c in cs:
                c.close()

    def noise():
        """Other documents of the index, written in bulk meanwhile: the
        outboxes are never empty."""
        rc = env.cluster.rc(socket_timeout=30)
        k = 0
        try:
            while not stop.is_set():
                p = rc.pipeline()
                for _ in range(50):
                    p.hset("cw:noise:%d" % (k % 2000),
                           mapping={"t": "noise%d" % (k % 7), "n": k})
                    k += 1
                p.execute()
                stats["noise"] = k
                time.sleep(0.005)
        except Exception as e:  # noqa: BLE001
            errors.append("noise: %r" % (e,))
        finally:
            rc.close()

    ts = [threading.Thread(target=writer, args=(w,)) for w in range(2)]
    ts.append(threading.Thread(target=noise))
    for t in ts:
        t.start()
    t0 = time.monotonic()
    while time.monotonic() - t0 < 8.0 and any(t.is_alive() for t in ts[:2]):
        time.sleep(0.1)
    stop.set()
    for t in ts:
        t.join(60)
    assert not errors, "%d failures, e.g.:\n%s" % (
        len(errors), "\n".join(errors[:5]))
    assert min(stats["ops"]) >= 20, stats
    print("acknowledged then queried: %r; a plain query missed the write "
          "%d of %d times; %d noise writes" % (
              stats["ops"], stats["plain_missed"], stats["plain"],
              stats["noise"]))
    env.alive()


# ---------------------------------------------------------------------------
# 4. a query for one value asks one node
# ---------------------------------------------------------------------------

def query_cost(client, name, query):
    """(search_queries delta, search_query_nodes delta, total) of one plain
    FT.SEARCH on client.  A retried round counts twice in search_queries:
    then it is measured again (at most 3 times)."""
    for _ in range(3):
        q0, n0 = search_info(client)
        res = client.execute_command("FT.SEARCH", name, query, "NOCONTENT",
                                     "LIMIT", "0", "1000")
        q1, n1 = search_info(client)
        if q1 - q0 == 1:
            break
    return q1 - q0, n1 - n0, res[0]


def test_one_value_asks_one_node(genv):
    env = genv
    schema = [ft.Field("c", "TAG"), ft.Field("w", "TEXT"),
              ft.Field("n", "NUMERIC")]
    docs = {"gone:%d" % i: {"c": ["red", "blue", "green"][i % 3],
                            "w": "hello world %d" % (i % 5), "n": str(i)}
            for i in range(90)}
    env.write(docs)
    assert create_global(env, "gone", schema, ["gone:"]) == "OK"
    assert create_global(env, "lone", schema, ["gone:"], glob=False) == "OK"
    env.wait_indexed("gone")
    env.wait_indexed("lone")
    wait_no_lag(env, "gone")
    cases = [  # (query, nodes a global index asks, documents)
        ("@c:{red}", 1, 30), ("@c:{nosuch}", 1, 0), ("hello", 1, 90),
        ("@w:world", 1, 90), ("*", 3, 90), ("hel*", 3, 90),
        ("-@c:{red}", 3, 60), ("@n:[-inf +inf]", 3, 90)]
    out = []
    for i, c in enumerate(env.clients):
        for query, want_nodes, total in cases:
            dq, dn, got = query_cost(c, "gone", query)
            out.append((i, query, "global", dq, dn, got,
                        (1, want_nodes, total)))
        # A local index asks every node that leads partitions.
        dq, dn, got = query_cost(c, "lone", "@c:{red}")
        out.append((i, "@c:{red}", "local", dq, dn, got, (1, 3, 30)))
    bad = ["node %d, %s index, %r: %d round(s), %d node(s) asked, %d "
           "documents; want %r" % (row[:6] + (row[6],))
           for row in out if row[3:6] != row[6]]
    assert not bad, "\n".join(bad)
    # Two values: at most two nodes.
    for c in env.clients:
        dq, dn, got = query_cost(c, "gone", "@c:{red|blue}")
        assert (dq, got) == (1, 60) and 1 <= dn <= 2, (dq, dn, got)



# ---------------------------------------------------------------------------
# 5. FT.INFO, FT.AGGREGATE, DROPINDEX, python3-redis, a node alone
# ---------------------------------------------------------------------------

def test_ft_info_lag(genv):
    env = genv
    schema = [ft.Field("t", "TAG"), ft.Field("n", "NUMERIC")]
    assert create_global(env, "ginf", schema, ["gi:"]) == "OK"
    assert create_global(env, "linf", schema, ["gi:"], glob=False) == "OK"
    env.wait_indexed("ginf")
    env.wait_indexed("linf")
    for i, c in enumerate(env.clients):
        for name, kind in (("ginf", "GLOBAL"), ("linf", "LOCAL")):
            d = info(c, name)
            assert d["index_definition"] == [
                "key_type", "HASH", "prefixes", ["gi:"], "index_type",
                kind], (i, name, d)
            assert (d["global_lag_records"], d["global_lag_ms"]) == (0, 0), (
                i, name, d)
    # Right after writes, the outboxes hold some of them: FT.INFO says so
    # (as integers, never more than were written), the local index never.
    seen, written = [], 0
    for rnd in range(10):
        env.write({"gi:%d" % (written + j): {"t": "x%d" % (j % 5), "n": j}
                   for j in range(500)})
        written += 500
        c = env.clients[rnd % 3]
        d = info(c, "ginf")
        recs, ms = d["global_lag_records"], d["global_lag_ms"]
        assert isinstance(recs, int) and isinstance(ms, int), d
        assert 0 <= recs <= written and 0 <= ms < 60000, d
        assert (0, 0) == lag(c, "linf")
        if recs:
            seen.append((recs, ms))
            if len(seen) >= 3:
                break
    assert seen, "FT.INFO never showed a record waiting in an outbox " \
        "right after 500 writes, 10 times"
    # Once writes stop, the lag goes to 0 everywhere; everything is there.
    wait_no_lag(env, "ginf")
    for i, c in enumerate(env.clients):
        for name in ("ginf", "linf"):
            d = info(c, name)
            assert (d["num_docs"], d["percent_indexed"],
                    d["global_lag_records"], d["global_lag_ms"]) == (
                        written, "1", 0, 0), (i, name, d)
        res = c.execute_command("FT.SEARCH", "ginf", "@t:{x3}", "NOCONTENT",
                                "LIMIT", "0", "0")
        assert res == [written // 5], (i, res)
    print("lag seen after writes (records, ms): %r" % (seen,))


def aggregate_rows(client, name, query):
    res = client.execute_command(
        "FT.AGGREGATE", name, query, "GROUPBY", "1", "@color", "REDUCE",
        "COUNT", "0", "AS", "n", "REDUCE", "SUM", "1", "@price", "AS", "s",
        "REDUCE", "MAX", "1", "@price", "AS", "mx")
    rows = sorted(tuple(r) for r in res[1:])
    return res[0], rows


def test_aggregate_groupby(genv):
    env = genv
    schema = [ft.Field("color", "TAG"), ft.Field("size", "TAG"),
              ft.Field("price", "NUMERIC"), ft.Field("title", "TEXT")]
    model = ft.Model(schema, ["gag:"])
    rng = random.Random(23)
    colors = ["red", "blue", "green", "dark red"]
    docs = {"gag:%d" % i: {"color": rng.choice(colors),
                           "size": rng.choice(["big", "small"]),
                           "price": str(rng.randint(1, 100)),
                           "title": ft.rand_text(rng, 1, 3)}
            for i in range(300)}
    assert create_global(env, "gagg", schema, ["gag:"]) == "OK"
    assert create_global(env, "lagg", schema, ["gag:"], glob=False) == "OK"
    env.wait_indexed("gagg")
    env.wait_indexed("lagg")
    env.write(docs)
    model.docs.update(docs)
    cases = [("*", ("all",)), ("@size:{big}", ("tag", "size", "big", False)),
             ("@color:{dark\\ red}", ("tag", "color", "dark red", False)),
             ("@price:[10 40]", ("range", "price", "10", False, "40", False)),
             ("apple", ("text", [("apple", False)])),
             ("@size:{small} -apple",
              ("and", [("tag", "size", "small", False),
                       ("not", ("text", [("apple", False)]))]))]

    def expect(tree):
        groups = {}
        for k, d in model.covered().items():
            if model.eval(tree, d):
                g = groups.setdefault(d["color"], [0, 0, 0])
                p = int(d["price"])
                g[0], g[1], g[2] = g[0] + 1, g[1] + p, max(g[2], p)
        rows = sorted(("color", c, "n", str(n), "s", str(s), "mx", str(m))
                      for c, (n, s, m) in groups.items())
        return len(rows), rows

    def same(step):
        wait_no_lag(env, "gagg")
        for query, tree in cases:
            want = expect(tree)
            assert want[0] > 0, query
            for i, c in enumerate(env.clients):
                for name in ("gagg", "lagg"):
                    got = aggregate_rows(c, name, query)
                    assert got == want, "%s: node %d, %s, %r:\n got  %r\n " \
                        "want %r" % (step, i, name, query, got, want)

    same("the writes")
    # Changed colors and prices, and deleted documents: the groups follow.
    for k in rng.sample(sorted(docs), 40):
        d = {"color": rng.choice(colors), "price": str(rng.randint(1, 100))}
        env.writer.hset(k, mapping=d)
        model.docs[k].update(d)
    for k in rng.sample(sorted(model.docs), 20):
        env.writer.delete(k)
        del model.docs[k]
    same("changes")


def test_dropindex_and_recreate(genv):
    env = genv
    name = "gdrp"
    schema = [ft.Field("tags", "TAG"), ft.Field("title", "TEXT")]
    old = {"gdr:%d" % i: {"tags": "old", "title": "apple"} for i in range(30)}
    env.write(old)
    assert create_global(env, name, schema, ["gdr:"]) == "OK"
    env.wait_indexed(name)
    res = env.clients[1].execute_command("FT.SEARCH", name, "@tags:{old}",
                                         "CONSISTENT", "LIMIT", "0", "0")
    assert res == [30]
    # Dropped (documents kept), the same name on another prefix.
    assert env.ft(name).dropindex() == "OK"
    env.wait_listed(name, present=False)
    for c in env.clients:
        with pytest.raises(redis.ResponseError, match="no such index"):
            c.execute_command("FT.SEARCH", name, "*", "CONSISTENT")
    assert env.writer.hgetall("gdr:0") == {"tags": "old", "title": "apple"}
    new = {"gdq:%d" % i: {"tags": "new", "title": "zebra"} for i in range(7)}
    env.write(new)
    assert create_global(env, name, schema, ["gdq:"], node=2) == "OK"
    env.wait_indexed(name)
    for c in env.clients:
        for query, want in [("*", sorted(new)), ("@tags:{new}", sorted(new)),
                            ("@tags:{old}", []), ("apple", []),
                            ("zebra", sorted(new))]:
            res = c.execute_command("FT.SEARCH", name, query, "NOCONTENT",
                                    "LIMIT", "0", "100", "CONSISTENT")
            assert (res[0], sorted(res[1:])) == (len(want), want), (query,
                                                                    res)
    # Dropped again, the old documents changed meanwhile, and made again
    # on the old prefix: only what is there now, no entry of the first
    # index's (same name, same terms) shows.
    assert env.clients[0].execute_command("FT.DROPINDEX", name) == "OK"
    env.wait_listed(name, present=False)
    for i in range(0, 30, 2):
        env.writer.delete("gdr:%d" % i)
    for i in range(1, 30, 2):
        env.writer.hset("gdr:%d" % i, "tags", "renewed")
    assert create_global(env, name, schema, ["gdr:"], node=1) == "OK"
    env.wait_indexed(name)
    keep = sorted("gdr:%d" % i for i in range(1, 30, 2))
    for c in env.clients:
        for query, want in [("@tags:{old}", []), ("@tags:{new}", []),
                            ("@tags:{renewed}", keep), ("apple", keep),
                            ("zebra", [])]:
            res = c.execute_command("FT.SEARCH", name, query, "NOCONTENT",
                                    "LIMIT", "0", "100", "CONSISTENT")
            assert (res[0], sorted(res[1:])) == (len(want), want), (query,
                                                                    res)
    assert env.num_docs(name) == [15] * len(env.clients)
    # DD: the documents go with it.
    assert env.clients[2].execute_command("FT.DROPINDEX", name, "DD") == "OK"
    env.wait_listed(name, present=False)
    assert sum(env.writer.exists(k) for k in keep) == 0
    assert sum(env.writer.exists(k) for k in new) == 7
    env.alive()


def test_python_redis_ft_api(genv):
    """python3-redis's ft() over a global index, unmodified: search with
    Query objects (NumericFilter, SORTBY, RETURN, paging), info, aggregate
    with AggregateRequest, dropindex."""
    from redis.commands.search import aggregation, reducers

    env = genv
    name, prefix = "gpy", "gpy:"
    schema = [ft.Field("tags", "TAG"), ft.Field("price", "NUMERIC",
                                                sortable=True),
              ft.Field("title", "TEXT")]
    model = ft.Model(schema, [prefix])
    docs = {"gpy:%03d" % i: {"tags": ["red", "blue", "green"][i % 3],
                             "price": str(i), "title": "item %d apple" % i}
            for i in range(120)}
    assert create_global(env, name, schema, [prefix]) == "OK"
    env.wait_indexed(name)
    env.write(docs)
    model.docs.update(docs)
    wait_no_lag(env, name)
    for i, c in enumerate(env.clients):
        f = c.ft(name)
        d = f.info()
        assert d["index_definition"][-1] == "GLOBAL", d
        assert int(d["num_docs"]) == 120 and d["global_lag_records"] == 0
        res = f.search(Query("@tags:{red}")
                       .add_filter(NumericFilter("price", 30, 60,
                                                 minExclusive=True))
                       .sort_by("price", asc=False).paging(1, 5)
                       .return_fields("price", "tags"))
        want = [k for k in sorted(docs, key=lambda k: -int(docs[k]["price"]))
                if docs[k]["tags"] == "red" and 30 < int(docs[k]["price"])
                <= 60]
        assert res.total == len(want) == 10, (i, res.total)
        assert [x.id for x in res.docs] == want[1:6], (i, res.docs)
        assert [(x.price, x.tags) for x in res.docs] == [
            (docs[k]["price"], "red") for k in want[1:6]]
        res = f.search(Query("apple").no_content().paging(0, 1000))
        assert res.total == 120 and len(res.docs) == 120
        # The Query objects of test_ft's generator, as python3-redis sends
        # them, against the model.
        q = ft.Q(("tag", "tags", "blue", False), "@tags:{blue}")
        q.filters.append(("price", "10", False, "+inf", True))
        q.ret = [("title", "title")]
        q.num = 100
        assert ft.answer(c, name, q) == model.expect(q)
        req = aggregation.AggregateRequest("@price:[0 59]").group_by(
            "@tags", reducers.count().alias("n"))
        rows = sorted(tuple(r) for r in f.aggregate(req).rows)
        assert rows == [("tags", t, "n", "20")
                        for t in ("blue", "green", "red")], rows
    assert env.ft(name, 1).dropindex() == "OK"
    env.wait_listed(name, present=False)
    assert env.writer.exists("gpy:000") == 1


def test_node_alone_global(server_factory):
    """A node alone accepts GLOBAL and keeps the index local: no lag, a
    query right after a write finds it, CONSISTENT is accepted, and one
    node is asked."""
    srv = server_factory()
    c = srv.client()
    args = create_args("solo", [ft.Field("t", "TAG"),
                                ft.Field("n", "NUMERIC"),
                                ft.Field("w", "TEXT")], ["s:"])
    assert c.execute_command(*args) == "OK"
    for i in range(200):
        c.hset("s:%d" % i, mapping={"t": "v%d" % i, "n": i, "w": "hello"})
        if i % 20 == 0:  # no lag: found by a plain query at once
            assert c.execute_command("FT.SEARCH", "solo", "@t:{v%d}" % i,
                                     "NOCONTENT") == [1, "s:%d" % i]
    d = info(c, "solo")
    assert (d["num_docs"], d["global_lag_records"], d["global_lag_ms"]) == \
        (200, 0, 0), d
    assert d["index_definition"][:4] == ["key_type", "HASH", "prefixes",
                                         ["s:"]], d
    c.hset("s:5", "t", "changed")
    for opts in ((), ("CONSISTENT",)):
        assert c.execute_command("FT.SEARCH", "solo", "@t:{v5}", "NOCONTENT",
                                 *opts) == [0]
        assert c.execute_command("FT.SEARCH", "solo", "@t:{changed}",
                                 "NOCONTENT", *opts) == [1, "s:5"]
        assert c.execute_command("FT.SEARCH", "solo", "@n:[10 19]", *opts,
                                 "NOCONTENT", "LIMIT", "0", "0") == [10]
    # One round, and no other node asked (a node alone counts 0 nodes in
    # search_query_nodes: it asks nobody but itself).
    for query in ("@t:{v7}", "*", "hello"):
        dq, dn, total = query_cost(c, "solo", query)
        assert dq == 1 and dn <= 1, (query, dq, dn)
    c.close()


def test_flushall_refused_with_global(genv):
    """FLUSHALL would leave a global index wrong on other nodes (copies of
    the flushed documents there, entries of documents elsewhere gone
    here): in a cluster it is refused while one exists, and nothing is
    deleted."""
    env = genv
    env.write({"gfl:%d" % i: {"t": "x"} for i in range(10)})
    assert create_global(env, "gfl", [ft.Field("t", "TAG")],
                         ["gfl:"]) == "OK"
    env.wait_indexed("gfl")
    for c in env.clients:
        for cmd in ("FLUSHALL", "FLUSHDB"):
            with pytest.raises(redis.ResponseError, match="GLOBAL"):
                c.execute_command(cmd)
    assert env.writer.hget("gfl:3", "t") == "x"
    res = env.clients[2].execute_command("FT.SEARCH", "gfl", "@t:{x}",
                                         "CONSISTENT", "LIMIT", "0", "0")
    assert res == [10]
    assert env.clients[0].execute_command("FT.DROPINDEX", "gfl") == "OK"
