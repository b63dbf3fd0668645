"""A TCP forwarder: the real node's one way to the API server and the S3 server.

The API server and the S3 server listen on 127.0.0.1 only, and the node lives in its own
network namespace, where that address is the namespace's own loopback. One forwarder
listens on the host end of the node's veth pair (an address testenv chose, reachable only
from that namespace) and relays every connection to the API server (and the S3 server);
TLS passes through untouched. Another, started inside the node's namespace, is the
cluster's Service network as kube-proxy's userspace mode was: it listens on each
Service's ClusterIP and port (addresses of the node's namespace) and relays to the host
end, so a Pod reaches ``kubernetes.default`` and the object store by their Services.

    python -m testenv.forward LISTEN_ADDR LISTEN_PORT TARGET_ADDR TARGET_PORT [...]
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
        with contextlib.suppress(Exception):  # the peer gone already
            writer.close()


async def _serve(routes: list[tuple[str, int, str, int]]) -> None:
    servers = [await _listen(*route) for route in routes]
    await asyncio.gather(*(s.serve_forever() for s in servers))


async def _listen(listen: str, lport: int, target: str, tport: int) -> asyncio.Server:
    async def handle(cr: asyncio.StreamReader, cw: asyncio.StreamWriter) -> None:
        try:
            ur, uw = await asyncio.open_connection(target, tport)
        except OSError:
            cw.close()
            return
        await asyncio.gather(_pipe(cr, uw), _pipe(ur, cw))

    return await asyncio.start_server(handle, listen, lport)


def main(argv: list[str]) -> int:
    args = argv[1:]
    if not args or len(args) % 4:
        sys.stderr.write(__doc__.rsplit("\n\n", 1)[1])
        return 2
    routes = [
        (args[i], int(args[i + 1]), args[i + 2], int(args[i + 3])) for i in range(0, len(args), 4)
    ]
    asyncio.run(_serve(routes))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
