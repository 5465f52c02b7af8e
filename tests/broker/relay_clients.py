"""Ordinary HTTP clients through the broker, as a sandbox's are: a TCP
listener on loopback relays each connection to the session's unix socket
(what bulkhead-init's relay does at 127.0.0.1:3128 inside), and requests and
urllib use it as their proxy, trusting the broker's CA; or pip downloads a
wheel from a simple index (the upstream serves INDEX_DIR) the same way.
  relay_clients.py SOCKET BROKER_CA PORT [pip INDEX_DIR OUT_DIR]"""
import os
import socket
import ssl
import subprocess
import sys
import threading
import urllib.request
import zipfile

sock_path, broker_ca, port = sys.argv[1], sys.argv[2], int(sys.argv[3])


def pipe(a, b):
    try:
        while True:
            data = a.recv(65536)
            if not data:
                break
            b.sendall(data)
    except OSError:
        pass
    finally:
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def relay(listener):
    while True:
        client, _ = listener.accept()
        upstream = socket.socket(socket.AF_UNIX)
        upstream.connect(sock_path)
        threading.Thread(target=pipe, args=(client, upstream), daemon=True).start()
        threading.Thread(target=pipe, args=(upstream, client), daemon=True).start()


listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen(16)
threading.Thread(target=relay, args=(listener,), daemon=True).start()
proxy = "http://127.0.0.1:%d" % listener.getsockname()[1]
proxies = {"http": proxy, "https": proxy}



def pip_download(index_dir, out_dir):
    """A one-module wheel and its PEP 503 page, then pip through the relay."""
    os.makedirs(os.path.join(index_dir, "simple", "bhdemo"), exist_ok=True)
    os.makedirs(os.path.join(index_dir, "files"), exist_ok=True)
    name = "bhdemo-1.0-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(index_dir, "files", name), "w") as z:
        z.writestr("bhdemo/__init__.py", "VALUE = 1\n")
        z.writestr("bhdemo-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: bhdemo\nVersion: 1.0\n")
        z.writestr("bhdemo-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        z.writestr("bhdemo-1.0.dist-info/RECORD", "")
    with open(os.path.join(index_dir, "simple", "bhdemo", "index.html"), "w") as f:
        f.write('<html><body><a href="/files/%s">%s</a></body></html>\n' % (name, name))
    # The host's pip settings and CA variables (REQUESTS_CA_BUNDLE wins over
    # --cert) would stand in for the broker's: this pip sees what a
    # profile's sandbox is given, the CA bundle in those variables.
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PIP_") and "CA_BUNDLE" not in k and not k.startswith("SSL_CERT")}
    env.update(PIP_CONFIG_FILE=os.devnull, REQUESTS_CA_BUNDLE=broker_ca, SSL_CERT_FILE=broker_ca)
    p = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-cache-dir",
                        "--disable-pip-version-check", "--index-url",
                        "https://api.test:%d/simple/" % port, "--proxy", proxy, "-d", out_dir, "bhdemo==1.0"], capture_output=True, text=True, env=env,
                       timeout=120)
    if p.returncode != 0:
        print(p.stdout, p.stderr)
    print("pip", p.returncode, sorted(os.listdir(out_dir)))


if len(sys.argv) > 4 and sys.argv[4] == "pip":
    pip_download(sys.argv[5], sys.argv[6])
    sys.exit(0)

import requests  # noqa: E402 (only the clients' mode needs it)

r = requests.get("https://api.test:%d/v1/echo" % port, proxies=proxies, verify=broker_ca, timeout=10)
print("requests https", r.status_code, r.text)
r = requests.get("http://api.test:%d/v1/items" % port, proxies=proxies, timeout=10)
print("requests http", r.status_code, r.text)
r = requests.get("https://api.test:%d/v1/nope" % port, proxies=proxies, verify=broker_ca, timeout=10)
print("requests refused", r.status_code, r.headers.get("X-Bulkhead-Refusal"))
opener = urllib.request.build_opener(
    urllib.request.ProxyHandler(proxies),
    urllib.request.HTTPSHandler(context=ssl.create_default_context(cafile=broker_ca)))
with opener.open("https://api.test:%d/v1/items/9" % port, timeout=10) as resp:
    print("urllib https", resp.status, resp.read().decode())
