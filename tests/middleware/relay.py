#!/usr/bin/env python3
"""Carry TCP connections between two network namespaces through a Unix socket file (which every
network namespace reaches by its path), for out-of-band exchanges such as ucx_perftest's:

  relay.py unix-to-tcp SOCKET PORT   accept on SOCKET, connect each to 127.0.0.1:PORT
  relay.py tcp-to-unix PORT SOCKET   accept on 127.0.0.1:PORT, connect each to SOCKET

Serves connections until killed (or 60 s without one)."""
import os
import socket
import sys
import threading
import time


def pump(a, b):
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


def main():
    mode = sys.argv[1]
    if mode == "unix-to-tcp":
        path, port = sys.argv[2], int(sys.argv[3])
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        if os.path.exists(path):
            os.unlink(path)
        # The file appears only once it is listening (the other side waits for it): bound under
        # another name, renamed after listen().
        listener.bind(path + ".binding")

        def connect():
            return socket.create_connection(("127.0.0.1", port))
    else:
        port, path = int(sys.argv[2]), sys.argv[3]
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", port))

        def connect():
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(path)
            return s
    listener.listen(8)
    if mode == "unix-to-tcp":
        os.rename(path + ".binding", path)
    listener.settimeout(120)  # a hang guard: the peer connects within seconds
    while True:
        try:
            a, _ = listener.accept()
        except socket.timeout:
            return
        # The far side's server may not listen yet (it starts beside this relay): retried for
        # up to 60 s (a hang guard), as a loaded machine may take seconds to start it.
        deadline = time.monotonic() + 60
        while True:
            try:
                b = connect()
                break
            except OSError:
                if time.monotonic() > deadline:
                    b = None
                    break
                time.sleep(0.05)
        if b is None:
            a.close()
            continue
        for x, y in ((a, b), (b, a)):
            threading.Thread(target=pump, args=(x, y), daemon=True).start()


if __name__ == "__main__":
    main()
