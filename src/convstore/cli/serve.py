"""``convstore serve``: the read-only web inspector (`convstore.web`) on uvicorn.

Invariants:

- It binds to 127.0.0.1 unless ``--host`` says otherwise, and refuses any host outside the
  loopback range without a token (``--token`` or ``CONVSTORE_TOKEN``): a store full of other
  people's conversations is never served to a network unauthenticated.
- Requests must name an allowed host: this machine's loopback names, the ``--host`` it binds
  (when that is a name or a single address), and every ``--allowed-host``; anything else is
  421 (a page that rebinds its own name to this machine reads nothing).
- It opens only an existing database, and never writes to it.
"""

from __future__ import annotations

import argparse
import ipaddress
import sys

from convstore._http_guard import is_loopback
from convstore.cli.stores import existing_store
from convstore.errors import MissingDependencyError

__all__ = ["allowed_hosts", "is_loopback", "serve"]


def allowed_hosts(host: str, extra: list[str]) -> list[str]:
    """The Host names to answer: loopback names, the bound host unless a wildcard, ``extra``."""
    from convstore.web._guard import DEFAULT_HOSTS

    names = [*DEFAULT_HOSTS, *(name.strip().lower() for name in extra if name.strip())]
    bound = host.strip("[]").lower()
    try:
        wildcard = ipaddress.ip_address(bound).is_unspecified
    except ValueError:
        wildcard = False
    if bound and not wildcard:
        names.append(bound)
    return names


async def serve(args: argparse.Namespace) -> int:
    """Serve the inspector until interrupted."""
    if not is_loopback(args.host) and not args.token:
        print(
            f"convstore: serving on {args.host} (beyond this machine) needs --token or "
            "CONVSTORE_TOKEN",
            file=sys.stderr,
        )
        return 2
    try:
        from convstore.web import create_app
        from convstore.web._server import run
    except ImportError as exc:  # uvicorn, or the extra's others (a MissingDependencyError)
        raise MissingDependencyError("convstore serve", exc.name or "uvicorn", "web") from exc
    async with existing_store(args) as store:
        hosts = allowed_hosts(args.host, args.allowed_host)
        app = create_app(store, tenant=args.tenant, token=args.token, allowed_hosts=hosts)
        note = " (token required: open it once with ?token=...)" if args.token else ""

        def announce(host: str, port: int) -> None:
            shown = f"[{host}]" if ":" in host else host
            print(f"convstore inspector: http://{shown}:{port}/{note}", flush=True)

        await run(app, host=args.host, port=args.port, announce=announce, access_log=not args.quiet)
    return 0
