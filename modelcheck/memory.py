"""Memory limits: what a run may use, and what it uses now.

A run is bounded by its anonymous resident memory (RssAnon: heap and
arrays, what the kernel's OOM killer weighs), not by RSS: file pages an
engine spilled and maps back are reclaimable and do not count. The
default limit is a safe share of the machine's RAM, or of the cgroup's
limit where a container sets a lower one.
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path

from .config import ConfigError

DEFAULT_SHARE = 0.8  # of RAM (or the cgroup's limit) a run may use by default
UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:I?B)?\s*", re.IGNORECASE)


def parse_size(text: str, option: str = "--max-memory") -> int:
    """Bytes of a size such as 512M, 8G, 1.5GiB or 1000000 (binary units):
    a whole byte at least (0.0001K is none), and finite (400 digits are not)."""
    m = SIZE.fullmatch(text)
    size = float(m.group(1)) * UNITS[m.group(2).upper()] if m else 0.0
    if not 1 <= size < math.inf:
        raise ConfigError(f"{option} {text!r}: expected a size such as 512M, 8G or 1.5GiB")
    return int(size)


def show_size(n: int) -> str:
    for unit in ("T", "G", "M", "K"):
        if n >= UNITS[unit]:
            return f"{n / UNITS[unit]:.1f} {unit}iB"
    return f"{n} B"


def physical_memory() -> int:
    """RAM, or the cgroup's memory limit where that is lower."""
    ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = Path(path).read_text().strip()
        except OSError:
            continue
        if text.isdigit():
            ram = min(ram, int(text))
    return ram


def default_limit(share_among: int = 1) -> int:
    """A safe share of RAM for one run (of `share_among` running at once)."""
    return int(physical_memory() * DEFAULT_SHARE) // max(1, share_among)


def anon_rss() -> int:
    """This process's anonymous resident memory, in bytes."""
    try:
        with open("/proc/self/status", "rb") as f:
            for line in f:
                if line.startswith(b"RssAnon:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # not Linux: the peak, a bound


def release_freed() -> None:
    """Hand memory the process freed back to the OS (glibc keeps freed
    blocks below its mmap threshold in the heap, where they still count
    as resident); a no-op where there is no glibc."""
    import ctypes
    import ctypes.util

    try:
        ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass
