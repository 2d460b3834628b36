"""Read a few named files out of an untrusted .zip: bounded in entries, bytes per file and bytes in total.

Sizes in a zip's headers are claims, not facts: a member may inflate far past its stated size (a zip
bomb), so each one is read with a byte budget and refused once it goes over. Nothing is extracted to disk;
members other than the wanted ones are never read."""
import lzma
import os
import zipfile
import zlib
from pathlib import PurePosixPath
from typing import BinaryIO, Optional

from model_core.checkpoints.fields import size_text

MAX_ENTRIES = 256  # a checkpoint has 3 files; a zipped folder from a desktop adds a few hidden ones
MAX_DIRECTORY_BYTES = 1_000_000  # the zip's table of contents, which zipfile parses in full on open
CHUNK_BYTES = 1 << 20  # inflate at most this much per read
END_RECORD = b"PK\x05\x06"  # signature of the end-of-central-directory record
ZIP64_LOCATOR = b"PK\x06\x07"  # just before END_RECORD in a ZIP64 archive
ZIP64_END_RECORD = b"PK\x06\x06"  # where the locator points: a ZIP64 archive's counts
ZIP_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, zlib.error, lzma.LZMAError,
              NotImplementedError, RuntimeError)


def directory_size(f: BinaryIO, zip64: bool = False) -> Optional[tuple[int, int]]:
    """(entries, bytes) of the zip's table of contents, from its end record, read before zipfile parses
    anything; None: not a zip. A ZIP64 archive (which a checkpoint never needs) counts as too large, unless
    zip64 (PyTorch writes every checkpoint as ZIP64): then its ZIP64 end record's counts."""
    f.seek(0, os.SEEK_END)
    size = f.tell()
    tail_len = min(size, 22 + 65_535)  # the end record is 22 bytes plus a comment of at most 64 kB
    f.seek(size - tail_len)
    tail = f.read(tail_len)
    f.seek(0)
    at = tail.rfind(END_RECORD)
    if at < 0 or len(tail) - at < 22:
        return None
    entries = int.from_bytes(tail[at + 10:at + 12], "little")
    directory_bytes = int.from_bytes(tail[at + 12:at + 16], "little")
    locator = tail[max(0, at - 20):at]
    if not locator.startswith(ZIP64_LOCATOR):
        return entries, directory_bytes
    if not zip64:  # zipfile would trust the ZIP64 record's sizes
        return max(entries, 0xFFFF), max(directory_bytes, 0xFFFFFFFF)
    return zip64_directory_size(tail[max(0, at - 76):at - 20], size - tail_len + at - 76, locator)


def zip64_directory_size(record: bytes, record_at: int, locator: bytes) -> Optional[tuple[int, int]]:
    """(entries, bytes) from the ZIP64 end record just before the locator, where zipfile reads it; None unless
    the locator points there too (PyTorch's reader follows the locator: both must read the same record)."""
    if len(record) < 56 or not record.startswith(ZIP64_END_RECORD):
        return None
    if int.from_bytes(locator[8:16], "little") != record_at:
        return None
    return int.from_bytes(record[32:40], "little"), int.from_bytes(record[40:48], "little")


def stored_members(f: BinaryIO, max_entries: int) -> dict[str, int]:
    """{name: bytes} of a zip another program wrote with its members stored, not compressed (PyTorch's
    checkpoints); ValueError for a large table of contents, a compressed member (it could inflate far past the
    file) or members claiming more bytes than the file holds."""
    found = directory_size(f, zip64=True)
    if found is None:
        raise ValueError("it is not a zip archive")
    entries, directory_bytes = found
    if entries > max_entries or directory_bytes > MAX_DIRECTORY_BYTES:
        raise ValueError(f"its table of contents is too large ({entries:,} entries, {size_text(directory_bytes)})")
    try:
        infos = zipfile.ZipFile(f).infolist()
    except ZIP_ERRORS as err:
        raise ValueError(f"the zip archive is damaged ({str(err)[:120]})") from None
    f.seek(0, os.SEEK_END)
    file_bytes = f.tell()
    packed = [info.filename[:80] for info in infos if info.compress_type != zipfile.ZIP_STORED]
    if packed:
        raise ValueError(f"{packed[0]} in it is compressed, which PyTorch never does (a compressed member may "
                         "unpack to far more than the file)")
    if sum(info.file_size for info in infos) > file_bytes:
        raise ValueError("its members claim more bytes than the file holds")
    return {info.filename: info.file_size for info in infos}


def read_members(f: BinaryIO, wanted: tuple[str, ...], max_bytes: int, member_caps: dict[str, int]) -> dict[str, bytes]:
    """{name: bytes} of the wanted files (at the top level or in one folder); ValueError saying what is wrong."""
    entries, directory_bytes = directory_size(f) or (0, 0)
    if entries > MAX_ENTRIES or directory_bytes > MAX_DIRECTORY_BYTES:
        raise ValueError(f"the zip's table of contents is too large ({entries:,} entries, "
                         f"{size_text(directory_bytes)}) for a checkpoint of {len(wanted)} files: "
                         "zip the checkpoint folder alone.")
    try:
        with zipfile.ZipFile(f) as zf:
            chosen = chosen_members(zf.infolist(), wanted)
            files, total = {}, 0
            for name, info in chosen.items():
                cap = min(member_caps.get(name, max_bytes), max_bytes - total)
                files[name] = read_bounded(zf, info, cap, max_bytes)
                total += len(files[name])
            return files
    except ZIP_ERRORS as err:
        raise ValueError(f"the zip file is damaged ({str(err)[:120]}): download or save it again.") from None


def chosen_members(infos: list[zipfile.ZipInfo], wanted: tuple[str, ...]) -> dict[str, zipfile.ZipInfo]:
    """The wanted members, all from one place; unsafe names anywhere refuse the whole zip."""
    chosen = {}
    for info in infos:
        parts = safe_parts(info.filename)
        if info.is_dir() or len(parts) > 2 or parts[-1] not in wanted or parts[0] == "__MACOSX":
            continue  # not a checkpoint file: never read
        if parts[-1] in chosen:
            raise ValueError(f"the zip holds two {parts[-1]} files ({chosen[parts[-1]].filename[:80]} and "
                             f"{info.filename[:80]}): zip one checkpoint at a time.")
        chosen[parts[-1]] = info
    folders = {PurePosixPath(info.filename).parent for info in chosen.values()}
    if len(folders) > 1:
        raise ValueError(f"the checkpoint files are in different folders ({', '.join(sorted(map(str, folders)))}): "
                         "keep them together in one folder.")
    return chosen


def safe_parts(filename: str) -> tuple[str, ...]:
    """Path parts of a member name; ValueError for absolute paths, drive letters, '..' and control characters."""
    name = filename.replace("\\", "/")
    parts = PurePosixPath(name).parts
    if (name.startswith("/") or ":" in name or ".." in parts or not parts or len(name) > 1_000
            or any(ord(c) < 32 for c in name)):
        raise ValueError(f"the zip contains an unsafe path {filename[:80]!r}; refusing to read it.")
    return parts


def read_bounded(zf: zipfile.ZipFile, info: zipfile.ZipInfo, cap: int, max_bytes: int) -> bytes:
    """A member's bytes, reading at most cap + 1 of them whatever its header claims."""
    if info.flag_bits & 0x1:
        raise ValueError(f"{info.filename[:80]} in the zip is password-protected: save the checkpoint without one.")
    chunks, size = [], 0
    if info.file_size <= cap:  # a header that already admits too much is refused without reading
        with zf.open(info) as member:
            while size <= cap:  # in pieces: a lying header never makes zlib inflate a whole cap at once
                chunk = member.read(min(CHUNK_BYTES, cap + 1 - size))
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
    data = b"".join(chunks)
    if info.file_size > cap or len(data) > cap:
        raise ValueError(f"{info.filename[:80]} in the zip unpacks to more than {size_text(cap)} (this app reads "
                         f"at most {size_text(max_bytes)} from a zip); refusing to read it.")
    return data
