"""What tells a grown file from a rewritten one: stat fields and hashes around the cursor."""

from __future__ import annotations

import hashlib
import os
import sqlite3
from dataclasses import dataclass

HASH_BYTES = 4096


@dataclass
class Fingerprint:
    device: int
    inode: int
    size: int
    mtime_ns: int
    ctime_ns: int | None = None  # (not in ``matches``: a file renamed or linked takes a new one)

    @classmethod
    def of(cls, st: os.stat_result) -> "Fingerprint":
        return cls(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)

    def matches(self, row: sqlite3.Row) -> bool:
        return (self.device, self.inode, self.size, self.mtime_ns) == (
            row["device"], row["inode"], row["size"], row["mtime_ns"],
        )

    def untouched(self, row: sqlite3.Row) -> bool:
        """``matches``, its status unchanged too (a row stored before its ctime was kept:
        known by its size and time alone)."""
        return self.matches(row) and row["ctime_ns"] in (None, self.ctime_ns)


def hashes_at(fp, cursor: int) -> tuple[str, str]:
    """Hash of the head of the file and of the bytes just before ``cursor``.

    Read with ``pread``, so the position of a file being read does not move.
    """
    head = os.pread(fp.fileno(), min(HASH_BYTES, cursor), 0)
    start = max(0, cursor - HASH_BYTES)
    tail = os.pread(fp.fileno(), cursor - start, start)
    return _hash(head), _hash(tail)


def stream_hashes(stream, cursor: int) -> tuple[str, str] | None:
    """``hashes_at`` of a stream read forward (a compressed file's); None when it is shorter."""
    head = stream.read(min(HASH_BYTES, cursor))
    position = len(head)
    start = max(0, cursor - HASH_BYTES)
    while position < start:
        block = stream.read(min(start - position, 1 << 20))
        if not block:
            return None
        position += len(block)
    tail = head[start:] if start < len(head) else b""
    while position < cursor:
        block = stream.read(cursor - position)
        if not block:
            return None
        tail += block
        position += len(block)
    return _hash(head), _hash(tail)


def compressed_hashes_at(fp, cursor: int) -> tuple[str, str] | None:
    """``hashes_at`` of the decompressed bytes of the zstd file ``fp`` (what ``relocate``
    compares a copy with, once the file is gone). Read with ``pread`` too."""
    import zstandard

    with zstandard.ZstdDecompressor().stream_reader(_PRead(fp.fileno()), read_across_frames=True) as stream:
        return stream_hashes(stream, cursor)


def still_holds(fp, row) -> bool:
    """Whether the open regular file ``fp`` still holds the bytes its ``source_files``
    ``row`` fingerprinted: its head and the bytes just before the cursor hash as
    recorded (decompressed, for a ``.zst`` file), and a document or a text, read
    whole, is as long as it was (saved again, it may only have grown)."""
    cursor = row["cursor"]
    if row["compression"]:
        import zstandard

        try:
            hashes = compressed_hashes_at(fp, cursor)
        except zstandard.ZstdError:
            return False
    else:
        size = os.fstat(fp.fileno()).st_size
        if size < cursor or (row["layout"] in ("document", "text") and size != cursor):
            return False
        hashes = hashes_at(fp, cursor)
    return hashes == (row["head_hash"], row["tail_hash"])


def path_still_holds(path, row, inode: int | None = None) -> bool | None:
    """``still_holds`` of the file at ``path`` (False when it is another file than
    ``inode``), or None when it cannot be opened."""
    try:
        with open(path, "rb") as fp:
            return (inode is None or os.fstat(fp.fileno()).st_ino == inode) and still_holds(fp, row)
    except OSError:
        return None


class _PRead:
    """A forward reader over a file descriptor that leaves its position alone."""

    def __init__(self, fd: int):
        self.fd, self.position = fd, 0

    def read(self, size: int = -1) -> bytes:
        data = os.pread(self.fd, size if size >= 0 else 1 << 20, self.position)
        self.position += len(data)
        return data


def _hash(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()
