"""A persistent compilation cache: serialized executables in a directory.

jax's own persistent cache only covers jax's compile path, so shardkit keeps one for its direct
``compile_and_load``. Opt in with ``set_cache_dir(path)`` or the ``SHARDKIT_COMPILATION_CACHE_DIR``
environment variable.

Key: sha256 over the module's text without locations (where in the caller's code it was lowered does not
change the program), ``CompileOptions.SerializeAsString()`` (device assignment, partition
count, partitioner and flags), the devices' platform, kind and id, the platform version and jaxlib's version.
Entry: a magic line, the entry's own key (64 hex digits and a newline), the sha256 of key and payload, then
jaxlib's serialized executable. A read checks the magic and checksum before jaxlib sees a byte, so a
truncated or corrupt entry is a miss (and is replaced), never a crash. It also checks the key against the one
asked for, because the checksum proves integrity, not identity: an entry renamed or copied over another's
file is a miss with a warning (and is replaced), never another program's executable. Writes go to a
temporary file in the same directory and are renamed into place, so concurrent writers never expose a
half-written entry (the last rename wins; both are complete).
Loading an executable may run its code: only point the cache at a directory you trust.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jaxlib

from shardkit import _jaxlib

ENV_VAR = "SHARDKIT_COMPILATION_CACHE_DIR"
_MAGIC = b"shardkit-executable-2\n"
_KEY_BYTES = 65  # the hex key and a newline
_explicit: list[Path | None] = [None]


def set_cache_dir(path: str | os.PathLike | None) -> None:
    """Turns the persistent cache on (a directory, created if needed) or off (None; the env var then applies)."""
    _explicit[0] = None if path is None else Path(path)


def cache_dir() -> Path | None:
    """The directory in use: the one set with ``set_cache_dir``, else ``$SHARDKIT_COMPILATION_CACHE_DIR``, else None."""
    if _explicit[0] is not None:
        return _explicit[0]
    env = os.environ.get(ENV_VAR)
    return Path(env) if env else None


def cache_key(module_text: bytes, options: _jaxlib.CompileOptions, devices: Sequence[Any]) -> str:
    h = hashlib.sha256()
    client = devices[0].client
    parts = [
        module_text,
        options.SerializeAsString(),
        repr([(d.platform, d.device_kind, d.id) for d in devices]).encode(),
        client.platform_version.encode(),
        jaxlib.version.__version__.encode(),
    ]
    for part in parts:
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    return h.hexdigest()


def load(
    directory: Path, key: str, devices: Any, options: _jaxlib.CompileOptions, host_callbacks: Sequence[Any] = ()
) -> Any | None:
    """The cached executable, or None on a miss, an unreadable entry (which is removed) or an entry that holds
    another key's executable (a warning; the caller's ``store`` then replaces it).

    ``host_callbacks`` are the Python functions the program calls back (by index): the serialized executable names
    them but cannot hold them, so each load hands over the current lowering's.
    """
    path = directory / f"{key}.skx"
    try:
        data = path.read_bytes()
    except OSError:
        return None
    stored_key, payload = _unpack(data)
    if stored_key is None:
        _remove(path)
        return None
    if stored_key != key.encode():
        warnings.warn(
            f"shardkit's compilation cache entry {path} holds the executable of another program (key "
            f"{stored_key.decode(errors='replace')[:16]}...); it was renamed or copied over this one. Compiling "
            "instead.",
            RuntimeWarning,
            stacklevel=2,
        )
        return None
    client = devices[0].client
    try:
        return client.deserialize_executable(payload, devices, options, host_callbacks=list(host_callbacks))
    except Exception:  # jaxlib's own error types: an entry this jaxlib cannot load is a miss
        _remove(path)
        return None


def store(directory: Path, key: str, executable: Any) -> None:
    """Writes the entry atomically; a cache that cannot be written is skipped, never an error."""
    tmp = None
    try:
        payload = executable.client.serialize_executable(executable)
        directory.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{key}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(_pack(key, payload))
        os.replace(tmp, directory / f"{key}.skx")
    except Exception:  # serialization unsupported on this backend, disk full, read-only directory, ...
        if tmp is not None:
            _remove(Path(tmp))


def _pack(key: str, payload: bytes) -> bytes:
    stored = key.encode() + b"\n"
    return _MAGIC + stored + hashlib.sha256(stored + payload).digest() + payload


def _unpack(data: bytes) -> tuple[bytes | None, bytes]:
    """(the entry's key, its payload); key None when the entry is not a complete, intact one."""
    start = len(_MAGIC)
    head = start + _KEY_BYTES + 32
    stored, digest, payload = data[start : start + _KEY_BYTES], data[start + _KEY_BYTES : head], data[head:]
    if data[:start] != _MAGIC or len(data) < head or hashlib.sha256(stored + payload).digest() != digest:
        return None, b""
    return stored[:-1], payload


def _remove(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()
