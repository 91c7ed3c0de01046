"""Test certificates, made with the openssl command (make test installs
it): a CA, and node certificates for 127.0.0.1 and localhost that it
signs.  Used by test_tls.py and the network fuzzer's TLS runs."""
import os
import re
import subprocess
import time


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True,
                   capture_output=True, timeout=60)


def make_ca(d, name):
    """name.crt/.key in d: a self-signed CA."""
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt",
            "ec_paramgen_curve:P-256", "-nodes", "-days", "30",
            "-keyout", name + ".key", "-out", name + ".crt",
            "-subj", "/CN=" + name, cwd=d)


def make_cert(d, name, ca):
    """name.crt/.key in d for 127.0.0.1 and localhost, signed by ca."""
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
            "-nodes", "-keyout", name + ".key", "-out", name + ".csr",
            "-subj", "/CN=localhost", cwd=d)
    with open(os.path.join(d, name + ".ext"), "w") as f:
        f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\n"
                "extendedKeyUsage=serverAuth,clientAuth\n")
    openssl("x509", "-req", "-in", name + ".csr", "-CA", ca + ".crt",
            "-CAkey", ca + ".key", "-CAcreateserial", "-days", "30",
            "-out", name + ".crt", "-extfile", name + ".ext", cwd=d)


TLS_RE = re.compile(r"^partkv: tls on (\S+):(\d+)$")


def tls_port(proc, timeout=10.0):
    """The port of a started node's or proxy's TLS listener, from the
    'partkv: tls on H:P' line it prints after its ready line."""
    deadline = time.monotonic() + timeout
    while True:
        for line in proc._out_lines:
            m = TLS_RE.match(line)
            if m:
                return int(m.group(2))
        if time.monotonic() > deadline:
            proc.stop()
            raise AssertionError("no 'partkv: tls on' line:\n" +
                                 proc.logs())
        time.sleep(0.02)
