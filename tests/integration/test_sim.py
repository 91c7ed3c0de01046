"""`partkv sim`: the reference experiments against an independent Python
implementation, `sim compare` on generated and file keys, and bad flags."""
import json

import pytest

import simref

EXPECTED = simref.reference()


@pytest.fixture(scope="module")
def ref_json(partkv):
    return json.loads(partkv("sim", "reference", "--json").stdout)


def close(a, b):
    return abs(a - b) < 1e-9


def test_modn(ref_json):
    assert len(ref_json["modn"]) == 4
    for got, want in zip(ref_json["modn"], EXPECTED["modn"]):
        assert (got["from"], got["to"]) == (want["from"], want["to"])
        assert close(got["moved_pct"], want["moved_pct"]), (got, want)


def test_ring_vnodes(ref_json):
    for got, want in zip(ref_json["ring"], EXPECTED["ring"]):
        assert got["vnodes"] == want["vnodes"]
        assert got["points"] == want["points"]
        assert got["counts"] == want["counts"]
        assert close(got["deviation_pct"], want["deviation_pct"])


def test_ring_add_remove(ref_json):
    for exp in ("ring_add", "ring_remove"):
        assert ref_json[exp]["counts"] == EXPECTED[exp]["counts"], exp
        assert close(ref_json[exp]["moved_pct"], EXPECTED[exp]["moved_pct"])
    # Removing a node moves exactly that node's keys.
    ring150 = [r for r in EXPECTED["ring"] if r["vnodes"] == 150][0]
    vlc = ring150["counts"][1]
    assert close(ref_json["ring_remove"]["moved_pct"], 100.0 * vlc / 100000)


def test_weighted(ref_json):
    assert ref_json["weighted"] == EXPECTED["weighted"]


def test_rendezvous(ref_json):
    got, want = ref_json["rendezvous"], EXPECTED["rendezvous"]
    assert got["counts"] == want["counts"]
    for k in ("deviation_pct", "moved_pct", "replica_set_changed_pct"):
        assert close(got[k], want[k]), k
    assert got["deviation_pct"] < 1.0


def test_few_keys(ref_json):
    assert ref_json["few_keys"] == EXPECTED["few_keys"]
    assert len({k["partition"] for k in ref_json["few_keys"]}) > 1


def test_reference_tables(partkv):
    out = partkv("sim", "reference").stdout
    for title in ("1. mod-N", "2. Ring", "3. Ring", "4. Ring",
                  "5. Weighted", "6. Rendezvous", "7. Partition"):
        assert title in out
    assert "10 -> 11" in out


def compare(partkv, *args):
    out = json.loads(partkv("sim", "compare", "--json", *args).stdout)
    return {r["placement"]: r for r in out["results"]}, out


def test_compare_add(partkv):
    res, out = compare(partkv, "--nodes", "10", "--add", "1", "--gen",
                       "50000")
    assert out["after"] == 11
    assert set(res) == {"modulo", "ring", "rendezvous", "jump", "maglev",
                        "fixed"}
    opt = res["ring"]["optimum_pct"]
    assert abs(opt - 100 / 11) < 1e-6
    assert res["modulo"]["moved_pct"] > 80
    for p in ("rendezvous", "jump", "fixed"):
        assert res[p]["moved_pct"] < opt * 1.3, p
    assert res["ring"]["moved_pct"] < opt * 2


def test_compare_remove_from_file(partkv, tmp_path):
    keys = tmp_path / "keys.txt"
    keys.write_text("".join("user:%d\r\n" % i for i in range(20000)) + "\n")
    res, out = compare(partkv, "--nodes", "5", "--remove", "1", "--keys",
                       str(keys), "--hash", "murmur3", "--replicas", "2",
                       "--partitions", "1024")
    assert out["keys"] == 20000 and out["after"] == 4
    # Removing one of five nodes: the optimum is the removed node's share.
    assert abs(res["jump"]["optimum_pct"] - 20.0) < 1e-6
    assert res["fixed"]["moved_pct"] < 25


def test_compare_text(partkv):
    out = partkv("sim", "compare", "--nodes", "4", "--gen", "2000").stdout
    assert "placement" in out and "maglev" in out


@pytest.mark.parametrize("args", [
    ["sim", "compare"],
    ["sim", "compare", "--nodes", "x"],
    ["sim", "compare", "--nodes", "-3"],
    ["sim", "compare", "--nodes", "3", "--add", "1", "--remove", "1"],
    ["sim", "compare", "--nodes", "3", "--remove", "3"],
    ["sim", "compare", "--nodes", "3", "--hash", "sha1"],
    ["sim", "compare", "--nodes", "3", "--bogus"],
    ["sim", "compare", "--nodes", "3", "--keys", "/nonexistent/keys"],
    ["sim", "reference", "--bogus"],
    ["sim"],
    ["nosuchcommand"],
])
def test_bad_flags(partkv, args):
    p = partkv(*args, check=False)
    assert p.returncode == 2
    assert p.stderr.strip() and len(p.stderr.strip().splitlines()) == 1
    assert p.stdout == ""
