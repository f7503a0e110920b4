"""Where blobs live under a store's root: the one definition of the key layout.

Invariants:

- A blob is stored at ``<root>/sha256/<first two hex digits>/<all 64 hex digits>``. The path
  derives from the bytes alone (filenames and media types never enter it), so identical bytes
  land on one object whoever stores them. The algorithm names the directory, so another one can
  be added beside it without moving anything; the two-digit shard keeps directories small.
- Only lower-case hex digests are accepted as addresses, so no caller-supplied string can reach
  outside the layout (no ``..``, no ``/``).
- Writes are staged at ``<root>/tmp/<uuid4 hex>`` before they are moved onto their key.
  Staging objects are never blobs: listings skip them, and only names of that shape are ever
  swept as staging leftovers.
- A namespace (one per tenant, unless deduplication is global) is the same layout under
  ``<root>/tenants/<namespace>``: identical bytes are stored once per namespace, so no tenant's
  timing or errors depend on what another tenant stored. The shared namespace is ``""``, the
  root itself. Namespace names are lower-case hex too, so they cannot escape the layout either.
"""

from __future__ import annotations

import posixpath
import re
import uuid
from typing import Final

from convstore.errors import InvalidInputError

ALGORITHM: Final = "sha256"
STAGING_DIR: Final = "tmp"
NAMESPACES_DIR: Final = "tenants"

_DIGEST: Final = re.compile(r"[0-9a-f]{64}")
_NAMESPACE: Final = re.compile(r"[0-9a-f]{1,64}")


def namespace_root(root: str, namespace: str) -> str:
    """The root of a namespace's layout (``""``: the shared namespace, ``root`` itself)."""
    if not namespace:
        return root
    if not _NAMESPACE.fullmatch(namespace):
        raise InvalidInputError(f"not a blob namespace: {namespace!r}")
    return f"{root}/{NAMESPACES_DIR}/{namespace}"


def namespaces_dir(root: str) -> str:
    """The directory holding every namespace but the shared one."""
    return f"{root}/{NAMESPACES_DIR}"


_STAGING_NAME: Final = re.compile(r"[0-9a-f]{32}")


def require_digest(sha256: str) -> str:
    """``sha256`` itself if it is a lower-case hex SHA-256 digest, else `InvalidInputError`."""
    if not _DIGEST.fullmatch(sha256):
        raise InvalidInputError(f"not a lower-case hex SHA-256 digest: {sha256!r}")
    return sha256


def blobs_dir(root: str) -> str:
    """The directory that holds every shard of blobs."""
    return f"{root}/{ALGORITHM}"


def blob_path(root: str, sha256: str) -> str:
    """The path of the blob with that (already validated) digest."""
    return f"{blobs_dir(root)}/{sha256[:2]}/{sha256}"


def staging_dir(root: str) -> str:
    """The directory writes are staged in."""
    return f"{root}/{STAGING_DIR}"


def staging_path(root: str) -> str:
    """A fresh, unique path to stage one write at."""
    return f"{staging_dir(root)}/{uuid.uuid4().hex}"


def is_staging_path(path: str) -> bool:
    """Whether ``path`` is named as `staging_path` names them (a uuid4 in hex).

    Garbage collection removes only these: anything else under ``tmp/`` is not the store's.
    """
    return _STAGING_NAME.fullmatch(posixpath.basename(path.rstrip("/"))) is not None


def digest_at(path: str) -> str | None:
    """The digest a listed object is stored under, or ``None`` if it is not a blob's path."""
    shard_dir, _, name = path.rstrip("/").rpartition("/")
    if _DIGEST.fullmatch(name) and shard_dir.rpartition("/")[2] == name[:2]:
        return name
    return None
