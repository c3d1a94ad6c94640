"""Reading the members of an untrusted zip: bytes counted as they inflate, legacy names decoded.

A zip's headers are claims. A member whose header says 1 KiB may inflate to gigabytes, and
`ZipFile.read` inflates a whole compressed block before it compares anything with the header. Here
every member is inflated in chunks, counted, and stopped one byte past its limit or its claimed size,
whichever is smaller; then its size and CRC are checked against the header.

The site (submissions/zip_members.py) and the agent (profiler_agent/bundles/zip_members.py) hold the
same file, the standard library only: neither imports the other's code. A test keeps both equal.
"""

from __future__ import annotations

import struct
import zipfile
import zlib
from typing import Iterator

CHUNK_BYTES = 64 * 1024
UTF8_NAME_FLAG = 0x800
ENCRYPTED_FLAG = 0x1
LOCAL_HEADER = struct.Struct("<4s2B4HL2L2H")
LOCAL_HEADER_SIGNATURE = b"PK\x03\x04"
METHOD_NAMES = {zipfile.ZIP_BZIP2: "bzip2", zipfile.ZIP_LZMA: "LZMA", 9: "deflate64"}


class MemberError(ValueError):
    """A member that cannot be read as its header describes it; `name` is its decoded name."""

    def __init__(self, name: str, message: str):
        self.name = name
        super().__init__(f"{name!r}: {message}")


class MemberTooLarge(MemberError):
    """More than `limit` bytes came out; reading stopped after `read_bytes` (limit + 1)."""

    def __init__(self, name: str, limit: int, read_bytes: int):
        self.limit, self.read_bytes = limit, read_bytes
        super().__init__(name, f"inflates to more than {limit} bytes")


class MemberLies(MemberError):
    """The data disagrees with the header: more bytes than `claimed` (reading stopped after
    `read_bytes`), fewer, or another CRC. A damaged or crafted archive."""

    def __init__(self, name: str, claimed: int, read_bytes: int, why: str):
        self.claimed, self.read_bytes, self.why = claimed, read_bytes, why
        super().__init__(name, f"the archive is damaged: {why}")


class MemberUnsupported(MemberError):
    """Encrypted, or compressed with a method other than stored or deflate (`method`)."""

    def __init__(self, name: str, method: str):
        self.method = method
        super().__init__(name, f"{method} members are not supported (use stored or deflate)")


class NameNotUtf8(MemberError):
    """A member's name is flagged UTF-8 (bit 11) and is not: zipfile cannot even list such an archive.
    `raw` is the name's bytes, `name` a legible reading of them (GBK, the usual culprit, else escaped)."""

    def __init__(self, raw: bytes):
        self.raw = raw
        super().__init__(_legible(raw), "its name is marked UTF-8 but is not UTF-8")


def _legible(raw: bytes) -> str:
    try:
        return raw.decode("gbk")
    except UnicodeDecodeError:
        return raw.decode("utf-8", "backslashreplace")


def open_zip(file) -> zipfile.ZipFile:
    """zipfile.ZipFile(file), with NameNotUtf8 for the UnicodeDecodeError zipfile lets out of a name
    flagged UTF-8 that is not (BadZipFile for the rest, as zipfile raises it)."""
    try:
        return zipfile.ZipFile(file)
    except UnicodeDecodeError as exc:
        raise NameNotUtf8(bytes(exc.object)) from None


def member_name(info: zipfile.ZipInfo) -> str:
    """The member's name as its author wrote it. Without the UTF-8 flag zipfile decodes names as
    cp437, but Windows' own zip writes the ANSI code page (GBK in China) and macOS writes UTF-8."""
    if info.flag_bits & UTF8_NAME_FLAG:
        return info.filename
    raw = info.orig_filename.encode("cp437")  # cp437 maps every byte: this gives the bytes back
    for encoding in ("utf-8", "gbk"):
        try:
            return raw.decode(encoding)
        except UnicodeDecodeError:
            pass
    return info.filename


def _data_start(archive: zipfile.ZipFile, info: zipfile.ZipInfo, name: str) -> int:
    archive.fp.seek(info.header_offset)
    header = archive.fp.read(LOCAL_HEADER.size)
    if len(header) != LOCAL_HEADER.size or header[:4] != LOCAL_HEADER_SIGNATURE:
        raise MemberLies(name, info.file_size, 0, "its local header is missing")
    fields = LOCAL_HEADER.unpack(header)
    name_length, extra_length = fields[10], fields[11]
    return info.header_offset + LOCAL_HEADER.size + name_length + extra_length


def iter_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, limit: int) -> Iterator[bytes]:
    """The member's bytes in chunks of at most CHUNK_BYTES. Whatever its header says, at most
    min(limit, claimed size) + 1 bytes are ever inflated: MemberTooLarge past `limit`, MemberLies past
    the claimed size or when size or CRC differ at the end."""
    name = member_name(info)
    if info.flag_bits & ENCRYPTED_FLAG:
        raise MemberUnsupported(name, "encrypted")
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        raise MemberUnsupported(name, METHOD_NAMES.get(info.compress_type, f"method {info.compress_type}"))
    position = _data_start(archive, info, name)
    compressed_left = info.compress_size
    inflater = zlib.decompressobj(-zlib.MAX_WBITS) if info.compress_type == zipfile.ZIP_DEFLATED else None
    stop_after = min(limit, info.file_size) + 1
    produced, crc, pending = 0, 0, b""
    while True:
        if not pending and compressed_left > 0:
            archive.fp.seek(position)  # zipfile shares fp between readers: never trust where it is
            pending = archive.fp.read(min(CHUNK_BYTES, compressed_left))
            position += len(pending)
            compressed_left = compressed_left - len(pending) if pending else 0
        room = min(CHUNK_BYTES, stop_after - produced)
        given = len(pending)
        if inflater is None:
            chunk, pending = pending[:room], pending[room:]
        else:
            chunk = inflater.decompress(pending, room)
            pending = inflater.unconsumed_tail
        if not chunk:
            ended = compressed_left == 0 or (inflater is not None and inflater.eof)
            if (len(pending) == given) if pending else ended:
                break  # the end, or no progress possible
        produced += len(chunk)
        if produced > info.file_size:
            raise MemberLies(name, info.file_size, produced, f"it holds more than the {info.file_size} bytes its header says")
        if produced > limit:
            raise MemberTooLarge(name, limit, produced)
        crc = zlib.crc32(chunk, crc)
        yield chunk
    if inflater is not None and not inflater.eof:
        raise MemberLies(name, info.file_size, produced, "its compressed data ends early")
    if produced != info.file_size:
        raise MemberLies(name, info.file_size, produced,
                         f"it holds {produced} bytes, its header says {info.file_size}")
    if crc != info.CRC:
        raise MemberLies(name, info.file_size, produced, "its CRC does not match its header")


def read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, limit: int) -> bytes:
    return b"".join(iter_member(archive, info, limit))
