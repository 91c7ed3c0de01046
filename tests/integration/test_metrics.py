"""The Prometheus endpoint (--metrics-port): GET /metrics parses with the
prometheus_client text parser, and its figures follow what the node did:
commands, keys per partition, the latency histogram per command class,
hot keys as labelled gauges (keys that need escaping too)."""
import re
import time
import urllib.error
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

pytestmark = pytest.mark.partkv_only


def metrics_url(srv):
    def port():
        m = re.search(r"partkv: metrics on [0-9.]+:(\d+)", srv.logs())
        return m and int(m.group(1))
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not port():
        time.sleep(0.05)
    assert port(), srv.logs()
    return "http://127.0.0.1:%d" % port()


def scrape(url):
    with urllib.request.urlopen(url + "/metrics", timeout=10) as resp:
        assert resp.status == 200
        assert resp.headers["Content-Type"].startswith(
            "text/plain; version=0.0.4")
        text = resp.read().decode()
    return {f.name: f for f in text_string_to_metric_families(text)}


def samples(fam, name=None, **labels):
    return [s for s in fam.samples
            if (name is None or s.name == name) and
            all(s.labels.get(k) == v for k, v in labels.items())]


def test_metrics_follow_the_node(server_factory):
    srv = server_factory(extra=["--metrics-port", "0", "--hotkeys-sample",
                                "1"])
    url = metrics_url(srv)
    r = srv.client()
    for i in range(100):
        r.set("k%d" % i, "v")
    odd = 'hot"key\\with\nodd bytes'
    for _ in range(300):
        r.incr(odd)
        r.get("k1")
    time.sleep(1.2)  # a tick of the hot key tracker
    fams = scrape(url)
    assert samples(fams["partkv_commands"])[0].value >= 700
    assert samples(fams["partkv_keys"])[0].value == 101
    assert samples(fams["partkv_partition_keys"], partition="0",
                   role="leader")[0].value == 101
    hist = fams["partkv_command_duration_seconds"]
    assert hist.type == "histogram"
    count = samples(hist, "partkv_command_duration_seconds_count",
                    **{"class": "write"})[0].value
    assert count >= 400
    inf = samples(hist, "partkv_command_duration_seconds_bucket",
                  **{"class": "write", "le": "+Inf"})[0].value
    assert inf == count
    buckets = [s.value for s in samples(
        hist, "partkv_command_duration_seconds_bucket", **{"class": "read"})]
    assert buckets == sorted(buckets) and buckets[-1] >= 300
    hot = {s.labels["key"]: s.value for s in
           fams["partkv_hot_key_writes_per_second"].samples}
    assert hot.get(odd, 0) > 0, hot
    reads = {s.labels["key"]: s.value for s in
             fams["partkv_hot_key_reads_per_second"].samples}
    assert reads.get("k1", 0) > 0
    assert samples(fams["partkv_partition_network_bytes_in"])[0] \
        .value > 0
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(url + "/other", timeout=10)
    assert e.value.code == 404


def test_bad_metrics_port(partkv):
    p = partkv("server", "--metrics-port", "70000", check=False, timeout=10)
    assert p.returncode == 2 and "--metrics-port" in p.stderr
