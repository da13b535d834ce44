"""A TCP proxy on 127.0.0.1 that a test can cut, as a network partition cuts one client off the
API server while every other client still reaches it.

While cut, nothing passes in either direction: bytes on open connections are held back (not
refused: a partition answers nothing), and new connections are accepted and left unanswered.
restore() closes every connection opened before or during the cut, as the partition's end
finds them broken, and lets new ones through again."""
import select
import socket
import threading
import time


class PartitionProxy:
    def __init__(self, target_host, target_port):
        self.target = (target_host, target_port)
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.lock = threading.Lock()
        self.cut_now = False
        self.connections = []  # (client, upstream or None)
        self.closing = False
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def cut(self):
        with self.lock:
            self.cut_now = True

    def restore(self):
        with self.lock:
            self.cut_now = False
            broken, self.connections = self.connections, []
        for pair in broken:
            _close(*pair)

    def close(self):
        self.closing = True
        self.restore()
        self.listener.close()

    def _accept(self):
        while not self.closing:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            with self.lock:
                if self.cut_now:
                    self.connections.append((client, None))  # held unanswered
                    continue
            try:
                upstream = socket.create_connection(self.target, timeout=10)
            except OSError:
                client.close()
                continue
            with self.lock:
                self.connections.append((client, upstream))
            threading.Thread(target=self._relay, args=(client, upstream), daemon=True).start()

    def _relay(self, client, upstream):
        peers = {client: upstream, upstream: client}
        try:
            while True:
                with self.lock:
                    cut = self.cut_now
                if cut:
                    time.sleep(0.05)  # held back, not refused
                    continue
                ready, _, _ = select.select(list(peers), [], [], 0.1)
                for sock in ready:
                    data = sock.recv(65536)
                    if not data:
                        return
                    peers[sock].sendall(data)
        except (OSError, ValueError):
            return
        finally:
            _close(client, upstream)


def _close(*socks):
    for sock in socks:
        if sock is None:
            continue
        try:
            sock.close()
        except OSError:
            pass
