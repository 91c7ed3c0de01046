"""tests/integration/etcd.py's Etcd, with each member on its own loopback
address (127.0.0.X) instead of 127.0.0.1, so that iptables rules can cut
the nodes' traffic to etcd without touching anything else; and a way to
find the member that is the raft leader.
"""
import json
import shutil
import signal
import socket
import urllib.request

from etcd import Etcd


def free_port_on(host):
    s = socket.socket()
    try:
        s.bind((host, 0))
        return s.getsockname()[1]
    finally:
        s.close()


class HostEtcd(Etcd):
    """Etcd(n) with member i listening (client and peer URLs) on hosts[i]."""

    def __init__(self, hosts):
        super().__init__(len(hosts))
        self.hosts = list(hosts)
        for m, h in zip(self.members, self.hosts):
            m["host"] = h
            m["client"] = free_port_on(h)
            m["peer"] = free_port_on(h)
        self.cluster = ",".join("%s=http://%s:%d" % (m["name"], m["host"],
                                                     m["peer"])
                                for m in self.members)
        self.endpoints = ",".join("%s:%d" % (m["host"], m["client"])
                                  for m in self.members)

    def argv(self, m):
        a = super().argv(m)
        # Every 127.0.0.1 of the parent's argv becomes the member's host.
        return [x.replace("127.0.0.1", m["host"]) for x in a]

    def url(self, i, path):
        m = self.members[i]
        return "http://%s:%d%s" % (m["host"], m["client"], path)

    def healthy(self, i):
        try:
            with urllib.request.urlopen(self.url(i, "/health"),
                                        timeout=1.0) as r:
                return b'"true"' in r.read()
        except Exception:
            return False

    def status(self, i, timeout=1.0):
        """/v3/maintenance/status of member i (dict), or None."""
        req = urllib.request.Request(self.url(i, "/v3/maintenance/status"),
                                     data=b"{}", method="POST")
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return json.loads(r.read())
        except Exception:
            return None

    def leader(self):
        """Index of the member that is the raft leader right now, or None."""
        for i in range(len(self.members)):
            if not self.alive(i):
                continue
            st = self.status(i)
            if not st:
                continue
            me = st.get("header", {}).get("member_id")
            if me is not None and me == st.get("leader"):
                return i
        return None

    def stop(self):
        """SIGKILL every member (by PID) and remove the data: a clean stop
        of a 3-member etcd takes seconds, and nothing of it is kept."""
        for i in range(len(self.members)):
            self.signal_member(i, signal.SIGKILL)
        for m in self.members:
            if m["proc"] is not None:
                m["proc"].wait(10)
        shutil.rmtree(self.root, ignore_errors=True)
