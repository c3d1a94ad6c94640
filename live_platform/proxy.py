"""A TCP link to the site that a test or bench can cut and heal, as a network partition would."""
import socket
import threading


class CuttableProxy:
    """A TCP forwarder on a free local port to `target` ((host, port)), whose link can be cut: while
    cut, every connection open through it is closed and new ones are accepted and reset at once (the
    far side seems unreachable; the port stays this proxy's). A client given `url` from the start can
    so be partitioned from the target, and healed, without touching the client."""

    def __init__(self, target):
        self.target = target
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._cut = threading.Event()
        self._open, self._lock = set(), threading.Lock()
        self._closed = False
        threading.Thread(target=self._accept_loop, name=f"proxy-{self.port}", daemon=True).start()

    @property
    def is_cut(self):
        return self._cut.is_set()

    def cut(self):
        self._cut.set()
        with self._lock:
            for sock in list(self._open):
                self._reset(sock)
            self._open.clear()

    def heal(self):
        self._cut.clear()

    def close(self):
        self._closed = True
        self.cut()
        self._listener.close()

    @staticmethod
    def _reset(sock):
        """Close at once: a shutdown wakes the pump blocked reading it (a bare close would not, and the
        client would wait for its read timeout), and the linger of 0 makes the close a reset."""
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        try:
            sock.close()
        except OSError:
            pass

    def _accept_loop(self):
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if self._cut.is_set():
                self._reset(client)
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=5)
                upstream.settimeout(None)
            except OSError:
                self._reset(client)
                continue
            with self._lock:
                if self._cut.is_set():
                    self._reset(client)
                    self._reset(upstream)
                    continue
                self._open.update((client, upstream))
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    def _pump(self, source, sink):
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                sink.sendall(data)
        except OSError:
            pass
        finally:
            with self._lock:
                for sock in (source, sink):
                    if sock in self._open:
                        self._open.discard(sock)
                        try:
                            sock.shutdown(socket.SHUT_RDWR)
                        except OSError:
                            pass
                        sock.close()
