"""Multi-key commands on a node alone take any keys, as on a standalone
Redis: the keys below hash to different Redis Cluster slots, and a node
without a cluster keeps every key in one partition (pk_srv_part).  A
cluster answers CROSSSLOT for them instead (test_cluster.py).

Run the same file against redis-server with PARTKV_TEST_TARGET=redis."""


def test_keys_in_different_slots(r):
    r.sadd("sa", "m", "n")
    r.sadd("sb", "n")
    assert r.smove("sa", "sb", "m") is True
    assert r.smembers("sb") == {"m", "n"}
    assert r.sinterstore("sc", ["sa", "sb"]) == 1
    assert r.sunion("sa", "sb") == {"m", "n"}
    assert r.sintercard(2, ["sa", "sb"]) == 1
    r.zadd("za", {"a": 1, "b": 2})
    r.zadd("zb", {"c": 3})
    assert r.zunionstore("zc", ["za", "zb"]) == 3
    assert r.zrangestore("zd", "za", 0, -1) == 2
    assert r.zdiff(["za", "zb"]) == ["a", "b"]
    assert r.zintercard(2, ["za", "zb"]) == 0
    assert r.zmpop(2, ["zx", "za"], min=True) == ["za", [["a", "1"]]]
    r.rpush("la", "1", "2")
    assert r.lmove("la", "lb", "RIGHT", "LEFT") == "2"
    assert r.lrange("lb", 0, -1) == ["2"]
    assert r.copy("la", "lc") is True
    assert r.rename("lc", "ld") is True
    assert r.lrange("ld", 0, -1) == ["1"]
    r.set("s1", "abc")
    r.set("s2", "abd")
    assert r.bitop("AND", "s3", "s1", "s2") == 3
    assert r.msetnx({"q1": "1", "q2": "2"}) is True
    assert r.mget("q1", "q2") == ["1", "2"]
    r.pfadd("h1", "a")
    r.pfadd("h2", "b")
    assert r.pfcount("h1", "h2") == 2


def test_smove_to_a_holder_keeps_its_watch(r):
    """SMOVE of a member the destination holds changes only the source:
    a WATCH on the destination stays intact (as Redis)."""
    r.sadd("src", "a", "b")
    r.sadd("dst", "a")
    p = r.pipeline(transaction=True)
    p.watch("dst")
    other = type(r)(host=r.connection_pool.connection_kwargs["host"],
                    port=r.connection_pool.connection_kwargs["port"],
                    decode_responses=True)
    assert other.smove("src", "dst", "a") is True
    p.multi()
    p.sadd("dst", "c")
    assert p.execute() == [1]
    assert r.scard("dst") == 2
    other.close()
