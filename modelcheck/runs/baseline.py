"""--update-baseline: the gate file's pinned `states` rewritten to what a run
found, keeping the file's text (comments, order) where TOML allows."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

from ..config import ConfigError, read_text
from .gate_entries import Outcome


def repinned(o: Outcome) -> bool:
    """Whether `--update-baseline` pins the count this entry's run found:
    only where its verdict came out as expected (the count of a wrong
    verdict, or of a run stopped at its memory limit, is no baseline)."""
    return o.row is not None and o.row.verdict == o.entry.cell.expect


def update_baseline(path: str, outcomes: list[Outcome]) -> tuple[str, list[tuple[str, int | None, int]]]:
    """The gate file's text with the `states` of every entry re-pinned
    (`repinned`) set to the count just found, and the (name, old, new)
    changes."""
    changes = [
        (o.entry.cell.name, o.entry.states, o.row.distinct)
        for o in outcomes
        if o.row is not None and repinned(o) and o.entry.states != o.row.distinct
    ]
    return set_states(path, {name: new for name, _old, new in changes}), changes


def set_states(path: str, counts: dict[str, int]) -> str:
    """The text of gate file `path` with the `states` of the entry named
    `name` set to counts[name]. JSON is rewritten, key order kept; in TOML
    only `states` lines change (or are added after the entry's name), so
    comments and layout stay. The result is parsed back and must differ
    from the file in those counts only: a layout this cannot edit is refused
    (ConfigError), never rewritten wrong. Tried before a run with every
    entry, so such a file is refused before hours of checking, not after."""
    is_json = Path(path).suffix.lower() == ".json"  # as config.read_file decides
    parse = json.loads if is_json else tomllib.loads
    try:  # read again: the file may have changed since the run began
        text = read_text(path, newline="")  # CRLF stays CRLF
        doc = parse(text)
        index = {e["name"]: i for i, e in enumerate(doc["entry"])}
        at = {index[name]: n for name, n in counts.items()}
    except ConfigError:
        raise
    except (OSError, ValueError, LookupError, TypeError) as e:
        raise ConfigError(f"{path}: cannot read its entries back to update them ({type(e).__name__}: {e})") from None
    for i, n in at.items():
        doc["entry"][i] = _with_states(doc["entry"][i], n)
    new = json.dumps(doc, indent=2, ensure_ascii=False) + "\n" if is_json else _set_toml_states(text, at)
    try:
        edited_right = new is not None and _canonical(parse(new)) == _canonical(doc)
    except ValueError:  # the edit broke the file: refused all the same
        edited_right = False
    if new is None or not edited_right:
        raise ConfigError(
            f"{path}: cannot locate each [[entry]]'s name to update its states = N; "
            "set them by hand (or write entries as [[entry]] tables)"
        )
    return new


def _with_states(entry: dict[str, Any], n: int) -> dict[str, Any]:
    """`entry` with states = n: in place if pinned, else right after name."""
    if "states" in entry:
        return {**entry, "states": n}
    out = {}
    for key, value in entry.items():
        out[key] = value
        if key == "name":
            out["states"] = n
    return out


def _canonical(doc: Any) -> str:
    return json.dumps(doc, sort_keys=True, default=str)  # nan == nan; TOML dates as text


def _set_toml_states(text: str, counts: dict[int, int]) -> str | None:
    """Edit the `states` lines of a TOML gate file (None: entries are not
    all [[entry]] tables with a name). Statements are found by a real
    parse: lines are added to a statement until tomllib accepts it, so a
    multi-line string or array is one statement and a `name` inside one is
    never taken for a key."""
    lines = re.findall(r"[^\n]*\n|[^\n]+$", text)
    entries: list[dict[str, tuple[int, int]]] = []  # for each [[entry]]: "name"/"states" -> line span
    start, in_entry = 0, False
    while start < len(lines):
        end, parsed = _statement(lines, start)
        if lines[start].lstrip().startswith("["):  # a table header
            in_entry = parsed == {"entry": [{}]}
            if in_entry:
                entries.append({})
        elif in_entry and len(parsed) == 1 and next(iter(parsed)) in ("name", "states"):
            entries[-1][next(iter(parsed))] = (start, end)
        start = end
    if any("name" not in e for e in entries) or max(counts, default=-1) >= len(entries):
        return None
    eol = "\r\n" if "\r\n" in text else "\n"
    for i in sorted(counts, key=lambda i: -entries[i]["name"][0]):  # bottom up: spans stay valid
        if "states" in entries[i]:
            at = entries[i]["states"][0]
            lines[at] = re.sub(r"=(\s*)[^\s#]+", rf"=\g<1>{counts[i]}", lines[at], count=1)
        else:
            first, end = entries[i]["name"]
            indent = lines[first][: len(lines[first]) - len(lines[first].lstrip(" \t"))]
            if not lines[end - 1].endswith("\n"):
                lines[end - 1] += eol
            lines.insert(end, f"{indent}states = {counts[i]}{eol}")
    return "".join(lines)


def _statement(lines: list[str], start: int) -> tuple[int, dict[str, Any]]:
    """Where the TOML statement starting at lines[start] ends, and what it
    parses to (a blank or comment line: {})."""
    for end in range(start + 1, len(lines) + 1):
        try:
            return end, tomllib.loads("".join(lines[start:end]))
        except tomllib.TOMLDecodeError:
            continue
    return len(lines), {}  # not reached for a file tomllib read
