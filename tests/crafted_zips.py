"""Zips that real tools would not write: headers that lie about sizes, names in a legacy code page."""
import io
import struct
import zipfile

CENTRAL_SIGNATURE = b"PK\x01\x02"
CENTRAL_FIXED = 46
LOCAL_FILE_SIZE_AT = 22
CENTRAL_FILE_SIZE_AT = 24


def deflated_zip(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def lying_zip(files: dict[str, bytes], claimed: dict[str, int]) -> bytes:
    """A deflated zip of `files` whose local header and central directory both say `claimed[name]`
    bytes for the named members (their CRC stays the real one)."""
    data = bytearray(deflated_zip(files))
    with zipfile.ZipFile(io.BytesIO(bytes(data))) as archive:
        local_offsets = {info.filename: info.header_offset for info in archive.infolist()}
        position = archive.start_dir
    for name, size in claimed.items():
        struct.pack_into("<L", data, local_offsets[name] + LOCAL_FILE_SIZE_AT, size)
    while data[position:position + 4] == CENTRAL_SIGNATURE:
        name_length, extra_length, comment_length = struct.unpack_from("<3H", data, position + 28)
        name = bytes(data[position + CENTRAL_FIXED:position + CENTRAL_FIXED + name_length]).decode()
        if name in claimed:
            struct.pack_into("<L", data, position + CENTRAL_FILE_SIZE_AT, claimed[name])
        position += CENTRAL_FIXED + name_length + extra_length + comment_length
    return bytes(data)


def legacy_named_zip(files: dict[str, bytes], encoding: str = "gbk") -> bytes:
    """A zip whose names are in `encoding` without the UTF-8 flag, as Windows' own zip writes them on a
    Chinese system. Each name is written as an ASCII stand-in of the same length, then swapped."""
    stand_ins = {}
    for index, name in enumerate(files):
        raw = name.encode(encoding)
        stand_in = f"~{index}~".ljust(len(raw), "~")
        assert len(stand_in) == len(raw), "names of at least three bytes"
        stand_ins[stand_in.encode()] = raw
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        for stand_in, data in zip(stand_ins, files.values()):
            assert stand_in not in data
            archive.writestr(stand_in.decode(), data)
    data = buffer.getvalue()
    for stand_in, raw in stand_ins.items():
        assert data.count(stand_in) == 2  # local header and central directory
        data = data.replace(stand_in, raw)
    return data


def misflagged_zip(files: dict[bytes, bytes]) -> bytes:
    """A zip whose member names are the raw bytes given, each flagged UTF-8 (bit 11) whether it is or
    not, as some archivers write a legacy code page's name. Each name is written as a stand-in of the
    same length that sets the flag (it starts with "é"), then swapped."""
    stand_ins = {}
    for index, raw in enumerate(files):
        stand_in = f"é{index}~".ljust(len(raw) - 1, "~")  # "é" is two bytes
        assert len(stand_in.encode()) == len(raw), "names of at least four bytes"
        stand_ins[stand_in.encode()] = raw
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        for stand_in, data in zip(stand_ins, files.values()):
            assert stand_in not in data
            archive.writestr(stand_in.decode(), data)
    data = buffer.getvalue()
    for stand_in, raw in stand_ins.items():
        assert data.count(stand_in) == 2  # local header and central directory
        data = data.replace(stand_in, raw)
    return data
