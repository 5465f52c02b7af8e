"""Ordinary HTTP clients through the broker, as a sandbox's are: a TCP
listener on loopback relays each connection to the session's unix socket
(what bulkhead-init's relay does at 127.0.0.1:3128 inside), and requests and
urllib use it as their proxy, trusting the broker's CA.
  relay_clients.py SOCKET BROKER_CA PORT"""
import socket
import sys
import threading
import urllib.request

import requests

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

r = requests.get("https://api.test:%d/v1/echo" % port, proxies=proxies, verify=broker_ca, timeout=10)
print("requests https", r.status_code, r.text)
r = requests.get("http://api.test:%d/v1/items" % port, proxies=proxies, timeout=10)
print("requests http", r.status_code, r.text)
r = requests.get("https://api.test:%d/v1/nope" % port, proxies=proxies, verify=broker_ca, timeout=10)
print("requests refused", r.status_code, r.headers.get("X-Bulkhead-Refusal"))
opener = urllib.request.build_opener(
    urllib.request.ProxyHandler(proxies),
    urllib.request.HTTPSHandler(context=__import__("ssl").create_default_context(cafile=broker_ca)))
with opener.open("https://api.test:%d/v1/items/9" % port, timeout=10) as resp:
    print("urllib https", resp.status, resp.read().decode())
