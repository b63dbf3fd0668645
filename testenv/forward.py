"""A TCP forwarder: the real node's one way to the API server.

The API server listens on 127.0.0.1 only, and the node lives in its own network namespace,
where that address is the namespace's own loopback. This process listens on the host end
of the node's veth pair (an address testenv chose, reachable only from that namespace) and
relays every connection to the API server; TLS passes through untouched.

    python -m testenv.forward LISTEN_ADDR LISTEN_PORT TARGET_ADDR TARGET_PORT
"""

from __future__ import annotations

import asyncio
import contextlib
import sys


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        with contextlib.suppress(Exception):
            writer.close()


async def _serve(listen: str, lport: int, target: str, tport: int) -> None:
    async def handle(cr: asyncio.StreamReader, cw: asyncio.StreamWriter) -> None:
        try:
            ur, uw = await asyncio.open_connection(target, tport)
        except OSError:
            cw.close()
            return
        await asyncio.gather(_pipe(cr, uw), _pipe(ur, cw))

    server = await asyncio.start_server(handle, listen, lport)
    async with server:
        await server.serve_forever()


def main(argv: list[str]) -> int:
    listen, lport, target, tport = argv[1], int(argv[2]), argv[3], int(argv[4])
    asyncio.run(_serve(listen, lport, target, tport))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
