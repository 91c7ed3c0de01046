"""Secondary indexes (FT.*) against real nodes, checked with python3-redis's
own ft() client: a node alone and a 3-node cluster with 3 copies.

The heart is a model: a brute-force evaluator written here from the rules
in core/pk_ftdef.h (what a TAG, TEXT or NUMERIC value is indexed as) and
core/pk_ftq.h (the query grammar), run over the hashes the test wrote.
Random queries -- tags and tag prefixes, numeric ranges with exclusive
and infinite bounds, words, prefixes, phrases, AND, OR, NOT, groups,
field-restricted words, PARAMS, FILTER, SORTBY, LIMIT, RETURN, NOCONTENT
-- go to every node, and each answer must equal the model's: the total,
the keys of the page in order (by key bytes without SORTBY; SORTBY is only
asked on a field whose values are unique), and the fields returned.

Then: keys and values at the edges of the encodings; documents written
before FT.CREATE (the background build, also beside keys longer than the
short key encoding); the index following HSET, HDEL, DEL, RENAME, COPY,
RESTORE, MULTI/EXEC, type changes and expiry; FT.ALTER (also while the
build runs); FT.DROPINDEX and a new index of the same name (also queried
at once); errors that must be answered and leave the nodes up; FLUSHALL;
and a node alone keeping its definitions and entries over a restart.

Tests that take an `env` run twice: on a node alone, and on the module's
cluster (shared, so each test uses its own index names and key
prefixes).  Every wait is bounded.
"""
import os
import random
import re
import socket
import threading
import time

import pytest
import redis
from redis.commands.search.field import NumericField, TagField, TextField
from redis.commands.search.indexDefinition import IndexDefinition
from redis.commands.search.query import NumericFilter, Query

import cluster as pkcluster

pytestmark = pytest.mark.partkv_only

WAIT_S = 20.0  # the longest any wait for the index may take

# ---------------------------------------------------------------------------
# The model: normalisation (pk_ftdef.h)
# ---------------------------------------------------------------------------

SPACE = b" \t\n\v\f\r"
TEXT_SEPS = set(SPACE + b",.<>{}[]\"':;!@#$%^&*()-+=~/\\|?")
STOP = set(b"a an and are as at be but by for if in into is it no not of on "
           b"or such that the their then there these they this to was will "
           b"with".split())
TERM_MAX = 120
NUM_RE = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")


def text_terms(value):
    """TEXT: lower-cased words at separators, stop words dropped."""
    out, cur = [], bytearray()
    for c in value.encode() + b" ":
        if c in TEXT_SEPS:
            if cur:
                w = bytes(cur).lower()[:TERM_MAX]
                if w not in STOP:
                    out.append(w)
                cur = bytearray()
        else:
            cur.append(c)
    return out


def tag_terms(value, sep, casesens):
    """TAG: split at sep, trimmed, empty ones skipped, lower-cased unless
    CASESENSITIVE."""
    out = []
    for t in value.encode().split(sep.encode()):
        t = t.strip(SPACE)
        if t:
            out.append((t if casesens else t.lower())[:TERM_MAX])
    return out


def number(value):
    """NUMERIC: a finite number (strtod on the whole string), else None.
    The test only writes decimal forms, where Python agrees with strtod."""
    if not NUM_RE.match(value):
        return None
    v = float(value)
    return None if v in (float("inf"), float("-inf")) else v


def bound(text):
    """A range bound as the query writes it: a number or an infinity."""
    t = text.lower()
    if t in ("inf", "+inf"):
        return float("inf")
    if t == "-inf":
        return float("-inf")
    return float(text)


class Field:
    def __init__(self, name, kind, attr=None, sep=",", cs=False,
                 noindex=False, sortable=False):
        self.name, self.kind, self.attr = name, kind, attr or name
        self.sep, self.cs, self.noindex = sep, cs, noindex
        self.sortable = sortable

    def redis_field(self):
        kw = {"as_name": self.attr} if self.attr != self.name else {}
        if self.kind == "TAG":
            return TagField(self.name, separator=self.sep,
                            case_sensitive=self.cs, sortable=self.sortable,
                            **kw)
        if self.kind == "NUMERIC":
            return NumericField(self.name, sortable=self.sortable, **kw)
        return TextField(self.name, sortable=self.sortable or self.noindex,
                         no_index=self.noindex, **kw)


SCHEMA = [
    Field("tags", "TAG"),
    Field("cat", "TAG", sep=";", cs=True),
    Field("price", "NUMERIC", sortable=True),
    Field("qty", "NUMERIC", attr="q"),
    Field("title", "TEXT"),
    Field("body", "TEXT"),
    Field("note", "TEXT", noindex=True),
]


class Model:
    """The hashes the test wrote (key -> {field: value}) and an index over
    them: schema (list of Field) and prefixes."""

    def __init__(self, schema, prefixes):
        self.schema = list(schema)
        self.prefixes = list(prefixes)
        self.docs = {}

    def attr(self, a):
        for f in self.schema:
            if f.attr == a:
                return f
        raise KeyError(a)

    def covered(self):
        return {k: v for k, v in self.docs.items()
                if any(k.startswith(p) for p in self.prefixes)}

    # -- evaluation: None is "empty" (stop words only), as in pk_ftq.c ----
    def eval(self, n, doc, field=None):
        k = n[0]
        if k in ("and", "or"):
            vals = [v for v in (self.eval(c, doc, field) for c in n[1])
                    if v is not None]
            if not vals:
                return None
            return all(vals) if k == "and" else any(vals)
        if k == "not":
            v = self.eval(n[1], doc, field)
            return None if v is None else not v
        if k == "group":
            return self.eval(n[1], doc, field)
        if k == "field":
            return self.eval(n[2], doc, n[1])
        if k == "all":
            return True
        if k == "tag":
            f = self.attr(n[1])
            qt = tag_terms(n[2], f.sep, f.cs)
            assert qt, "the generator wrote an empty tag"
            if len(qt) > 1:
                return False  # holds the separator: no document has it
            if f.name not in doc:
                return False
            return any(t == qt[0] or (n[3] and t.startswith(qt[0]))
                       for t in tag_terms(doc[f.name], f.sep, f.cs))
        if k == "range":
            f = self.attr(n[1])
            v = number(doc[f.name]) if f.name in doc else None
            if v is None:
                return False
            lo, hi = bound(n[2]), bound(n[4])
            return ((v > lo if n[3] else v >= lo) and
                    (v < hi if n[5] else v <= hi))
        if k == "text":
            qterms = query_terms(n[1])
            if not qterms:
                return None
            fields = ([self.attr(field)] if field is not None else
                      [f for f in self.schema
                       if f.kind == "TEXT" and not f.noindex])
            return any(f.name in doc and
                       phrase_in(text_terms(doc[f.name]), qterms)
                       for f in fields)
        raise AssertionError(n)

    def matches(self, q, doc):
        top = self.eval(q.tree, doc)
        if not top:
            return False
        for attr, lo, lox, hi, hix in q.filters:
            if not self.eval(("range", attr, lo, lox, hi, hix), doc):
                return False
        return True

    def expect(self, q):
        """(total, [(key, fields)] of the page) for query q."""
        docs = self.covered()
        keys = [k for k, d in docs.items() if self.matches(q, d)]
        keys.sort(key=lambda k: k.encode())
        if q.sortby:
            f = self.attr(q.sortby[0])
            have = [k for k in keys if f.name in docs[k]
                    and docs[k][f.name] is not None]
            miss = [k for k in keys if k not in set(have)]
            have.sort(key=lambda k: number(docs[k][f.name]),
                      reverse=not q.sortby[1])
            keys = have + miss  # a missing value sorts last
        page = keys[q.offset:q.offset + q.num]
        out = []
        for k in page:
            d = docs[k]
            if q.nocontent:
                fields = {}
            elif q.ret is None:
                fields = dict(d)
            else:
                fields = {}
                for name, as_ in q.ret:
                    try:
                        hn = self.attr(name).name
                    except KeyError:
                        hn = name
                    if hn in d:
                        fields[as_] = d[hn]
            out.append((k, fields))
        return len(keys), out


def query_terms(words):
    """The terms of a word or phrase: [(term, prefix)], as word_terms in
    pk_ftq.c makes them (a prefix that is a stop word is kept)."""
    out = []
    for raw, prefix in words:
        ts = [(t, False) for t in text_terms(raw)]
        if prefix:
            low = raw.encode().lower()
            if low in STOP and 0 < len(low) <= 16:
                ts.append((low, True))
            elif ts:
                ts[-1] = (ts[-1][0], True)
        out += ts
    return out


def phrase_in(seq, qterms):
    n = len(qterms)
    for i in range(len(seq) - n + 1):
        if all(seq[i + j] == t or (p and seq[i + j].startswith(t))
               for j, (t, p) in enumerate(qterms)):
            return True
    return False


# ---------------------------------------------------------------------------
# Random data and queries
# ---------------------------------------------------------------------------

WORDS = ["apple", "apricot", "banana", "band", "bandana", "cherry",
         "theory", "then", "the", "there", "quick", "brown", "fox", "jumps",
         "over", "lazy", "dog", "data", "database", "date", "delta", "echo",
         "zebra", "zen", "in", "of", "and", "a", "is", "x1", "Q9"]
JOINERS = [" ", " ", " ", ", ", "-", ".", "/", "! ", " (", ") ", "'", ":"]
TAGS = ["red", "Red", "RED", "blue", "bluish", "black", "green",
        "dark red", "Dark Red", "light blue", "yellow", "gray", "grey"]
CATS = ["Alpha", "alpha", "ALPHA", "Beta", "beta", "gamma", "Gamma Ray",
        "delta", "Delta"]
QTYS = ["0", "-0", "1", "2", "3", "5", "8", "13", "2.5", "-4", "1e3",
        "1e999", "abc", "", " 5", "5 ", "7", "100", "0.001", "-1e-3"]
KEYCH = "AaBbZz09_-:"


def rand_case(rng, w):
    r = rng.random()
    if r < 0.6:
        return w
    if r < 0.8:
        return w.upper()
    return "".join(c.upper() if rng.random() < 0.5 else c for c in w)


def rand_text(rng, lo, hi):
    words = [rand_case(rng, rng.choice(WORDS))
             for _ in range(rng.randint(lo, hi))]
    out = words[0]
    for w in words[1:]:
        out += rng.choice(JOINERS) + w
    return out


def rand_tags(rng, vocab, sep):
    picks = rng.sample(vocab, rng.randint(1, 3))
    parts = [(" " * rng.randint(0, 2)) + t + (" " * rng.randint(0, 2))
             for t in picks]
    if rng.random() < 0.1:
        parts.append("")  # an empty tag: skipped
    return sep.join(parts)


def make_docs(rng, n, prefix, prices):
    """n documents under prefix: {key: fields}.  prices: an iterator of
    unique price strings (SORTBY price gives a total order)."""
    docs = {}
    while len(docs) < n:
        tok = "".join(rng.choice(KEYCH) for _ in range(rng.randint(1, 5)))
        key = "%s%s%d" % (prefix, tok, len(docs))
        d = {"price": next(prices)}
        if rng.random() < 0.9:
            d["tags"] = rand_tags(rng, TAGS, ",")
        if rng.random() < 0.8:
            d["cat"] = rand_tags(rng, CATS, ";")
        if rng.random() < 0.85:
            d["qty"] = rng.choice(QTYS)
        if rng.random() < 0.9:
            d["title"] = rand_text(rng, 1, 5)
        if rng.random() < 0.8:
            d["body"] = rand_text(rng, 2, 9)
        if rng.random() < 0.5:
            d["note"] = rand_text(rng, 1, 3)
        if rng.random() < 0.2:
            d["extra"] = rand_text(rng, 1, 2)  # not in the schema
        docs[key] = d
    return docs



def written(env, rng, prefix, n):
    """n documents under prefix, written, and a model holding them."""
    model = Model(SCHEMA, [prefix])
    docs = make_docs(rng, n, prefix, unique_prices(rng))
    env.write(docs)
    model.docs.update(docs)
    return model, docs

def unique_prices(rng):
    seen = set()
    while True:
        cents = rng.randint(-500000, 500000)
        if cents in seen or cents == 0:
            continue
        seen.add(cents)
        yield "%.2f" % (cents / 100.0)


class Q:
    """A query: the tree (model), its text, and FT.SEARCH options."""

    def __init__(self, tree, text, params=None):
        self.tree, self.text, self.params = tree, text, params or {}
        self.sortby = None          # (attr, asc)
        self.offset, self.num = 0, 10
        self.nocontent = False
        self.ret = None             # [(name, as)]
        self.filters = []           # [(attr, lo, lox, hi, hix)]
        self.withscores = False

    def query(self):
        """The python3-redis Query object for this query."""
        q = Query(self.text)
        if self.sortby:
            q.sort_by(self.sortby[0], asc=self.sortby[1])
        q.paging(self.offset, self.num)
        if self.nocontent:
            q.no_content()
        if self.ret is not None:
            for name, as_ in self.ret:
                q.return_field(name, as_field=None if as_ == name else as_)
        for attr, lo, lox, hi, hix in self.filters:
            q.add_filter(NumericFilter(attr, lo, hi, minExclusive=lox,
                                       maxExclusive=hix))
        if self.withscores:
            q.with_scores()
        return q

    def __repr__(self):
        return ("FT.SEARCH %r params=%r sortby=%r limit=%d,%d nocontent=%r "
                "return=%r filters=%r withscores=%r"
                % (self.text, self.params, self.sortby, self.offset,
                   self.num, self.nocontent, self.ret, self.filters,
                   self.withscores))


class Gen:
    """Random query trees over the model's schema and documents."""

    def __init__(self, rng, model):
        self.rng, self.m = rng, model
        self.nparam = 0
        self.params = {}
        nums = {}
        for f in model.schema:
            if f.kind == "NUMERIC":
                vals = [d[f.name] for d in model.docs.values()
                        if f.name in d and number(d[f.name]) is not None]
                nums[f.attr] = vals or ["0"]
        self.nums = nums

    def fields(self, kind):
        return [f for f in self.m.schema if f.kind == kind]

    def param(self, value):
        name = "p%d" % self.nparam
        self.nparam += 1
        self.params[name] = value
        return "$" + name

    # -- leaves -----------------------------------------------------------
    def tag(self):
        rng = self.rng
        f = rng.choice(self.fields("TAG"))
        vocab = TAGS if f.sep == "," else CATS
        tags = []
        for _ in range(rng.randint(1, 3)):
            t = rand_case(rng, rng.choice(vocab)) if not f.cs else \
                rng.choice(vocab)
            prefix = False
            if rng.random() < 0.2:
                t = t[:rng.randint(1, max(1, len(t) - 1))].rstrip() or t
                prefix = True
            elif rng.random() < 0.05:
                t = t + f.sep + rng.choice(vocab)  # holds the separator
            tags.append((t, prefix))
        parts = []
        for t, prefix in tags:
            if not prefix and rng.random() < 0.1:
                parts.append(self.param(t))
                continue
            s = t.replace("\\", "\\\\").replace("|", "\\|").replace(
                "}", "\\}")
            if rng.random() < 0.3:
                s = s.replace(" ", "\\ ")
            parts.append((" " if rng.random() < 0.3 else "") + s +
                         ("*" if prefix else ""))
        text = "@%s:{%s}" % (f.attr, "|".join(parts))
        if len(tags) == 1:
            return ("tag", f.attr, tags[0][0], tags[0][1]), text
        return (("or", [("tag", f.attr, t, p) for t, p in tags]), text)

    def num_bound(self, f, lower):
        rng = self.rng
        r = rng.random()
        if r < 0.12:
            return "-inf" if lower else rng.choice(["+inf", "inf"])
        if r < 0.16:
            return "+inf" if lower else "-inf"  # an empty range
        if r < 0.7:
            return rng.choice(self.nums[f.attr])
        return "%g" % rng.uniform(-6000, 6000)

    def range_(self):
        rng = self.rng
        f = rng.choice(self.fields("NUMERIC"))
        lo, hi = self.num_bound(f, True), self.num_bound(f, False)
        if rng.random() < 0.6 and bound(lo) > bound(hi):
            lo, hi = hi, lo
        lox, hix = rng.random() < 0.4, rng.random() < 0.4
        if rng.random() < 0.1:  # [x]: [x x]
            tree = ("range", f.attr, lo, lox, lo, lox)
            return tree, "@%s:[%s%s]" % (f.attr, "(" * lox, lo)
        los, his = ("(" * lox) + lo, ("(" * hix) + hi
        if rng.random() < 0.1:
            los = self.param(los)
        if rng.random() < 0.1:
            his = self.param(his)
        sep = ", " if rng.random() < 0.1 else " "
        return (("range", f.attr, lo, lox, hi, hix),
                "@%s:[%s%s%s]" % (f.attr, los, sep, his))

    def word(self, prefix_ok=True):
        rng = self.rng
        w = rng.choice(WORDS)
        prefix = False
        if prefix_ok and rng.random() < 0.3:
            w = w[:rng.randint(min(2, len(w)), len(w))]
            prefix = True
        w = rand_case(rng, w)
        if not prefix and rng.random() < 0.05:
            return ("text", [(w, False)]), self.param(w)
        return ("text", [(w, prefix)]), w + ("*" if prefix else "")

    def phrase(self):
        rng = self.rng
        docs = list(self.m.docs.values())
        raw = []
        if docs and rng.random() < 0.7:
            d = rng.choice(docs)
            src = d.get(rng.choice(["title", "body"]), "")
            ws = [w for w in re.split(r"[^A-Za-z0-9]+", src) if w]
            if len(ws) >= 2:
                i = rng.randrange(len(ws) - 1)
                raw = ws[i:i + rng.randint(2, 3)]
        if not raw:
            raw = [rng.choice(WORDS) for _ in range(rng.randint(2, 3))]
        words = [(rand_case(rng, w), False) for w in raw]
        if rng.random() < 0.15:
            w = words[-1][0]
            words[-1] = (w[:max(2, len(w) - 2)], True)
        text = '"%s"' % " ".join(w + ("*" if p else "") for w, p in words)
        return ("text", words), text

    def text_tree(self, depth):
        rng = self.rng
        r = rng.random()
        if depth >= 2 or r < 0.55:
            return self.phrase() if rng.random() < 0.15 else self.word()
        if r < 0.75:
            kids = [self.text_tree(depth + 1) for _ in range(2)]
            return (("and", [k[0] for k in kids]),
                    " ".join(wrap_or(k) for k in kids))
        if r < 0.92:
            kids = [self.text_tree(depth + 1) for _ in range(2)]
            return (("or", [k[0] for k in kids]),
                    " | ".join(k[1] for k in kids))
        t, s = self.text_tree(depth + 1)
        return ("not", t), "-" + wrap_any(t, s)

    def field_text(self):
        f = self.rng.choice(self.fields("TEXT"))
        t, s = self.text_tree(1)
        return ("field", f.attr, t), "@%s:%s" % (f.attr, wrap_any(t, s))

    def leaf(self):
        r = self.rng.random()
        if r < 0.25:
            return self.tag()
        if r < 0.5:
            return self.range_()
        if r < 0.72:
            return self.word()
        if r < 0.82:
            return self.phrase()
        if r < 0.97:
            return self.field_text()
        return ("all",), "*"

    def tree(self, depth=0):
        rng = self.rng
        r = rng.random()
        if depth >= 3 or r < 0.4:
            return self.leaf()
        if r < 0.62:
            kids = [self.tree(depth + 1) for _ in range(rng.randint(2, 3))]
            return (("and", [k[0] for k in kids]),
                    " ".join(wrap_or(k) for k in kids))
        if r < 0.82:
            kids = [self.tree(depth + 1) for _ in range(rng.randint(2, 3))]
            return (("or", [k[0] for k in kids]),
                    " | ".join(k[1] for k in kids))
        if r < 0.93:
            t, s = self.tree(depth + 1)
            return ("not", t), "-" + wrap_any(t, s)
        t, s = self.tree(depth + 1)
        return ("group", t), "(%s)" % s

    def query(self, options=True):
        self.nparam, self.params = 0, {}
        t, s = self.tree()
        q = Q(t, s, dict(self.params))
        if not options:
            q.num = 1000
            return q
        rng = self.rng
        if rng.random() < 0.4:
            q.sortby = ("price", rng.random() < 0.5)
        if rng.random() < 0.6:
            q.offset = rng.choice([0, 0, 1, 3, 10, 25])
            q.num = rng.choice([0, 1, 5, 10, 40, 1000])
        r = rng.random()
        if r < 0.15:
            q.nocontent = True
        elif r < 0.35:
            q.ret = rng.sample([("title", "title"), ("price", "price"),
                                ("q", "q"), ("qty", "qty"),
                                ("tags", "T"), ("body", "b"),
                                ("missing", "missing")],
                               rng.randint(1, 3))
        if rng.random() < 0.2:
            f = rng.choice(self.fields("NUMERIC"))
            lo, hi = self.num_bound(f, True), self.num_bound(f, False)
            if bound(lo) > bound(hi):
                lo, hi = hi, lo
            q.filters.append((f.attr, lo, rng.random() < 0.3, hi,
                              rng.random() < 0.3))
        q.withscores = rng.random() < 0.1
        return q


def wrap_or(k):
    """An AND's operand: an OR needs parentheses (OR binds looser)."""
    t, s = k
    return "(%s)" % s if t[0] == "or" else s


def wrap_any(t, s):
    """The operand of '-' or '@f:': one atom."""
    return "(%s)" % s if t[0] in ("and", "or") else s


# ---------------------------------------------------------------------------
# Nodes: a node alone, or the module's 3-node cluster (3 copies)
# ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def ftcluster():
    yield from pkcluster.serving(pkcluster.Cluster(nodes=3, replicas=3))


class Env:
    """Where a test runs: clients to every node (queries go to each), a
    writer (RedisCluster in a cluster), and bounded waits."""

    def __init__(self, kind, clients, writer, server=None, cluster=None):
        self.kind, self.clients, self.writer = kind, clients, writer
        self.server, self.cluster = server, cluster

    def ft(self, name, node=0):
        return self.clients[node].ft(name)

    def write(self, docs):
        p = self.writer.pipeline(transaction=False) if self.kind == \
            "single" else self.writer.pipeline()
        for i, (k, d) in enumerate(docs.items()):
            p.hset(k, mapping=d)
            if i % 500 == 499:
                p.execute()
        p.execute()

    def listed(self, name):
        return [name in c.execute_command("FT._LIST") for c in self.clients]

    def wait_listed(self, name, present=True):
        t0 = time.monotonic()
        while time.monotonic() - t0 < WAIT_S:
            got = self.listed(name)
            if all(g == present for g in got):
                return
            time.sleep(0.05)
        raise AssertionError("FT._LIST: %r %s on every node after %.0fs: %r"
                             % (name, "present" if present else "absent",
                                WAIT_S, got))

    def wait_indexed(self, name, attrs=None):
        """Until every node knows the index (with attrs, when given), then
        until every node says percent_indexed 1; returns each node's
        FT.INFO.  (A node's FT.INFO shows its own definition, and the
        share built counts each node's own: so first every definition.)"""
        self.wait_listed(name)
        t0 = time.monotonic()
        for i in range(len(self.clients)):
            while attrs is not None:
                info = self.ft(name, i).info()
                have = [a[3] for a in info["attributes"]]
                if have == attrs:
                    break
                assert time.monotonic() - t0 < WAIT_S, (
                    "node %d: attributes %r, want %r" % (i, have, attrs))
                time.sleep(0.05)
        infos = []
        for i in range(len(self.clients)):
            while True:
                info = self.ft(name, i).info()
                pct = float(info["percent_indexed"])
                assert 0.0 <= pct <= 1.0, info
                if pct == 1.0:
                    break
                assert time.monotonic() - t0 < WAIT_S, (
                    "node %d: not indexed after %.0fs: %r"
                    % (i, WAIT_S, info))
                time.sleep(0.05)
            infos.append(info)
        return infos

    def num_docs(self, name):
        return [int(self.ft(name, i).info()["num_docs"])
                for i in range(len(self.clients))]

    def alive(self):
        for c in self.clients:
            assert c.ping() is True
        if self.server is not None:
            assert self.server.alive()
        if self.cluster is not None:
            for n in self.cluster.nodes:
                assert self.cluster.node_alive(n.pid), n


@pytest.fixture(params=["single", "cluster"])
def env(request, server_factory):
    if request.param == "single":
        srv = server_factory()
        c = srv.client(socket_timeout=60)
        e = Env("single", [c], c, server=srv)
        yield e
        c.close()
        return
    cl = request.getfixturevalue("ftcluster")
    clients = [n.client(socket_timeout=60) for n in cl.nodes]
    rc = cl.rc(socket_timeout=60)
    yield Env("cluster", clients, rc, cluster=cl)
    for c in clients:
        c.close()
    rc.close()
    dead = [n for n in cl.nodes if not cl.node_alive(n.pid)]
    assert not dead, "nodes died during the test: %r\n%s" % (dead,
                                                             cl.logs())


def create(env, name, schema, prefixes, node=0):
    """FT.CREATE through python3-redis on one node."""
    return env.ft(name, node).create_index(
        [f.redis_field() for f in schema],
        definition=IndexDefinition(prefix=prefixes))


# ---------------------------------------------------------------------------
# Comparing an answer with the model
# ---------------------------------------------------------------------------

def answer(client, name, q):
    """(total, [(key, fields)]) as python3-redis parses FT.SEARCH."""
    res = client.ft(name).search(q.query(), query_params=q.params or None)
    out = []
    for d in res.docs:
        fields = {k: v for k, v in vars(d).items()
                  if k not in ("id", "payload", "score")}
        out.append((d.id, fields))
    return res.total, out


def check(env, name, model, queries, nodes=None, limit=5):
    """Runs every query on every node; returns the mismatches (at most
    limit described)."""
    bad, n = [], 0
    for q in queries:
        want = model.expect(q)
        for i in (nodes if nodes is not None else range(len(env.clients))):
            n += 1
            try:
                got = answer(env.clients[i], name, q)
            except redis.ResponseError as e:
                got = "error: %s" % e
            if got != want:
                bad.append((i, q, want, got))
    msgs = []
    for i, q, want, got in bad[:limit]:
        msgs.append("node %d: %s\n  want %s\n  got  %s"
                    % (i, short(q), short(want), short(got)))
    return bad, n, "\n".join(msgs)


def short(x, cap=48):
    """repr(x) with long strings cut, for failure messages."""
    def cut(m):
        s = m.group(0)
        return s if len(s) <= cap else "%s...(%d chars)'" % (s[:cap // 2],
                                                               len(s))
    return re.sub(r"'(?:[^'\\]|\\.)*'", cut, repr(x))


def assert_same(env, name, model, queries, nodes=None):
    bad, n, msg = check(env, name, model, queries, nodes)
    assert not bad, "%d of %d answers differ from the model:\n%s" % (
        len(bad), n, msg)


def fixed_queries(gen):
    """Plain queries that touch every kind of lookup, no options."""
    q = Q(("all",), "*")
    q.num = 1000
    qs = [q]
    for t in ["red", "blue", "dark red", "bl", "new", "green"]:
        for prefix in (False, True):
            q = Q(("tag", "tags", t, prefix),
                  "@tags:{%s%s}" % (t.replace(" ", "\\ "), "*" * prefix))
            q.num = 1000
            qs.append(q)
    for lo, hi in [("-inf", "+inf"), ("0", "10"), ("-1000", "0")]:
        q = Q(("range", "price", lo, False, hi, False),
              "@price:[%s %s]" % (lo, hi))
        q.num = 1000
        qs.append(q)
    for w in ["apple", "dat", "zebra", "ban"]:
        prefix = len(w) == 3
        q = Q(("text", [(w, prefix)]), w + "*" * prefix)
        q.num = 1000
        qs.append(q)
    for _ in range(10):
        qs.append(gen.query(options=False))
    return qs


# ---------------------------------------------------------------------------
# 1. random queries against the model, from every node
# ---------------------------------------------------------------------------

def test_random_queries_match_model(env):
    seed = int(os.environ.get("FT_SEED", random.randrange(1 << 30)))
    rng = random.Random(seed)
    name, prefix = "rnd", "doc:"
    prices = unique_prices(rng)
    model = Model(SCHEMA, [prefix])
    first = make_docs(rng, 150, prefix, prices)
    env.write(first)  # before the index: built in the background
    model.docs.update(first)
    # Not covered: other prefixes, a string under the prefix, a hash with
    # none of the schema's fields (a document all the same).
    other = {"other:%d" % i: {"tags": "red", "title": "apple", "price": "1"}
             for i in range(10)}
    env.write(other)
    model.docs.update(other)
    for i in range(5):
        env.writer.set("doc:str%d" % i, "apple red")
    empty = {"doc:zz-none": {"unrelated": "apple"}}
    env.write(empty)
    model.docs.update(empty)

    assert create(env, name, SCHEMA, [prefix], node=len(env.clients) - 1) \
        == "OK"
    second = make_docs(rng, 150, prefix + "n", prices)
    env.write(second)  # right after FT.CREATE, before every node knows it
    model.docs.update(second)
    env.wait_indexed(name)
    assert env.num_docs(name) == [len(model.covered())] * len(env.clients)

    gen = Gen(rng, model)
    queries = fixed_queries(gen)
    queries += [gen.query() for _ in range(300 if env.kind == "single"
                                           else 200)]
    bad, n, msg = check(env, name, model, queries)
    assert not bad, ("FT_SEED=%d: %d of %d answers differ from the model:\n%s"
                     % (seed, len(bad), n, msg))
    # Not vacuous: a fair share of queries found something.
    hits = sum(1 for q in queries if model.expect(q)[0] > 0)
    assert hits > len(queries) // 5, (hits, len(queries))
    env.alive()


def test_params_inkeys_withscores(env):
    rng = random.Random(7)
    name, prefix = "prm", "prm:"
    model, docs = written(env, rng, prefix, 60)
    create(env, name, SCHEMA, [prefix])
    env.wait_indexed(name)
    keys = sorted(docs, key=lambda k: k.encode())
    for i in range(len(env.clients)):
        ft = env.ft(name, i)
        # PARAMS for a tag, both bounds and a word.
        res = ft.search(Query("@tags:{$t} @price:[$lo $hi] | $w")
                        .paging(0, 1000).no_content(),
                        query_params={"t": "Dark Red", "lo": "(-1000",
                                      "hi": "2000", "w": "ZEBRA"})
        q = Q(("or", [("and", [("tag", "tags", "Dark Red", False),
                               ("range", "price", "-1000", True, "2000",
                                False)]),
                      ("text", [("zebra", False)])]), "", {})
        q.num, q.nocontent = 1000, True
        want = model.expect(q)
        assert (res.total, [d.id for d in res.docs]) == \
            (want[0], [k for k, _ in want[1]])
        # INKEYS narrows to the keys named.
        pick = keys[::3]
        res = ft.search(Query("*").limit_ids(*pick).paging(0, 1000)
                        .no_content())
        assert res.total == len(pick)
        assert [d.id for d in res.docs] == pick
        # WITHSCORES: every document gets a score, the page is the same.
        res = ft.search(Query("*").with_scores().paging(2, 5))
        assert [d.id for d in res.docs] == keys[2:7]
        assert all(d.score is not None for d in res.docs)
        assert [vars(d)["price"] for d in res.docs] == \
            [docs[k]["price"] for k in keys[2:7]]
        # SORTBY DESC with paging walks the whole order without repeats.
        order = sorted(keys, key=lambda k: -float(docs[k]["price"]))
        seen = []
        for off in range(0, len(keys), 7):
            res = ft.search(Query("*").sort_by("price", asc=False)
                            .paging(off, 7).no_content())
            assert res.total == len(keys)
            seen += [d.id for d in res.docs]
        assert seen == order


def test_odd_keys_and_values(env):
    """Keys and values at the edges of the encodings: a key that is the
    prefix itself, bytes 00 and 01 (escaped in entries), long keys (the
    long form), UTF-8, terms and tags past PK_FT_TERM_MAX (cut: a query
    term is cut the same way), -0 and +0 (one score), denormals and the
    largest doubles."""
    name, prefix = "odd", "odd:"
    model = Model(SCHEMA, [prefix])
    w150 = "w" * 150
    docs = {
        "odd:": {"tags": "ab"},
        "odd:\x00": {"tags": "ab\x00c", "title": "ab\x00cd"},
        "odd:\x00\x01": {"tags": "AB\x01", "title": "ab\x01 x"},
        "odd:\x01": {"tags": "ab\u00ff", "title": "ab\u00ffz"},
        "odd:" + "k" * 300: {"title": w150 + "1"},
        "odd:" + "k" * 300 + "a": {"title": w150 + "2 apple"},
        "odd:" + "K" * 5000: {"tags": "T" * 130, "title": "apple"},
        "odd:\u00e9": {"title": "Caf\u00e9 \u00dcBER"},
        "odd:a b": {"qty": "-0"},
        "odd:{x}y": {"qty": "0"},
        "odd:d1": {"qty": "5e-324"},
        "odd:d2": {"qty": "-5e-324"},
        "odd:big": {"qty": "1e308"},
        "odd:nbig": {"qty": "-1e308"},
        "odd:ws": {"qty": "\t5"},
        "odd:plus": {"qty": "+3"},
        "odd:dot": {"qty": ".5", "price": "5."},
    }
    create(env, name, SCHEMA, [prefix])
    env.wait_indexed(name)
    try:
        env.write(docs)  # indexed by the writes themselves
        model.docs.update(docs)

        def q(tree, text):
            x = Q(tree, text)
            x.num = 1000
            return x

        def tag(t, p=False):
            return q(("tag", "tags", t, p), "@tags:{%s%s}" % (t, "*" * p))

        def word(t, p=False):
            return q(("text", [(t, p)]), t + "*" * p)

        def rng_(lo, hi, lox=False, hix=False):
            return q(("range", "q", lo, lox, hi, hix), "@q:[%s%s %s%s]" % (
                "(" * lox, lo, "(" * hix, hi))

        queries = [
            q(("all",), "*"),
            tag("ab", True), tag("ab"), tag("ab\x00c"), tag("Ab\x01"),
            tag("ab\u00ff"), tag("ab\x00", True), tag("t" * 130),
            tag("t" * 125, True), tag("t" * 121),
            word("ab", True), word("ab\x00cd"), word("AB\x01"),
            word("ab\u00ffz"), word("caf\u00e9"), word("CAF\u00c9"),
            word("\u00dcber"), word(w150 + "1"), word(w150 + "3"),
            word("w" * 119, True), word("w" * 130, True),
            q(("and", [("text", [(w150 + "9", False)]),
                       ("text", [("apple", False)])]), w150 + "9 apple"),
            rng_("0", "0"), rng_("-0", "-0"), rng_("0", "+inf", lox=True),
            rng_("-inf", "0", hix=True), rng_("-1e-300", "1e-300", True, True),
            rng_("1e308", "+inf"), rng_("-inf", "-1e308"), rng_("3", "3"),
            rng_("0.5", "0.5"), rng_("-inf", "+inf"), rng_("5", "5"),
        ]
        for x in queries:
            assert model.expect(x)[0] > 0 or x.text in (
                "@q:[5 5]", "CAF\u00c9", "w" * 130 + "*"), x
        assert_same(env, name, model, queries)
    finally:  # the cluster is shared: long keys upset later builds
        for k in docs:
            if len(k) > 200:
                env.writer.delete(k)


def test_long_number_value(env):
    """A NUMERIC value longer than 63 bytes is still a finite number to
    strtod (pk_ftdef.h: "strtod on the whole string")."""
    name = "lnum"
    model = Model([Field("qty", "NUMERIC", attr="q")], ["lnum:"])
    create(env, name, model.schema, ["lnum:"])
    env.wait_indexed(name)
    docs = {"lnum:short": {"qty": "42"},
            "lnum:long": {"qty": "0" * 66 + "42"},
            "lnum:frac": {"qty": "42." + "0" * 70}}
    env.write(docs)
    model.docs.update(docs)
    queries = []
    for lo, hi in [("42", "42"), ("40", "+inf")]:
        q = Q(("range", "q", lo, False, hi, False), "@q:[%s %s]" % (lo, hi))
        q.num = 100
        queries.append(q)
    bad, n, msg = check(env, name, model, queries)
    assert not bad, "values of 68 and 73 bytes are not indexed as 42:\n" \
        + msg


# ---------------------------------------------------------------------------
# 2. documents that were there before FT.CREATE
# ---------------------------------------------------------------------------

def test_background_build(env):
    rng = random.Random(11)
    name, prefix = "bg", "bg:"
    model, docs = written(env, rng, prefix, 3000)
    t0 = time.monotonic()
    create(env, name, SCHEMA, [prefix])
    env.wait_listed(name)
    for i in range(len(env.clients)):
        while True:
            info = env.ft(name, i).info()
            pct = float(info["percent_indexed"])
            assert 0.0 <= pct <= 1.0, info
            assert int(info["indexing"]) == (pct < 1.0), info
            if pct == 1.0:
                break
            assert time.monotonic() - t0 < WAIT_S, info
            time.sleep(0.02)
    assert env.num_docs(name) == [len(docs)] * len(env.clients)
    gen = Gen(rng, model)
    assert_same(env, name, model, fixed_queries(gen) +
                [gen.query() for _ in range(30)])


def test_background_build_with_long_keys(env):
    """The build walks every key of a partition: a key longer than the
    short encoding (240 bytes), of any type and under no index's prefix,
    must not keep the documents beside it out of the index."""
    name, prefix = "bgl", "bgl:"
    docs = {"bgl:%03d" % i: {"tags": "x", "title": "apple"}
            for i in range(100)}
    docs["bgl:" + "L" * 300] = {"tags": "x", "title": "long"}
    env.write(docs)
    longs = ["{bgl:%03d}" % i + "z" * 300 for i in range(len(env.clients))]
    for k in longs:  # long string keys, in a few partitions
        env.writer.set(k, "v")
    try:
        create(env, name, [Field("tags", "TAG"), Field("title", "TEXT")],
               [prefix])
        env.wait_indexed(name)
        want = sorted(docs, key=lambda k: k.encode())
        for i, c in enumerate(env.clients):
            res = c.ft(name).search(Query("@tags:{x}").paging(0, 1000)
                                    .no_content())
            got = [d.id for d in res.docs]
            missing = [k for k in want if k not in got]
            assert (res.total, got) == (len(want), want), (
                "node %d: built index misses %d of %d documents: %s"
                % (i, len(missing), len(want), short(missing[:5])))
    finally:  # the cluster is shared: later builds must not meet them
        for k in longs:
            env.writer.delete(k)
        env.writer.delete("bgl:" + "L" * 300)
        del docs["bgl:" + "L" * 300]
    assert env.num_docs(name) == [len(docs)] * len(env.clients)


# ---------------------------------------------------------------------------
# 3. the index follows writes, deletes and expiry
# ---------------------------------------------------------------------------

UPD_SCHEMA = [Field("tags", "TAG"), Field("price", "NUMERIC", sortable=True),
              Field("title", "TEXT")]


def test_updates_deletes_expiry(env):
    rng = random.Random(5)
    name, prefix = "upd", "u:"
    model = Model(UPD_SCHEMA, [prefix])
    docs = {}
    for i in range(40):
        docs["u:{%02d}x" % i] = {
            "tags": rng.choice(["red", "blue", "green"]),
            "price": "%d" % (i * 10 + 1), "title": rand_text(rng, 1, 3)}
    env.write(docs)
    model.docs.update(docs)
    create(env, name, UPD_SCHEMA, [prefix])
    infos = env.wait_indexed(name)
    records0 = int(infos[0]["num_records"])
    gen = Gen(rng, model)
    queries = fixed_queries(gen)
    w = env.writer

    def same(step):
        bad, n, msg = check(env, name, model, queries)
        assert not bad, "after %s: %d of %d differ:\n%s" % (
            step, len(bad), n, msg)
        assert env.num_docs(name) == \
            [len(model.covered())] * len(env.clients), step

    same("the build")
    # HSET changes a tag: the new one finds it, the old one does not.
    k = "u:{00}x"
    old = docs[k]["tags"]
    w.hset(k, "tags", "new")
    model.docs[k]["tags"] = "new"
    same("HSET tags")
    for c in env.clients:
        ids = [d.id for d in c.ft(name).search(
            Query("@tags:{new}").no_content()).docs]
        assert ids == [k]
    # ... and back: no entry of the detour is left behind.
    w.hset(k, "tags", old)
    model.docs[k]["tags"] = old
    same("HSET tags back")
    assert int(env.ft(name).info()["num_records"]) == records0
    # HDEL of an indexed field: still a document, no longer in the range.
    k = "u:{01}x"
    if env.kind == "cluster":  # plain Redis to the leader of the key
        node = env.cluster.node_for_slot(pkcluster.keyslot(k))
        assert node.client().hdel(k, "price") == 1
    else:
        assert w.hdel(k, "price") == 1
    del model.docs[k]["price"]
    same("HDEL price")
    # HDEL of every field removes the key.
    k = "u:{02}x"
    w.hdel(k, *list(docs[k]))
    del model.docs[k]
    same("HDEL all fields")
    # DEL and UNLINK.
    w.delete("u:{03}x")
    w.unlink("u:{04}x")
    del model.docs["u:{03}x"], model.docs["u:{04}x"]
    same("DEL, UNLINK")
    # HINCRBY, HINCRBYFLOAT, HSETNX on a new key.
    w.hincrby("u:{05}x", "price", 1000)
    model.docs["u:{05}x"]["price"] = str(int(docs["u:{05}x"]["price"]) + 1000)
    w.hincrbyfloat("u:{06}x", "price", 0.5)
    model.docs["u:{06}x"]["price"] = "61.5"
    w.hsetnx("u:{05}new", "tags", "new")
    model.docs["u:{05}new"] = {"tags": "new"}
    same("HINCRBY, HINCRBYFLOAT, HSETNX")
    # RENAME within the prefix, and out of it.
    w.rename("u:{07}x", "u:{07}xr")
    model.docs["u:{07}xr"] = model.docs.pop("u:{07}x")
    w.rename("u:{08}x", "x:{08}x")
    model.docs["x:{08}x"] = model.docs.pop("u:{08}x")
    same("RENAME")
    # A hash replaced by a string is no document.
    w.delete("u:{09}x")
    w.set("u:{09}x", "red apple")
    del model.docs["u:{09}x"]
    same("SET over a hash")
    # MULTI/EXEC: each queued write re-indexes its key.
    tx = ["u:{13}x", "u:{13}y"]
    c = env.clients[0] if env.kind == "single" else \
        env.cluster.node_for_slot(pkcluster.keyslot(tx[0])).client()
    p = c.pipeline(transaction=True)
    p.hset(tx[0], "tags", "multi")
    p.hset(tx[1], mapping={"tags": "multi", "price": "7"})
    p.hdel(tx[0], "title")
    assert p.execute() == [0, 2, 1]
    model.docs[tx[0]]["tags"] = "multi"
    model.docs[tx[0]].pop("title")
    model.docs[tx[1]] = {"tags": "multi", "price": "7"}
    same("MULTI/EXEC")
    # COPY, RENAMENX; a hash overwritten by a set (SUNIONSTORE).
    assert w.execute_command("COPY", "u:{14}x", "u:{14}c") == 1
    model.docs["u:{14}c"] = dict(model.docs["u:{14}x"])
    assert w.renamenx("u:{15}x", "u:{15}n")
    model.docs["u:{15}n"] = model.docs.pop("u:{15}x")
    w.sadd("set:{16}", "a", "b")
    assert w.sunionstore("u:{16}x", ["set:{16}"]) == 2
    del model.docs["u:{16}x"]
    same("COPY, RENAMENX, SUNIONSTORE")
    # DUMP/RESTORE makes a document; SORT ... STORE and MSET overwrite
    # two with a list and a string.
    payload = w.dump("u:{18}x")
    assert w.restore("u:{18}r", 0, payload)
    model.docs["u:{18}r"] = dict(model.docs["u:{18}x"])
    w.rpush("l:{19}", "3", "1", "2")
    assert w.sort("l:{19}", store="u:{19}x") == 3
    del model.docs["u:{19}x"]
    w.mset({"u:{20}x": "a", "u:{20}z": "b"})
    del model.docs["u:{20}x"]
    same("RESTORE, SORT STORE, MSET")
    # PERSIST keeps a key that was to expire.
    assert w.pexpire("u:{17}x", 400)
    assert w.persist("u:{17}x")
    # Expiry: the entries go (num_docs is counted from them) without
    # anybody writing the keys -- one of them is read after its time.
    for k in ("u:{10}x", "u:{11}x"):
        assert w.pexpire(k, 300)
        del model.docs[k]
    time.sleep(0.5)
    assert w.hgetall("u:{11}x") == {}
    t0 = time.monotonic()
    want = [len(model.covered())] * len(env.clients)
    while env.num_docs(name) != want:
        assert time.monotonic() - t0 < 10.0, (
            "num_docs still %r, want %r after expiry"
            % (env.num_docs(name), want))
        time.sleep(0.1)
    same("expiry")
    # A write after all that is indexed as usual.
    w.hset("u:{12}x", mapping={"tags": "new", "title": "zebra"})
    model.docs["u:{12}x"].update({"tags": "new", "title": "zebra"})
    same("a last HSET")
    env.alive()


# ---------------------------------------------------------------------------
# 4. FT.ALTER SCHEMA ADD
# ---------------------------------------------------------------------------

def test_alter_adds_a_field(env):
    rng = random.Random(3)
    name, prefix = "alt", "alt:"
    base = [Field("tags", "TAG")]
    docs = {}
    for i in range(80):
        d = {"tags": rng.choice(TAGS), "price": "%d" % i}
        if i % 4:
            d["color"] = rng.choice(["Red", "blue", "teal, navy"])
        docs["alt:%d" % i] = d
    env.write(docs)
    create(env, name, base, [prefix])
    env.wait_indexed(name, attrs=["tags"])
    for c in env.clients:
        with pytest.raises(redis.ResponseError, match="Unknown field"):
            c.ft(name).search("@color:{red}")
    added = [Field("color", "TAG"), Field("price", "NUMERIC", attr="pr")]
    assert env.ft(name).alter_schema_add(
        [f.redis_field() for f in added]) == "OK"
    env.wait_indexed(name, attrs=["tags", "color", "pr"])
    model = Model(base + added, [prefix])
    model.docs.update(docs)
    queries = []
    for text, tree in [("@color:{red}", ("tag", "color", "red", False)),
                       ("@color:{navy|te*}",
                        ("or", [("tag", "color", "navy", False),
                                ("tag", "color", "te", True)])),
                       ("@pr:[(10 40] -@color:{blue}",
                        ("and", [("range", "pr", "10", True, "40", False),
                                 ("not", ("tag", "color", "blue", False))]))]:
        q = Q(tree, text)
        q.num = 1000
        queries.append(q)
        assert model.expect(q)[0] > 0, text
    assert_same(env, name, model, queries)
    # Later writes use the new fields too.
    env.writer.hset("alt:new", mapping={"color": "RED", "price": "25"})
    model.docs["alt:new"] = {"color": "RED", "price": "25"}
    assert_same(env, name, model, queries)
    # FT.ALTER on an unknown index, or with a bad field, is refused.
    with pytest.raises(redis.ResponseError):
        env.clients[0].execute_command("FT.ALTER", "nosuch", "SCHEMA",
                                       "ADD", "f", "TAG")
    with pytest.raises(redis.ResponseError):
        env.clients[0].execute_command("FT.ALTER", name, "SCHEMA", "ADD",
                                       "f", "GEOMETRYX")


def test_alter_during_build(env):
    """FT.ALTER while the background build of the same index is under
    way: once percent_indexed is 1 again, every document is indexed on
    the new field too (the build must start over, not go on from where
    it was with the longer schema)."""
    n = 12000 if env.kind == "single" else 4000
    docs = {"adb:%05d" % i: {"t": "x", "c": "blue"} for i in range(n)}
    env.write(docs)
    for attempt in range(3):  # the ALTER must land inside the build
        name = "adb%d" % attempt
        create(env, name, [Field("t", "TAG")], ["adb:"])
        env.wait_listed(name)
        t0, seen = time.monotonic(), 0
        while seen == 0 and time.monotonic() - t0 < WAIT_S:
            seen = int(env.ft(name).info()["num_docs"])
        if 0 < seen < n:
            break
        env.ft(name).dropindex()
    else:
        raise AssertionError("never saw the build under way")
    assert env.ft(name).alter_schema_add([TagField("c")]) == "OK"
    env.wait_indexed(name, attrs=["t", "c"])
    for i, c in enumerate(env.clients):
        got = [c.ft(name).search(Query(q).paging(0, 0)).total
               for q in ("@t:{x}", "@c:{blue}")]
        assert got == [n, n], (
            "node %d: ALTER after %d of %d documents were built: "
            "@t:{x} finds %d, @c:{blue} finds %d (want %d each)"
            % (i, seen, n, got[0], got[1], n))


# ---------------------------------------------------------------------------
# 5. FT.DROPINDEX
# ---------------------------------------------------------------------------

def test_dropindex_and_recreate(env):
    name = "drp"
    schema = [Field("tags", "TAG"), Field("title", "TEXT")]
    old = {"drp:%d" % i: {"tags": "old", "title": "apple"} for i in range(30)}
    env.write(old)
    create(env, name, schema, ["drp:"])
    env.wait_indexed(name)
    assert env.ft(name).search("@tags:{old}").total == 30
    # (DD, which deletes the documents too, is not tested here.)
    # FT.DROP idx KEEPDOCS through python3-redis.
    assert env.ft(name).dropindex() == "OK"
    env.wait_listed(name, present=False)
    for c in env.clients:
        with pytest.raises(redis.ResponseError, match="no such index"):
            c.ft(name).search("*")
        with pytest.raises(redis.ResponseError):
            c.ft(name).info()
    assert env.writer.hgetall("drp:0") == {"tags": "old", "title": "apple"}
    # The same name, another prefix: nothing of the old index shows.
    newdocs = {"drq:%d" % i: {"tags": "new", "title": "zebra"}
               for i in range(7)}
    env.write(newdocs)
    create(env, name, schema, ["drq:"], node=len(env.clients) - 1)
    env.wait_indexed(name)
    for c in env.clients:
        res = c.ft(name).search(Query("*").paging(0, 1000).no_content())
        assert sorted(d.id for d in res.docs) == sorted(newdocs)
        assert res.total == 7
        assert c.ft(name).search("@tags:{old} | apple").total == 0
    assert env.num_docs(name) == [7] * len(env.clients)
    # Dropped with FT.DROPINDEX this time, and made again on the old
    # prefix with the documents changed meanwhile: only what is there now.
    assert env.clients[0].execute_command("FT.DROPINDEX", name) == "OK"
    env.wait_listed(name, present=False)
    for i in range(0, 30, 2):
        env.writer.delete("drp:%d" % i)
    for i in range(1, 30, 2):
        env.writer.hset("drp:%d" % i, "tags", "renewed")
    create(env, name, schema, ["drp:"])
    env.wait_indexed(name)
    keep = sorted(("drp:%d" % i for i in range(1, 30, 2)),
                  key=lambda k: k.encode())
    for c in env.clients:
        assert c.ft(name).search("@tags:{old}").total == 0
        res = c.ft(name).search(Query("@tags:{renewed} apple").paging(0, 100)
                                .no_content())
        assert [d.id for d in res.docs] == keep
    assert env.num_docs(name) == [15] * len(env.clients)
    # An unknown index cannot be dropped.
    with pytest.raises(redis.ResponseError, match="Unknown Index name"):
        env.clients[0].execute_command("FT.DROPINDEX", "nosuch")
    env.alive()


def test_redefinition_seen_at_once(env):
    """Once FT.DROPINDEX + FT.CREATE (same name, another prefix) or
    FT.ALTER answered OK on a node, a query on that node uses the new
    definition: never the old index's documents, never "Unknown field"
    for the field just added (peers whose map is older must not answer
    with their old definition)."""
    docs = {"fa:%03d" % i: {"t": "old"} for i in range(60)}
    docs.update({"fb:%03d" % i: {"t": "new"} for i in range(60)})
    env.write(docs)
    c = env.clients[0]
    errs = []
    for rnd in range(3):
        name = "flip%d" % rnd
        assert c.execute_command("FT.CREATE", name, "ON", "HASH", "PREFIX",
                                 "1", "fa:", "SCHEMA", "t", "TAG") == "OK"
        env.wait_indexed(name)
        assert c.ft(name).search("@t:{old}").total == 60
        assert c.execute_command("FT.DROPINDEX", name) == "OK"
        assert c.execute_command("FT.CREATE", name, "ON", "HASH", "PREFIX",
                                 "1", "fb:", "SCHEMA", "t", "TAG") == "OK"
        res = c.ft(name).search(Query("*").paging(0, 1000).no_content())
        old = [d.id for d in res.docs if d.id.startswith("fa:")]
        if old:
            errs.append("round %d: right after FT.DROPINDEX + FT.CREATE %s "
                        "PREFIX fb:, FT.SEARCH * on the same node returns "
                        "%d documents of the dropped index (fa:...)"
                        % (rnd, name, len(old)))
        assert c.execute_command("FT.ALTER", name, "SCHEMA", "ADD", "t",
                                 "AS", "t2", "TAG") == "OK"
        try:
            c.ft(name).search("@t2:{new}")
        except redis.ResponseError as e:
            errs.append("round %d: right after FT.ALTER %s SCHEMA ADD t AS "
                        "t2 TAG answered OK, FT.SEARCH @t2:{new} on the "
                        "same node fails: %s" % (rnd, name, e))
        env.wait_indexed(name, attrs=["t", "t2"])
        assert c.ft(name).search("@t2:{new}").total == 60
    assert not errs, "\n".join(errs)


# ---------------------------------------------------------------------------
# 6. errors are answered, and the node stays up
# ---------------------------------------------------------------------------

def test_errors(env):
    rng = random.Random(13)
    name, prefix = "err", "err:"
    model, docs = written(env, rng, prefix, 120)
    assert create(env, name, SCHEMA, [prefix]) == "OK"
    env.wait_indexed(name)
    for i, c in enumerate(env.clients):
        ft = c.ft(name)

        def err(*args, match=None):
            with pytest.raises(redis.ResponseError, match=match) as ei:
                c.execute_command(*args)
            return str(ei.value)

        err("FT.SEARCH", "nosuch", "*", match="no such index")
        err("FT.INFO", "nosuch", match="no such index")
        with pytest.raises(redis.ResponseError, match="Unknown field"):
            ft.search("@nosuch:{red}")
        err("FT.SEARCH", name, "*", "SORTBY", "nosuch",
            match="not loaded nor in schema")
        err("FT.SEARCH", name, "*", "FILTER", "nosuch", "0", "1",
            match="Unknown field")
        for bad in ["@tags:{red", "@tags:{red|blue", "(apple", "apple)",
                    "((apple) banana", "@price:[1 2", "@price:[1 2 3]",
                    '"apple banana', "@tags:{}", "@title:{red}",
                    "@price:{red}", "@tags:[1 2]", "|", "-", "@", "@tags",
                    "(" * 200 + "apple" + ")" * 200, "*apple"]:
            with pytest.raises(redis.ResponseError) as ei:
                ft.search(bad)
            assert "rror" in str(ei.value) or "nested" in str(ei.value), (
                bad, str(ei.value))
        with pytest.raises(redis.ResponseError, match="Bad lower range"):
            ft.search("@price:[nan 5]")
        with pytest.raises(redis.ResponseError, match="Bad upper range"):
            ft.search("@price:[1 NaN]")
        with pytest.raises(redis.ResponseError, match="Bad lower range"):
            ft.search(Query("*").add_filter(NumericFilter("price", "nan",
                                                          5)))
        with pytest.raises(redis.ResponseError, match="Bad upper range"):
            ft.search(Query("*").add_filter(NumericFilter("price", 1,
                                                          "(nan")))
        with pytest.raises(redis.ResponseError, match="No such parameter"):
            ft.search("@tags:{$nope}")
        for off, num in [(-1, 5), (0, -1), (-5, -5)]:
            with pytest.raises(redis.ResponseError, match="LIMIT"):
                ft.search(Query("*").paging(off, num))
        err("FT.SEARCH", name, "*", "LIMIT", "0", "abc")
        err("FT.SEARCH", name, "*", "NOSUCHOPTION")
        assert c.ping() is True
    # A second FT.CREATE of the same name.
    for c in env.clients:
        with pytest.raises(redis.ResponseError,
                           match="Index already exists"):
            c.ft(name).create_index([TagField("x")],
                                    definition=IndexDefinition(prefix=["y"]))
    with pytest.raises(redis.ResponseError):
        env.clients[0].execute_command("FT.CREATE", "bad1", "ON", "HASH",
                                       "SCHEMA", "f", "NOSUCHTYPE")
    with pytest.raises(redis.ResponseError):
        env.clients[0].execute_command("FT.CREATE", "bad2", "ON", "HASH",
                                       "SCHEMA")
    assert not any(env.listed("bad1")) and not any(env.listed("bad2"))
    # The same name created from every node at once: one wins.
    out = [None] * len(env.clients)

    def make(i):
        try:
            out[i] = env.clients[i].ft("race").create_index(
                [TagField("t%d" % i)],
                definition=IndexDefinition(prefix=["race%d:" % i]))
        except redis.ResponseError as e:
            out[i] = str(e)
    ts = [threading.Thread(target=make, args=(i,))
          for i in range(len(env.clients))]
    for t in ts:
        t.start()
    for t in ts:
        t.join(30)
    assert sorted(out)[-1] == "OK" and out.count("OK") == 1, out
    assert all(o in ("OK", "Index already exists") for o in out), out
    env.wait_listed("race")
    for c in env.clients:
        assert c.execute_command("FT._LIST").count("race") == 1
    attrs = {tuple(a[3] for a in env.ft("race", i).info()["attributes"])
             for i in range(len(env.clients))}
    assert attrs == {("t%d" % out.index("OK"),)}, attrs
    env.alive()
    # Still answering right after all that.
    gen = Gen(rng, model)
    assert_same(env, name, model, fixed_queries(gen))


def test_flushall_keeps_definitions(server_factory):
    """FLUSHALL takes the documents and their entries; the index stays
    defined and indexes what comes next."""
    srv = server_factory()
    c = srv.client()
    env = Env("single", [c], c, server=srv)
    env.write({"fl:%d" % i: {"t": "x"} for i in range(50)})
    create(env, "fl", [Field("t", "TAG")], ["fl:"])
    env.wait_indexed("fl")
    assert c.ft("fl").search("@t:{x}").total == 50
    assert c.flushall() is True
    assert c.execute_command("FT._LIST") == ["fl"]
    env.wait_indexed("fl")
    assert c.ft("fl").search("*").total == 0
    assert env.num_docs("fl") == [0]
    c.hset("fl:new", "t", "x")
    res = c.ft("fl").search("@t:{x}")
    assert (res.total, [d.id for d in res.docs]) == (1, ["fl:new"])
    assert env.num_docs("fl") == [1]
    c.close()


WIDE_S = 5.0  # a node busy longer than this stalls its peers' replication


def test_wide_or(env):
    """10,000 OR terms, words or tags, from every node: answered within
    WIDE_S (a node alone takes milliseconds; a node that holds its loop
    longer makes its peers drop their links to it: STALL_MS in
    pk_repl.c), right, and the nodes stay up.  Only one term is in any
    document, so the answer is that term's."""
    rng = random.Random(19)
    name, prefix = "wor", "wor:"
    model = Model(SCHEMA, [prefix])
    model.docs.update(make_docs(rng, 120, prefix, unique_prices(rng)))
    env.write(model.docs)
    create(env, name, SCHEMA, [prefix])
    env.wait_indexed(name)
    words = ["zz%d" % j for j in range(10000)]
    words[5000] = "zebra"
    wide_words = Q(None, " | ".join(words))
    one_word = Q(("text", [("zebra", False)]), "zebra")
    tags = ["t%d" % j for j in range(10000)]
    tags[9999] = "green"
    wide_tags = Q(None, "@tags:{%s}" % "|".join(tags))
    one_tag = Q(("tag", "tags", "green", False), "")
    for q in (wide_words, one_word, wide_tags, one_tag):
        q.num, q.nocontent = 1000, True
    for q in (one_word, one_tag):
        assert model.expect(q)[0] > 0
    for i, c in enumerate(env.clients):
        quick = redis.Redis(host=c.connection_pool.connection_kwargs["host"],
                            port=c.connection_pool.connection_kwargs["port"],
                            decode_responses=True, socket_timeout=WIDE_S)
        for wide, one in ((wide_words, one_word), (wide_tags, one_tag)):
            t0 = time.monotonic()
            try:
                got = answer(quick, name, wide)
            except redis.ResponseError as e:
                got = "error: %s" % e
            except redis.TimeoutError:
                got = "no answer within %.0fs" % WIDE_S
            took = time.monotonic() - t0
            assert got == model.expect(one), (
                "node %d: OR of 10,000 %s after %.1fs: %s"
                % (i, "words" if wide is wide_words else "tags", took,
                   got if isinstance(got, str) else short(got)))
        quick.close()
        assert c.ping() is True
    env.alive()


# ---------------------------------------------------------------------------
# 7. a node alone keeps its definitions and entries over a restart
# ---------------------------------------------------------------------------

def test_restart_keeps_index(server_factory):
    rng = random.Random(17)
    srv = server_factory()
    c = srv.client()
    name, prefix = "rst", "rst:"
    model = Model(SCHEMA, [prefix])
    docs = make_docs(rng, 200, prefix, unique_prices(rng))
    p = c.pipeline(transaction=False)
    for k, d in docs.items():
        p.hset(k, mapping=d)
    p.execute()
    model.docs.update(docs)
    create(Env("single", [c], c), name, SCHEMA[:6], [prefix])
    assert c.ft(name).alter_schema_add(
        [SCHEMA[6].redis_field()]) == "OK"
    # A second index, dropped before the restart: it must stay dropped.
    c.ft("gone").create_index([TagField("tags")],
                              definition=IndexDefinition(prefix=[prefix]))
    assert c.ft("gone").dropindex() == "OK"
    env = Env("single", [c], c, server=srv)
    before = env.wait_indexed(name)[0]
    gen = Gen(rng, model)
    queries = fixed_queries(gen) + [gen.query() for _ in range(40)]
    assert_same(env, name, model, queries)
    c.close()
    assert os.path.exists(os.path.join(srv.dir, "ftdefs"))

    assert srv.stop() == 0  # SIGTERM by PID
    srv.start()             # the same directory
    c = srv.client()
    env = Env("single", [c], c, server=srv)
    assert c.execute_command("FT._LIST") == [name]
    after = env.wait_indexed(name)[0]
    for k in ("index_definition", "attributes", "num_docs", "num_records"):
        assert after[k] == before[k], (k, before[k], after[k])
    assert_same(env, name, model, queries)
    # And it goes on indexing new writes.
    c.hset("rst:late", mapping={"tags": "late", "price": "0.5"})
    model.docs["rst:late"] = {"tags": "late", "price": "0.5"}
    q = Q(("tag", "tags", "late", False), "@tags:{late}")
    assert_same(env, name, model, [q] + queries[:10])
    c.close()


def test_dd_goes_on_when_its_client_goes(env):
    """FT.DROPINDEX ... DD from a client that disconnects at once: the
    documents are deleted and the index still leaves (on every node)."""
    name = "ddgone"
    docs = {"ddg:%d" % i: {"t": "x"} for i in range(40)}
    env.write(docs)
    create(env, name, [Field("t", "TAG")], ["ddg:"])
    env.wait_indexed(name)
    pool = env.clients[-1].connection_pool
    conn = pool.get_connection("FT.DROPINDEX")
    conn.send_command("FT.DROPINDEX", name, "DD")
    conn.disconnect()  # before any answer
    pool.release(conn)
    env.wait_listed(name, present=False)
    t0 = time.monotonic()
    while time.monotonic() - t0 < WAIT_S and any(
            env.writer.exists(k) for k in list(docs)[:5]):
        time.sleep(0.05)
    assert sum(env.writer.exists(k) for k in docs) == 0


def test_tolist_and_distinct_with_many_values(env):
    """TOLIST and COUNT_DISTINCT over thousands of values, some holding
    NULs: every distinct value once, none cut at a NUL."""
    name = "tolist"
    vals = ["v%d" % (i % 3000) for i in range(6000)] + ["a\0b", "a\0c"]
    docs = {"tl:%d" % i: {"g": "one", "v": v} for i, v in enumerate(vals)}
    env.write(docs)
    create(env, name, [Field("g", "TAG"), Field("v", "TAG")], ["tl:"])
    env.wait_indexed(name)
    for c in env.clients:
        res = c.execute_command(
            "FT.AGGREGATE", name, "*", "GROUPBY", "1", "@g", "REDUCE",
            "COUNT_DISTINCT", "1", "@v", "AS", "n", "REDUCE", "TOLIST", "1",
            "@v", "AS", "l")
        row = dict(zip(res[1][::2], res[1][1::2]))
        assert int(row["n"]) == 3002, row["n"]
        assert sorted(row["l"]) == sorted(set(vals))
    env.clients[0].execute_command("FT.DROPINDEX", name)


def test_stop_with_definition_edits_waiting():
    """A node stopped while FT.CREATE edits still wait for the map frees
    them: under make check (ASan) LeakSanitizer reported every one (found
    by tests/integration/netfuzz.py)."""
    c = pkcluster.Cluster(nodes=1, replicas=None,
                          base_port=pkcluster.free_port_block(1))
    socks = []
    try:
        c.start()
        c.wait_serving()
        node = c.nodes[0]
        for i in range(100):
            s = socket.create_connection((node.host, node.port), timeout=5)
            s.sendall(b"FT.CREATE stopidx%d ON HASH SCHEMA f TEXT\r\n" % i)
            socks.append(s)
        assert c.stop() == 0
        err = c.stderr_text()
        assert "Sanitizer" not in err and "runtime error" not in err, err
    finally:
        for s in socks:
            s.close()
        c.cleanup()
