"""Serving the console on loopback: ``mini-scheduler console`` in the foreground, ``make run`` in
a thread beside its scheduler. The socket is bound here, on 127.0.0.1 only, before the server
starts, so the URL printed is the one served (port 0 picks a free port)."""

from __future__ import annotations

import socket
import threading
from typing import Any, Final

HOST: Final = "127.0.0.1"
DEFAULT_PORT: Final = 8765


class ConsoleServer:
    """uvicorn serving an app on ``127.0.0.1:port``. ``url`` is known once constructed (the
    socket is bound then: a port in use fails here, with OSError), before the app exists."""

    def __init__(self, port: int = DEFAULT_PORT) -> None:
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self._socket.bind((HOST, port))
            # Listening at once holds the port: a socket that is only bound does not stop
            # another SO_REUSEADDR socket binding it too (Linux), and a browser that connects
            # before the server thread runs waits in the backlog rather than being refused.
            self._socket.listen(128)
        except OSError:
            self._socket.close()
            raise
        self.port: int = self._socket.getsockname()[1]
        self._server: Any = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}/"

    def serve(self, app: Any) -> None:
        """Serve ``app`` until :meth:`stop` (or Ctrl-C, in the foreground)."""
        import uvicorn

        config = uvicorn.Config(
            app,
            log_config=None,  # leave the logging as the caller set it up (make run's lines)
            log_level="warning",
            access_log=False,
            lifespan="off",
            server_header=False,
        )
        self._server = uvicorn.Server(config)
        self._server.run(sockets=[self._socket])

    def start(self, app: Any) -> None:
        """Serve ``app`` in a background thread."""
        self._thread = threading.Thread(target=self.serve, args=(app,), name="console", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout)
        self._socket.close()
