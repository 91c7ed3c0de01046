"""HRANDFIELD and ZRANDMEMBER on collections large enough for the store's
rank index (>= 256 records) and counts past its batch of 65536 draws:
reply lengths, distinctness, each field's value and member's score the
stored one, RESP3 pairs.  Run the same file against redis-server with
PARTKV_TEST_TARGET=redis."""
import collections

N = 5000


def fill(r):
    p = r.pipeline(transaction=False)
    for i in range(0, N, 500):
        p.hset("h", mapping={"f%05d" % j: "v%05d" % j
                             for j in range(i, i + 500)})
        p.zadd("z", {"m%05d" % j: j * 0.5 - 7 for j in range(i, i + 500)})
    p.execute()


def test_hrandfield_large(r, r3):
    fill(r)
    f = r.hrandfield("h")
    assert f.startswith("f") and 0 <= int(f[1:]) < N
    got = r.hrandfield("h", 40)
    assert len(got) == len(set(got)) == 40
    got = r.hrandfield("h", 4000, withvalues=True)
    assert len(got) == 8000
    pairs = dict(zip(got[::2], got[1::2]))
    assert len(pairs) == 4000
    assert all(v == "v" + k[1:] for k, v in pairs.items())
    assert sorted(r.hrandfield("h", N + 10)) == ["f%05d" % i for i in range(N)]
    got = r.execute_command("HRANDFIELD", "h", -70000, "WITHVALUES")
    assert len(got) == 140000
    assert all(v == "v" + k[1:] for k, v in zip(got[::2], got[1::2]))
    # Draws with repeats: every field about equally often.
    c = collections.Counter(k for k in got[::2])
    assert len(c) > N * 0.99 and max(c.values()) < 14 * 5
    got = r3.call("HRANDFIELD", "h", "-3", "WITHVALUES")
    assert len(got) == 3
    assert all(len(p) == 2 and p[1] == "v" + p[0][1:] for p in got)


def test_zrandmember_large(r, r3):
    fill(r)
    got = r.zrandmember("z", 30, withscores=True)
    assert len(got) == 60 and len(set(got[::2])) == 30
    assert all(float(s) == int(m[1:]) * 0.5 - 7
               for m, s in zip(got[::2], got[1::2]))
    got = r.execute_command("ZRANDMEMBER", "z", -70000, "WITHSCORES")
    assert len(got) == 140000
    assert all(float(s) == int(m[1:]) * 0.5 - 7
               for m, s in zip(got[::2], got[1::2]))
    got = r.zrandmember("z", 3000)
    assert len(set(got)) == 3000
    got = r3.call("ZRANDMEMBER", "z", "4", "WITHSCORES")
    assert len(got) == 4
    assert all(p[1] == int(p[0][1:]) * 0.5 - 7 for p in got)
