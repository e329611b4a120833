"""A loopback TCP proxy in front of the broker, to cut, freeze and slow its connections.

The embedded broker loses its data when it restarts (memory storage), so the
fault suite simulates an outage between the clients and a broker that keeps
running: the broker advertises the proxy's port, every client connection goes
through it, and the suite switches it between ``up``, ``refuse`` (connections
reset and refused, like a stopped broker) and ``freeze`` (connections accepted
and held without a byte, like a hung one). ``delay_s`` slows every chunk.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import Literal

Mode = Literal["up", "refuse", "freeze"]


class BrokerProxy:
    """Forwards ``127.0.0.1:port`` to ``127.0.0.1:target_port`` in a background thread."""

    def __init__(self, port: int, target_port: int, host: str = "127.0.0.1") -> None:
        self.host = host
        self.port = port
        self.target_port = target_port
        self.mode: Mode = "up"
        self.delay_s = 0.0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self.connections = 0

    def start(self) -> BrokerProxy:
        """Listen and forward (mode ``up``)."""
        self._thread.start()
        self._call(self._listen())
        return self

    def stop(self) -> None:
        """Close everything and end the thread."""
        self._call(self._close(stop_listening=True))
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    def set_mode(self, mode: Mode) -> None:
        """Switch to ``mode``; ``refuse`` and ``freeze`` drop the current connections."""
        self.mode = mode
        if mode == "refuse":
            self._call(self._close(stop_listening=True))
        elif mode == "freeze":
            self._call(self._close(stop_listening=False))
            self._call(self._listen())
        else:
            self._call(self._listen())

    def _call(self, coroutine: object) -> None:
        asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(10)  # type: ignore[arg-type]

    async def _listen(self) -> None:
        if self._server is None:
            self._server = await asyncio.start_server(
                self._serve, self.host, self.port, reuse_address=True
            )

    async def _close(self, stop_listening: bool) -> None:
        if stop_listening and self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        for writer in list(self._writers):
            writer.transport.abort()
        self._writers.clear()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self._writers.add(writer)
        if self.mode != "up":  # frozen: hold the connection, say nothing
            with contextlib.suppress(Exception):
                await reader.read()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(self.host, self.target_port)
        except OSError:
            writer.transport.abort()
            return
        self._writers.add(up_writer)
        await asyncio.gather(
            self._pipe(reader, up_writer), self._pipe(up_reader, writer), return_exceptions=True
        )

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while self.mode == "up":
                data = await reader.read(65536)
                if not data:
                    break
                if self.delay_s:
                    await asyncio.sleep(self.delay_s)
                writer.write(data)
                await writer.drain()
        finally:
            writer.transport.abort()
            self._writers.discard(writer)
