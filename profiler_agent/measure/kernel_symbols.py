"""Names of the kernels a bundle's own build defined: what the kernel census counts as custom.

Sources, all made by the run itself:
- the shared objects (.so) in the run's extension build folder and in the bundle: their ELF symbol
  tables (.symtab and .dynsym). nvcc gives every `__global__` function a host-side launch stub of the
  same (mangled) name, so a kernel compiled into the .so is named in its host symbol table; the
  cubins embedded in it (.nv_fatbin) are read too with `cuobjdump -symbols` where it is installed;
- cubins on disk (.cubin): their own ELF symbol tables (CuPy's kernel cache keeps one per kernel);
- Triton's cache folder of the run (TRITON_CACHE_DIR, else ~/.triton/cache in the run's home): each
  compiled kernel's metadata (<hash>/<name>.json, "name").

Every name is kept mangled and demangled (libstdc++'s __cxa_demangle), and matched against profiler
kernel names both ways and by qualified name (`void ns::k<float>(float*)` matches `ns::k`).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import json
import mmap
import os
import shutil
import struct
import subprocess
from pathlib import Path

MAX_FILES = 256
MAX_FILE_BYTES = 1 << 30
CUOBJDUMP_TIMEOUT_S = 30

SHT_SYMTAB, SHT_DYNSYM = 2, 11
STT_FUNC = 2


def elf_function_names(path: Path) -> set[str]:
    """Defined function symbols of a 64-bit little-endian ELF file (a .so, a .o, a cubin); empty when
    it is not one or cannot be read."""
    try:
        with open(path, "rb") as f:
            if os.fstat(f.fileno()).st_size < 64:
                return set()
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
                return _symbols(data)
    except (OSError, ValueError, struct.error, IndexError):
        return set()


def _symbols(data) -> set[str]:
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:  # ELFCLASS64, little endian
        return set()
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names = set()
    for _, kind, _, _, offset, size, link, _, _, entsize in sections:
        if kind not in (SHT_SYMTAB, SHT_DYNSYM) or not entsize:
            continue
        str_offset, str_size = sections[link][4], sections[link][5]
        for at in range(offset, offset + size, entsize):
            name_at, info, _, shndx = struct.unpack_from("<IBBH", data, at)
            if info & 0xF != STT_FUNC or shndx == 0 or not name_at or name_at >= str_size:
                continue  # not a function, or undefined here (imported from another library)
            start = str_offset + name_at
            end = data.find(b"\0", start)
            names.add(bytes(data[start:end]).decode("utf-8", "replace"))
    return names


def cuobjdump_names(path: Path) -> set[str]:
    """Kernel (entry) names of the cubins embedded in `path`, from `cuobjdump -symbols`; empty
    without cuobjdump or without cubins."""
    tool = shutil.which("cuobjdump") or next(
        (str(p) for p in [Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")) / "bin" / "cuobjdump"] if p.exists()), None)
    if tool is None:
        return set()
    try:
        out = subprocess.run([tool, "-symbols", str(path)], capture_output=True, text=True,
                             timeout=CUOBJDUMP_TIMEOUT_S).stdout
    except (OSError, subprocess.TimeoutExpired):
        return set()
    # "STT_FUNC         STB_GLOBAL STO_ENTRY      _Z11relu_kernelPKfPfl"
    return {line.split()[-1] for line in out.splitlines() if "STT_FUNC" in line and "STO_ENTRY" in line}


def triton_names(cache_dir: Path) -> set[str]:
    names = set()
    for meta in list(Path(cache_dir).glob("*/*.json"))[:MAX_FILES * 4]:
        try:
            name = json.loads(meta.read_text()).get("name")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(name, str):
            names.add(name)
    return names


@functools.lru_cache(maxsize=1)
def _demangler():
    try:
        library = ctypes.CDLL(ctypes.util.find_library("stdc++") or "libstdc++.so.6")
        function = library.__cxa_demangle
    except (OSError, AttributeError):
        return None
    function.restype = ctypes.c_void_p
    function.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
    free = ctypes.CDLL(None).free
    free.argtypes = [ctypes.c_void_p]
    return function, free


def demangle(name: str) -> str:
    """The C++ name of an Itanium-mangled symbol, or the name itself."""
    tools = _demangler()
    if tools is None or not name.startswith("_Z"):
        return name
    function, free = tools
    status = ctypes.c_int(0)
    pointer = function(name.encode(), None, None, ctypes.byref(status))
    if status.value != 0 or not pointer:
        return name
    try:
        return ctypes.string_at(pointer).decode("utf-8", "replace")
    finally:
        free(pointer)


def _files(folders: list[Path], suffixes: tuple[str, ...]) -> list[Path]:
    found = []
    for folder in folders:
        if not folder.is_dir():
            continue
        for path in folder.rglob("*"):
            if path.suffix in suffixes and path.is_file() and not path.is_symlink():
                if path.stat().st_size <= MAX_FILE_BYTES:
                    found.append(path)
            if len(found) >= MAX_FILES:
                return found
    return found


def own_kernel_names(build_dirs: list[Path], triton_cache: Path | None = None) -> set[str]:
    """The function and kernel names the bundle's own build defined, mangled and demangled."""
    names: set[str] = set()
    for path in _files([Path(d) for d in build_dirs], (".so", ".cubin")):
        names |= elf_function_names(path)
        if path.suffix == ".so":
            names |= cuobjdump_names(path)
    if triton_cache is not None and Path(triton_cache).is_dir():
        names |= triton_names(Path(triton_cache))
    return names | {demangle(n) for n in names}


def default_triton_cache() -> Path:
    configured = os.environ.get("TRITON_CACHE_DIR")
    return Path(configured) if configured else Path.home() / ".triton" / "cache"


def default_cupy_cache() -> Path:
    configured = os.environ.get("CUPY_CACHE_DIR")
    return Path(configured) if configured else Path.home() / ".cupy" / "kernel_cache"
