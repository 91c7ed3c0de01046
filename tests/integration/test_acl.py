"""ACL users (issue 19, item 2) against a real node, with python3-redis and
redis-cli: Redis 7.0's rules, reply shapes and error texts.  Most tests
also pass against redis-server (PARTKV_TEST_TARGET=redis), which is how
their expectations were checked."""
import hashlib
import subprocess
import time

import pytest
import redis

# redis-py takes the NOPERM prefix off (NoPermissionError).
NOPERM_KEY = ("this user has no permissions to access one of the keys used "
              "as arguments")
WRONGPASS = "WRONGPASS invalid username-password pair or user is disabled."


def user_client(srv, name, pw, **kw):
    return redis.Redis(host=srv.host, port=srv.port, username=name,
                       password=pw, decode_responses=True, **kw)


def getuser(r, name):
    """ACL GETUSER as the server sent it (redis-py's acl_getuser reshapes
    it), as a dict."""
    v = r.execute_command("ACL", "GETUSER", name)
    return dict(zip(v[0::2], v[1::2]))


def err(fn, *a):
    with pytest.raises(redis.exceptions.ResponseError) as e:
        fn(*a)
    return str(e.value)


def test_default_user(r):
    assert r.acl_whoami() == "default"
    assert r.acl_users() == ["default"]
    assert r.acl_list() == ["user default on nopass ~* &* +@all"]
    u = getuser(r, "default")
    assert u["flags"] == ["on", "nopass"]
    assert u["passwords"] == []
    assert u["commands"] == "+@all"
    assert u["keys"] == "~*" and u["channels"] == "&*"
    assert u["selectors"] == []


def test_setuser_auth_and_passwords(server, r):
    assert r.execute_command("ACL", "SETUSER", "newuser") == "OK"
    r.execute_command("ACL", "SETUSER", "newuser", ">passwd1")
    # New users start disabled.
    assert err(r.execute_command, "AUTH", "newuser", "passwd1") == WRONGPASS
    r.execute_command("ACL", "SETUSER", "newuser", "on", "+acl")
    c = server.client()
    assert c.execute_command("AUTH", "newuser", "passwd1") is True
    assert c.acl_whoami() == "newuser"
    r.execute_command("ACL", "SETUSER", "newuser", ">passwd2")
    assert c.execute_command("AUTH", "newuser", "passwd2") is True
    assert err(c.execute_command, "AUTH", "newuser", "x") == WRONGPASS
    r.execute_command("ACL", "SETUSER", "newuser", "<passwd1")
    assert err(c.execute_command, "AUTH", "newuser", "passwd1") == WRONGPASS
    # Only the hash is kept, and shown.
    h = getuser(r, "newuser")["passwords"]
    assert h == [hashlib.sha256(b"passwd2").hexdigest()]
    assert "passwd2" not in " ".join(r.acl_list())
    # #hash adds, !hash removes, a bad hash is refused.
    r.execute_command("ACL", "SETUSER", "newuser",
                      "#" + hashlib.sha256(b"p3").hexdigest())
    assert c.execute_command("AUTH", "newuser", "p3") is True
    r.execute_command("ACL", "SETUSER", "newuser",
                      "!" + hashlib.sha256(b"p3").hexdigest())
    assert err(c.execute_command, "AUTH", "newuser", "p3") == WRONGPASS
    e = err(r.execute_command, "ACL", "SETUSER", "newuser", "#abc")
    assert e == ("Error in ACL SETUSER modifier '#abc': The password hash "
                 "must be exactly 64 characters and contain only lowercase "
                 "hexadecimal characters")
    e = err(r.execute_command, "ACL", "SETUSER", "newuser", "<nothere")
    assert "The password you are trying to remove from the user does not " \
        "exist" in e
    r.execute_command("ACL", "SETUSER", "newuser", "nopass")
    assert c.execute_command("AUTH", "newuser", "anything") is True
    c.close()


def test_setuser_errors(r):
    assert "Usernames can't contain spaces or null characters" in err(
        r.execute_command, "ACL", "SETUSER", "a a")
    assert err(r.execute_command, "ACL", "SETUSER", "u", "+nosuchcmd") == (
        "Error in ACL SETUSER modifier '+nosuchcmd': Unknown command or "
        "category name in ACL")
    assert "Unknown command or category name" in err(
        r.execute_command, "ACL", "SETUSER", "u", "+@nosuchcat")
    assert "Syntax error" in err(r.execute_command, "ACL", "SETUSER", "u",
                                 "bogus")
    assert "Allowing first-arg of a subcommand is not supported" in err(
        r.execute_command, "ACL", "SETUSER", "u", "+config|get|appendonly")
    assert "Unknown command or category name" in err(
        r.execute_command, "ACL", "SETUSER", "u", "+config|asdf")
    assert "Unknown command or category name" in err(
        r.execute_command, "ACL", "SETUSER", "u", "-get|key1|key2")
    assert "Adding a pattern after the * pattern" in err(
        r.execute_command, "ACL", "SETUSER", "u", "allkeys", "~foo")
    assert "Unmatched parenthesis in acl selector starting at '(~a'" in err(
        r.execute_command, "ACL", "SETUSER", "u", "(~a", "+get")
    # A failing SETUSER changes nothing.
    r.execute_command("ACL", "SETUSER", "keep", "on", "+get")
    err(r.execute_command, "ACL", "SETUSER", "keep", "+set", "+nosuch")
    assert getuser(r, "keep")["commands"] == "-@all +get"


def test_commands_keys_and_errors(server, r):
    r.execute_command("ACL", "SETUSER", "app", "on", ">pw", "~app1:*",
                      "+@read", "+@write", "-@dangerous", "-del")
    c = user_client(server, "app", "pw")
    assert c.set("app1:a", "1") is True
    assert c.get("app1:a") == "1"
    assert err(c.get, "app2:a") == NOPERM_KEY
    assert err(c.mset, {"app1:b": "1", "app2:b": "2"}) == NOPERM_KEY
    assert err(c.delete, "app1:a") == (
        "this user has no permissions to run the 'del' command")
    assert err(c.execute_command, "CONFIG", "GET", "port") == (
        "this user has no permissions to run the 'config|get' "
        "command")
    assert err(c.flushall) == (
        "this user has no permissions to run the 'flushall' command")
    # No key of app2 leaks through a multi-key or two-key command.
    r.set("app2:secret", "x")
    assert err(c.execute_command, "COPY", "app2:secret", "app1:copy") == \
        NOPERM_KEY
    assert err(c.execute_command, "SUNIONSTORE", "app1:d", "app2:secret") \
        == NOPERM_KEY
    c.close()


def test_read_write_key_patterns(server, r):
    r.execute_command("ACL", "SETUSER", "rw", "on", "nopass", "+@all",
                      "%R~r:*", "%W~w:*", "~rw:*")
    c = user_client(server, "rw", "x")
    r.set("r:1", "v")
    assert c.get("r:1") == "v"
    assert err(c.set, "r:1", "v") == NOPERM_KEY
    assert c.set("w:1", "v") is True
    assert err(c.get, "w:1") == NOPERM_KEY
    # INCR reads and writes; LPUSH only writes; COPY reads its source.
    assert err(c.incr, "w:n") == NOPERM_KEY
    assert c.lpush("w:l", "a") == 1
    assert c.execute_command("COPY", "r:1", "w:2") == 1
    assert err(c.execute_command, "COPY", "w:2", "r:2") == NOPERM_KEY
    assert c.incr("rw:n") == 1
    assert getuser(r, "rw")["keys"] == "%R~r:* %W~w:* ~rw:*"
    c.close()


def test_subcommands_and_first_args(server, r):
    r.execute_command("ACL", "SETUSER", "sub", "on", "nopass", "+@all",
                      "-client", "+client|id", "+client|setname")
    cmds = getuser(r, "sub")["commands"]
    assert cmds.startswith("+@all") and "-client" in cmds
    assert "+client|id" in cmds and "+client|setname" in cmds
    c = user_client(server, "sub", "x")
    assert isinstance(c.client_id(), int)
    assert "client|list" in err(c.execute_command, "CLIENT", "LIST")
    r.execute_command("ACL", "SETUSER", "sub", "+@all", "-client|kill")
    assert getuser(r, "sub")["commands"] == "+@all -client|kill"
    r.execute_command("ACL", "SETUSER", "sub", "-@all", "+select|0",
                      "+acl")
    assert "+select|0" in getuser(r, "sub")["commands"]
    assert c.execute_command("SELECT", "0") is True
    assert "select" in err(c.execute_command, "SELECT", "1")
    r.execute_command("ACL", "SETUSER", "bob", "+memory|doctor")
    assert getuser(r, "bob")["commands"] == "-@all +memory|doctor"
    r.execute_command("ACL", "SETUSER", "bob", "+memory")
    assert getuser(r, "bob")["commands"] == "-@all +memory"
    r.execute_command("ACL", "SETUSER", "bob", "+@all", "+client|id")
    assert getuser(r, "bob")["commands"] == "+@all"
    c.close()


@pytest.mark.parametrize("cat", ["keyspace", "read", "write", "set",
                                 "sortedset", "list", "hash", "string",
                                 "bitmap", "hyperloglog", "admin", "fast",
                                 "slow", "blocking", "dangerous",
                                 "connection", "transaction", "scripting"])
def test_getuser_translates_categories(r, cat):
    r.execute_command("ACL", "SETUSER", "additive", "reset", "+@all",
                      "-@" + cat)
    assert getuser(r, "additive")["commands"] == "+@all -@" + cat
    r.execute_command("ACL", "SETUSER", "restrictive", "reset", "-@all",
                      "+@" + cat)
    assert getuser(r, "restrictive")["commands"] == "-@all +@" + cat


def test_cat(r):
    cats = r.acl_cat()
    assert "keyspace" in cats and "connection" in cats and len(cats) == 21
    assert "multi" in r.acl_cat("transaction")
    assert "function|list" in r.acl_cat("scripting")
    assert "set" not in r.acl_cat("keyspace")
    assert err(r.acl_cat, "NON_EXISTS") == "Unknown category 'NON_EXISTS'"
    assert "unknown subcommand or wrong number of arguments for 'CAT'" in \
        err(r.execute_command, "ACL", "CAT", "a", "b")


def test_dryrun(r):
    r.execute_command("ACL", "SETUSER", "d", "on", "nopass", "+get",
                      "~a*")
    assert r.execute_command("ACL", "DRYRUN", "d", "GET", "ab") == "OK"
    assert r.execute_command("ACL", "DRYRUN", "d", "GET", "b") == (
        "This user has no permissions to access the 'b' key")
    assert r.execute_command("ACL", "DRYRUN", "d", "SET", "a", "1") == (
        "This user has no permissions to run the 'set' command")
    assert err(r.execute_command, "ACL", "DRYRUN", "nobody", "GET", "a") \
        == "User 'nobody' not found"
    assert err(r.execute_command, "ACL", "DRYRUN", "d", "NOPE") == \
        "Command 'NOPE' not found"
    assert err(r.execute_command, "ACL", "DRYRUN", "d", "GET") == \
        "wrong number of arguments for 'get' command"


def test_log(server, r):
    r.acl_log_reset()
    r.execute_command("ACL", "SETUSER", "antirez", ">foo", "on", "+set",
                      "~object:1234", "+multi", "+exec")
    c = user_client(server, "antirez", "foo")
    for _ in range(3):
        assert "no permissions" in err(c.get, "foo")
    e = r.acl_log()[0]
    assert e["count"] == 3 and e["reason"] == "command"
    assert e["context"] == "toplevel" and e["object"] == "get"
    assert e["username"] == "antirez"
    ci = e["client-info"]  # redis-py parses it into a dict
    assert "age-seconds" in e and ci["user"] == "antirez"
    raw = r.execute_command("ACL", "LOG", "1")[0]
    assert raw[0::2] == ["count", "reason", "context", "object", "username",
                         "age-seconds", "client-info"]
    err(c.set, "somekeynotallowed", "1")
    e = r.acl_log()[0]
    assert e["reason"] == "key" and e["object"] == "somekeynotallowed"
    p = c.pipeline(transaction=True)
    p.execute_command("INCR", "foo")
    with pytest.raises(redis.exceptions.ResponseError):
        p.execute()
    e = r.acl_log()[0]
    assert e["context"] == "multi" and e["object"] == "incr"
    err(r.execute_command, "AUTH", "antirez", "wrong")
    e = r.acl_log()[0]
    assert (e["reason"], e["object"], e["username"], e["context"]) == (
        "auth", "AUTH", "antirez", "toplevel")
    assert len(r.acl_log(2)) == 2
    assert r.acl_log_reset() is True and r.acl_log() == []
    c.close()


def test_deluser_disconnects(server, r):
    r.execute_command("ACL", "SETUSER", "not_used", "on", ">passwd")
    assert r.acl_deluser("not_used") == 1
    assert r.ping() is True
    r.execute_command("ACL", "SETUSER", "using", "on", "+acl", ">passwd")
    c = user_client(server, "using", "passwd", retry_on_timeout=False)
    assert c.acl_deluser("using") == 1
    with pytest.raises((redis.exceptions.ConnectionError,
                        redis.exceptions.AuthenticationError,
                        redis.exceptions.ResponseError)):
        # The connection is closed; a reconnect finds no such user.
        c.ping()
    assert err(r.acl_deluser, "default") == \
        "The 'default' user cannot be removed"
    c.close()


def test_setuser_applies_to_live_connections(server, r):
    r.execute_command("ACL", "SETUSER", "live", "on", "nopass", "+get",
                      "+set", "~*")
    c = user_client(server, "live", "x")
    assert c.set("k", "v") is True
    r.execute_command("ACL", "SETUSER", "live", "-set")
    assert "no permissions" in err(c.set, "k", "v")
    assert c.get("k") == "v"
    c.close()


def test_default_user_off_and_requirepass(server_factory):
    srv = server_factory(requirepass="sekret")
    c = srv.client()
    assert getuser(c, "default")["flags"] == ["on"]
    assert c.execute_command("AUTH", "sekret") is True
    assert c.execute_command("AUTH", "default", "sekret") is True
    c.execute_command("ACL", "SETUSER", "other", "on", ">pw", "+@all",
                      "~*")
    n = redis.Redis(host=srv.host, port=srv.port, decode_responses=True)
    with pytest.raises(redis.exceptions.AuthenticationError):
        n.ping()
    hello = n.execute_command("HELLO", "2", "AUTH", "other", "pw")
    assert hello[hello.index("proto") + 1] == 2
    assert n.acl_whoami() == "other"
    n.close()
    c.execute_command("ACL", "SETUSER", "default", "off")
    n = redis.Redis(host=srv.host, port=srv.port, decode_responses=True)
    with pytest.raises(redis.exceptions.AuthenticationError):
        n.ping()
    n.close()
    c.close()


def test_config_set_requirepass(server, r):
    """CONFIG SET requirepass replaces the default user's passwords with
    that one (an empty one: nopass), as Redis does; connections already
    logged in stay so."""
    r.execute_command("ACL", "SETUSER", "default", ">old")
    assert r.config_set("requirepass", "newpw") is True
    assert r.config_get("requirepass") == {"requirepass": "newpw"}
    assert getuser(r, "default")["passwords"] == [
        hashlib.sha256(b"newpw").hexdigest()]
    assert r.ping() is True  # still logged in
    n = redis.Redis(host=server.host, port=server.port, decode_responses=True)
    with pytest.raises(redis.exceptions.AuthenticationError):
        n.ping()
    assert err(n.execute_command, "AUTH", "old") == WRONGPASS
    assert n.execute_command("AUTH", "newpw") is True
    assert n.config_set("requirepass", "") is True
    assert "nopass" in getuser(r, "default")["flags"]
    assert redis.Redis(host=server.host, port=server.port).ping() is True
    assert err(r.execute_command, "CONFIG", "SET", "requirepass", "a",
               "requirepass", "b").endswith("duplicate parameter")
    n.close()


def test_bitfield_get_only_reads(server, r):
    """BITFIELD with GET (and OVERFLOW) alone needs read access only, as
    Redis 7.0's key specs say; SET or INCRBY need read and write."""
    r.execute_command("ACL", "SETUSER", "bfr", "on", "nopass", "+@all",
                      "%R~ro*")
    r.execute_command("ACL", "SETUSER", "bfw", "on", "nopass", "+@all",
                      "%W~wo*")
    c = user_client(server, "bfr", "x")
    assert c.execute_command("BITFIELD", "ro", "GET", "u4", "0",
                             "OVERFLOW", "SAT", "GET", "i8", "4") == [0, 0]
    for args in (["SET", "u4", "0", "1"], ["GET", "u4", "0", "INCRBY",
                                           "u4", "0", "1"], ["GET", "u4"]):
        assert err(c.execute_command, "BITFIELD", "ro", *args) == NOPERM_KEY
    w = user_client(server, "bfw", "x")
    for args in (["GET", "u4", "0"], ["SET", "u4", "0", "1"]):
        assert err(w.execute_command, "BITFIELD", "wo", *args) == NOPERM_KEY
    c.close()
    w.close()


def test_binary_requirepass(server, r):
    """A password may hold any bytes, NUL included, as in Redis."""
    assert r.config_set("requirepass", "abc\x00def") is True
    n = redis.Redis(host=server.host, port=server.port)
    assert err(n.execute_command, "AUTH", "abc") == WRONGPASS
    assert n.execute_command("AUTH", "abc\x00def") is True
    assert n.config_set("requirepass", "") is True
    n.close()


def test_genpass_and_help(r):
    assert len(r.acl_genpass()) == 64
    assert len(r.execute_command("ACL", "GENPASS", "5")) == 2
    assert "ACL GENPASS argument must be the number" in err(
        r.execute_command, "ACL", "GENPASS", "-236")
    assert "wrong number of arguments for 'acl|help' command" in err(
        r.execute_command, "ACL", "HELP", "xxx")
    assert any("SETUSER" in l for l in r.execute_command("ACL", "HELP"))


def test_selectors(server, r):
    r.execute_command("ACL", "SETUSER", "sel", "on", "nopass", "+get",
                      "~a*", "(+set ~b*)")
    u = getuser(r, "sel")
    assert u["commands"] == "-@all +get"
    assert len(u["selectors"]) == 1
    c = user_client(server, "sel", "x")
    assert c.set("b1", "v") is True
    assert "no permissions" in err(c.set, "a1", "v")
    assert "no permissions" in err(c.get, "b1")
    r.execute_command("ACL", "SETUSER", "sel", "clearselectors")
    assert "no permissions" in err(c.set, "b1", "v")
    c.close()


def test_aclfile_load_save(server_factory, tmp_path):
    path = tmp_path / "users.acl"
    path.write_text("user alice on >pa ~a:* +@all\n"
                    "user default on nopass ~* &* +@all\n")
    srv = server_factory(extra=["--aclfile", str(path)])
    r = srv.client()
    assert r.acl_users() == ["alice", "default"]
    a = user_client(srv, "alice", "pa")
    assert a.set("a:1", "v") is True
    r.execute_command("ACL", "SETUSER", "bob", "on", ">pb", "~b:*", "+get")
    assert r.execute_command("ACL", "SAVE") == "OK"
    text = path.read_text()
    assert "user bob on #" in text and "pb" not in text.split("#")[0]
    r.execute_command("ACL", "SETUSER", "carol", "on")
    assert r.execute_command("ACL", "LOAD") == "OK"
    assert r.acl_users() == ["alice", "bob", "default"]
    b = user_client(srv, "bob", "pb")
    assert "no permissions" in err(b.get, "a:1")
    # A bad file changes nothing.
    path.write_text("user x on +nosuchcommand\nnotauser\n")
    e = err(r.execute_command, "ACL", "LOAD")
    assert "Error in applying operation '+nosuchcommand'" in e
    assert "should start with user keyword" in e
    assert e.endswith("WARNING: ACL errors detected, no change to the "
                      "previously active ACL rules was performed")
    assert r.acl_users() == ["alice", "bob", "default"]
    for c in (a, b, r):
        c.close()


def test_load_save_without_file(r):
    assert "not configured to use an ACL file" in err(
        r.execute_command, "ACL", "LOAD")


def test_keys_and_scan_filtered(server, r, target):
    if target == "redis":
        pytest.skip("partkv deviation: Redis 7.0 lets KEYS/SCAN list every "
                    "key")
    r.mset({"app1:a": "1", "app1:b": "2", "app2:a": "3"})
    r.execute_command("ACL", "SETUSER", "k", "on", "nopass", "+@all",
                      "~app1:*")
    c = user_client(server, "k", "x")
    assert sorted(c.keys("*")) == ["app1:a", "app1:b"]
    assert sorted(c.scan_iter("*")) == ["app1:a", "app1:b"]
    for _ in range(20):
        assert c.randomkey() in ("app1:a", "app1:b")
    r.execute_command("ACL", "SETUSER", "k", "resetkeys", "~none:*")
    assert c.randomkey() is None
    c.close()


def test_redis_cli(server):
    r = server.client()
    r.execute_command("ACL", "SETUSER", "cli", "on", ">clipw", "~*",
                      "+@all")
    out = subprocess.run(
        ["redis-cli", "-h", server.host, "-p", str(server.port), "--user",
         "cli", "--pass", "clipw", "--no-auth-warning", "ACL", "WHOAMI"],
        capture_output=True, text=True, timeout=10)
    assert out.stdout.strip() == "cli"
    r.close()


def test_exec_checks_again(server, r):
    r.acl_log_reset()
    r.execute_command("ACL", "SETUSER", "tx", "on", "nopass", "~*", "+multi",
                      "+exec", "+incr")
    c = server.client()
    c.execute_command("AUTH", "tx", "x")
    # The rules change between MULTI (queued) and EXEC: a raw exchange.
    conn = c.connection_pool.get_connection("MULTI")
    conn.send_command("MULTI")
    assert conn.read_response() in (b"OK", "OK", True)
    conn.send_command("INCR", "n")
    assert conn.read_response() in (b"QUEUED", "QUEUED")
    r.execute_command("ACL", "SETUSER", "tx", "-incr")
    conn.send_command("EXEC")
    res = conn.read_response()
    assert len(res) == 1
    assert "ACLs rules changed between the moment the transaction was " \
        "accumulated and the EXEC call" in str(res[0])
    e = r.acl_log()[0]
    assert e["context"] == "multi" and e["object"] == "incr"
    c.connection_pool.release(conn)
    c.close()


def test_acllog_max_len(server, r):
    r.acl_log_reset()
    r.config_set("acllog-max-len", 5)
    assert r.config_get("acllog-max-len") == {"acllog-max-len": "5"}
    r.execute_command("ACL", "SETUSER", "lim", "on", "nopass", "+set",
                      "~obj:x")
    c = user_client(server, "lim", "x")
    for j in range(10):
        err(c.set, "obj:%d" % j, "1")
    assert len(r.acl_log()) == 5
    r.config_set("acllog-max-len", 128)
    c.close()


@pytest.fixture(scope="module")
def fwd_cluster(target):
    """3 nodes, --route forward: a node forwards a keyed command it does
    not own to the owner.  Stopped by PID, no node left behind."""
    if target == "redis":
        pytest.skip("partkv cluster")
    import cluster as pkcluster
    yield from pkcluster.serving(
        pkcluster.Cluster(nodes=3, replicas=1, extra=["--route", "forward"]))


def test_cluster_forwarded_commands_checked_at_entry(fwd_cluster):
    """A node forwards a keyed command to the key's owner over a
    node-to-node link: the user's key check runs on the node the client
    is connected to, before forwarding."""
    import cluster as pkcluster
    n0 = fwd_cluster.nodes[0]
    admin = redis.Redis(host=n0.host, port=n0.port, decode_responses=True)
    admin.execute_command("ACL", "SETUSER", "fw", "on", ">pw", "+@all",
                          "~app1:*")
    u = redis.Redis(host=n0.host, port=n0.port, username="fw", password="pw",
                    decode_responses=True)
    slots = set()
    for i in range(40):  # keys on every node, most not on node 0
        k = "app1:%d" % i
        assert u.set(k, str(i)) is True
        assert u.get(k) == str(i)
        slots.add(pkcluster.keyslot(k))
        assert "no permissions" in err(u.get, "app2:%d" % i)
        assert "no permissions" in err(u.set, "app2:%d" % i, "x")
    assert len(slots) > 1
    assert admin.get("app2:0") is None
    u.close()
    admin.close()


def test_cluster_users_on_every_node(fwd_cluster):
    """Users set on one node reach every node through the coordinator;
    a deleted user is gone everywhere and its connections closed."""
    import cluster as pkcluster
    c = fwd_cluster
    admins = [redis.Redis(host=n.host, port=n.port, decode_responses=True)
              for n in c.nodes]
    admins[0].execute_command("ACL", "SETUSER", "cu", "on", ">pw",
                              "~app1:*", "+@read")
    admins[1].execute_command("ACL", "SETUSER", "cv", "on", ">pv", "+@all",
                              "~*")

    def everywhere(pred):
        ok, _ = pkcluster.wait_until(lambda: all(pred(a) for a in admins),
                                     10)
        assert ok

    everywhere(lambda a: {"cu", "cv"} <= set(a.acl_users()))
    for n in c.nodes:
        u = redis.Redis(host=n.host, port=n.port, username="cu",
                        password="pw", decode_responses=True)
        assert isinstance(u.dbsize(), int)
        assert "no permissions" in err(u.set, "app1:x", "1")
        u.close()
    # A change of rules applies to live connections on other nodes.
    u2 = redis.Redis(host=c.nodes[2].host, port=c.nodes[2].port,
                     username="cu", password="pw", decode_responses=True)
    assert "no permissions" in err(u2.execute_command, "PING")
    admins[1].execute_command("ACL", "SETUSER", "cu", "+ping")
    everywhere(lambda a: "+ping" in " ".join(a.acl_list()))
    assert u2.ping() is True
    admins[2].acl_deluser("cu")
    everywhere(lambda a: "cu" not in a.acl_users())
    with pytest.raises(redis.exceptions.RedisError):
        u2.ping()
    for a in admins:
        a.close()


def test_sort_by_get_need_all_keys(server, r):
    r.rpush("app1:l", "2", "1")
    r.set("w_1", "x")
    r.execute_command("ACL", "SETUSER", "so", "on", "nopass", "+@all",
                      "~app1:*")
    c = user_client(server, "so", "x")
    assert c.sort("app1:l") == ["1", "2"]
    assert c.execute_command("SORT", "app1:l", "BY", "nosort") == ["2", "1"]
    assert err(c.execute_command, "SORT", "app1:l", "BY", "w_*") == (
        "BY option of SORT denied due to insufficient ACL permissions.")
    assert err(c.execute_command, "SORT", "app1:l", "GET", "w_*") == (
        "GET option of SORT denied due to insufficient ACL permissions.")
    r.execute_command("ACL", "SETUSER", "so", "%R~*")
    assert c.execute_command("SORT", "app1:l", "GET", "w_*") == ["x", None]
    c.close()


def test_search_sees_only_readable_hits(server, r, target):
    """FT.SEARCH returns documents no argument names: a user limited to
    some keys gets only the hits it may read, counted so too; FT.AGGREGATE
    (whose groups would count the others) needs every key (partkv rules;
    Redis has no FT.*)."""
    if target == "redis":
        pytest.skip("partkv's FT.*")
    r.execute_command("FT.CREATE", "idx", "ON", "HASH", "PREFIX", "2",
                      "app1:", "app2:", "SCHEMA", "t", "TAG")
    for i in range(5):
        r.hset("app1:%d" % i, "t", "a")
        r.hset("app2:%d" % i, "t", "a")
    r.execute_command("ACL", "SETUSER", "fs", "on", "nopass", "+@all",
                      "~app1:*")
    c = user_client(server, "fs", "x")
    got = c.execute_command("FT.SEARCH", "idx", "@t:{a}", "LIMIT", "0", "100")
    assert got[0] == 5, got
    assert sorted(got[1::2]) == ["app1:%d" % i for i in range(5)]
    assert c.execute_command("FT.SEARCH", "idx", "*", "NOCONTENT")[0] == 5
    assert err(c.execute_command, "FT.AGGREGATE", "idx", "*") == NOPERM_KEY
    r.execute_command("ACL", "SETUSER", "fs", "%R~*")
    assert c.execute_command("FT.SEARCH", "idx", "*", "NOCONTENT")[0] == 10
    c.close()


def test_cluster_search_filters_every_share(fwd_cluster):
    """The hits of every node's share are filtered there, by the user the
    coordinator gave every node."""
    import cluster as pkcluster
    n0 = fwd_cluster.nodes[0]
    admin = redis.Redis(host=n0.host, port=n0.port, decode_responses=True)
    admin.execute_command("FT.CREATE", "cidx", "ON", "HASH", "PREFIX", "2",
                          "fa1:", "fa2:", "SCHEMA", "t", "TAG")
    for i in range(60):  # on every node
        admin.hset("fa1:%d" % i, "t", "z")
        admin.hset("fa2:%d" % i, "t", "z")
    admin.execute_command("ACL", "SETUSER", "cs", "on", ">pw", "+@all",
                          "~fa1:*")
    ok, _ = pkcluster.wait_until(lambda: all(
        "cs" in redis.Redis(host=n.host, port=n.port,
                            decode_responses=True).acl_users()
        for n in fwd_cluster.nodes), 10)
    assert ok
    u = redis.Redis(host=n0.host, port=n0.port, username="cs", password="pw",
                    decode_responses=True)
    deadline = time.monotonic() + 10
    while True:
        got = u.execute_command("FT.SEARCH", "cidx", "@t:{z}", "NOCONTENT",
                                "LIMIT", "0", "1000")
        if got[0] == 60 or time.monotonic() > deadline:
            break
        time.sleep(0.2)  # the index catches up
    assert got[0] == 60 and sorted(got[1:]) == sorted(
        "fa1:%d" % i for i in range(60)), got
    ok, _ = pkcluster.wait_until(lambda: admin.execute_command(
        "FT.SEARCH", "cidx", "@t:{z}", "NOCONTENT", "LIMIT", "0",
        "0")[0] == 120, 10)
    assert ok
    u.close()
    admin.close()


@pytest.fixture(scope="module")
def acl_proxy(fwd_cluster):
    """`partkv proxy --cluster-secret` in front of fwd_cluster: it checks
    its clients against the cluster's users."""
    import cluster as pkcluster
    px = pkcluster.Proxy(fwd_cluster.nodes[0].addr,
                         extra=["--cluster-secret", fwd_cluster.secret])
    px.start()
    yield px
    px.stop()


def test_cluster_users_through_proxy(fwd_cluster, acl_proxy):
    """A user the coordinator holds is checked by the proxy before it
    forwards: keys outside its patterns are refused whole (also when one
    key of several is), denials are in the proxy's ACL LOG, and an edit
    made on the proxy reaches every node."""
    import cluster as pkcluster
    n0 = fwd_cluster.nodes[0]
    admin = redis.Redis(host=n0.host, port=n0.port, decode_responses=True)
    for i in range(40):  # on every node
        admin.hset("pa1:%d" % i, "t", "y")
        admin.hset("pa2:%d" % i, "t", "y")
    admin.execute_command("ACL", "SETUSER", "pu", "on", ">pw", "+@all",
                          "~pa1:*")
    pa = redis.Redis(host=acl_proxy.host, port=acl_proxy.port,
                     decode_responses=True)
    ok, _ = pkcluster.wait_until(lambda: "pu" in pa.acl_users(), 10)
    assert ok, pa.acl_users()
    pa.acl_log_reset()
    u = user_client(acl_proxy, "pu", "pw")
    assert u.hget("pa1:7", "t") == "y"
    assert u.set("pa1:new", "1") is True
    assert u.mget("pa1:1", "pa1:2", "pa1:3") == [None] * 3  # hashes: nil
    for fn, args in ((u.hget, ("pa2:7", "t")), (u.set, ("pa2:new", "1")),
                     (u.exists, ("pa2:1",)), (u.mget, ("pa1:1", "pa2:1")),
                     (u.delete, ("pa1:1", "pa2:1")),
                     (u.copy, ("pa1:1", "pa2:copy"))):
        assert err(fn, *args) == NOPERM_KEY, fn
    assert admin.exists("pa2:new", "pa2:copy") == 0
    assert admin.exists("pa1:1") == 1
    # Index queries are for nodes (each filters its share, see above).
    assert "not a proxy" in err(u.execute_command, "FT.SEARCH", "pidx", "*")
    log = pa.acl_log()
    assert sum(e["count"] for e in log) == 6  # alike ones grouped
    assert {e["username"] for e in log} == {"pu"}
    assert {e["object"] for e in log} >= {"pa2:7", "pa2:new", "pa2:1"}
    # Edited on the proxy, applied on every node.
    pa.execute_command("ACL", "SETUSER", "pu", "-hget")
    ok, _ = pkcluster.wait_until(lambda: all(
        "-hget" in " ".join(redis.Redis(host=n.host, port=n.port,
                                        decode_responses=True).acl_list())
        for n in fwd_cluster.nodes), 10)
    assert ok
    assert "no permissions to run the 'hget'" in err(u.hget, "pa1:7", "t")
    pa.acl_deluser("pu")
    ok, _ = pkcluster.wait_until(lambda: "pu" not in admin.acl_users(), 10)
    assert ok
    u.close()
    pa.close()
    admin.close()


def test_cluster_password_through_proxy(fwd_cluster, acl_proxy):
    """CONFIG SET requirepass on one node gives every node's default user
    that password; the proxy's links still reach the nodes (they present
    the cluster secret) and the proxy asks its own clients for it."""
    import cluster as pkcluster
    n0 = fwd_cluster.nodes[0]
    admin = redis.Redis(host=n0.host, port=n0.port, decode_responses=True)
    admin.set("pw:k", "v")
    assert admin.config_set("requirepass", "dpw") is True
    try:
        # NOAUTH, on a new connection (logged-in ones stay so).
        for h, p in [(n.host, n.port) for n in fwd_cluster.nodes] + [
                (acl_proxy.host, acl_proxy.port)]:
            ok, _ = pkcluster.wait_until(lambda: "required" in _err_or(
                redis.Redis(host=h, port=p).ping), 10)
            assert ok, p
        c = redis.Redis(host=acl_proxy.host, port=acl_proxy.port,
                        password="dpw", decode_responses=True)
        for i in range(30):  # keys on every node
            assert c.set("pw:%d" % i, str(i)) is True
            assert c.get("pw:%d" % i) == str(i)
        assert c.get("pw:k") == "v"
        c.close()
    finally:
        a = redis.Redis(host=n0.host, port=n0.port, password="dpw",
                        decode_responses=True)
        a.config_set("requirepass", "")
        a.close()
        ok, _ = pkcluster.wait_until(lambda: all(
            _err_or(redis.Redis(host=n.host, port=n.port).ping) == "True"
            for n in fwd_cluster.nodes), 10)
        assert ok
        admin.close()


def _err_or(fn):
    try:
        return str(fn())
    except redis.exceptions.RedisError as e:
        return str(e)
