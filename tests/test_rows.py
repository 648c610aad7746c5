"""The kernel's static glue (modelcheck/engine/kernel/rows.py), compiled,
against plain-Python references written here: a slot reads back what was
put, a value outside its slot is refused and writes nothing, and keys
are MurmurHash3's finaliser, its three-round Feistel pair and the
word-by-word fingerprint the visited set and checkpoints depend on."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from modelcheck.engine.kernel import cache, kernel_for
from modelcheck.engine.kernel.glue import KEY_FMIX, KEY_HASH, KEY_HASH128, KEY_MIX128
from modelcheck.engine.kernel.rows import get, key, put
from specs.kafka_elr import load

M = (1 << 64) - 1


def fmix64(k: int) -> int:
    k ^= k >> 33
    k = k * 0xFF51AFD7ED558CCD & M
    k ^= k >> 33
    k = k * 0xC4CEB9FE1A85EC53 & M
    return k ^ k >> 33


def hash_words(words: list[int], seed: int) -> int:
    h = 0x243F6A8885A308D3 ^ seed
    for w in words:
        h = fmix64(h ^ fmix64(w ^ 0x13198A2E03707344))
    return fmix64(h ^ len(words))


def mix128(a: int, b: int) -> tuple[int, int]:
    a ^= fmix64(b ^ 0x9E3779B97F4A7C15)
    b ^= fmix64(a ^ 0xBF58476D1CE4E5B9)
    a ^= fmix64(b ^ 0x94D049BB133111EB)
    return a, b


def unmix128(a: int, b: int) -> tuple[int, int]:
    """mix128's inverse: the rounds undone in reverse order."""
    a ^= fmix64(b ^ 0x94D049BB133111EB)
    b ^= fmix64(a ^ 0xBF58476D1CE4E5B9)
    a ^= fmix64(b ^ 0x9E3779B97F4A7C15)
    return a, b


# a layout: slots of (width, lo) laid into 64-bit words in order, as layout.py does
slots = st.lists(st.tuples(st.integers(1, 20), st.integers(-3, 5)), min_size=1, max_size=12)


def layout_of(fields: list[tuple[int, int]]) -> np.ndarray:
    rows, word, shift = [], 0, 0
    for width, lo in fields:
        if shift + width > 64:
            word, shift = word + 1, 0
        rows.append((word, shift, (1 << width) - 1, lo))
        shift += width
    return np.array(rows, dtype=np.int64)


@settings(max_examples=60, deadline=None)
@given(slots, st.data())
def test_each_slot_reads_back_what_was_put_beside_the_others(fields, data):
    L = layout_of(fields)
    values = [data.draw(st.integers(lo, lo + (1 << width) - 1)) for width, lo in fields]
    row = np.zeros(int(L[:, 0].max()) + 1, dtype=np.uint64)
    for i, v in enumerate(values):
        assert put(L, row, i, v)
    assert [get(L, row, i) for i in range(len(fields))] == values


@settings(max_examples=60, deadline=None)
@given(slots, st.data())
def test_a_value_outside_its_slot_is_refused_and_writes_nothing(fields, data):
    L = layout_of(fields)
    i = data.draw(st.integers(0, len(fields) - 1))
    width, lo = fields[i]
    v = data.draw(st.one_of(st.integers(lo - 100, lo - 1), st.integers(lo + (1 << width), lo + (1 << width) + 100)))
    row = np.zeros(int(L[:, 0].max()) + 1, dtype=np.uint64)
    assert not put(L, row, i, v)
    assert not row.any()


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, M), min_size=1, max_size=6))
def test_keys_are_the_reference_mixes_and_fingerprints(words):
    row = np.array(words, dtype=np.uint64)
    out = np.zeros(2, dtype=np.uint64)
    key(KEY_FMIX, row, out)
    assert int(out[0]) == fmix64(words[0])
    if len(words) >= 2:
        key(KEY_MIX128, row, out)
        assert (int(out[0]), int(out[1])) == mix128(words[0], words[1])
        assert unmix128(int(out[0]), int(out[1])) == (words[0], words[1])  # exact: a bijection
    out[:] = 0
    key(KEY_HASH, row, out)
    assert (int(out[0]), int(out[1])) == (hash_words(words, 0), 0)
    key(KEY_HASH128, row, out)
    assert (int(out[0]), int(out[1])) == (hash_words(words, 0), hash_words(words, 0x452821E638D01377))


def test_editing_the_static_glue_renames_every_generated_module(monkeypatch):
    """numba's cache does not see a callee in another file change, so the
    static modules' text is part of each generated module's name."""
    before = cache.module_name("glue", "source")
    edited = cache.imported_text() + "\n# edited\n"
    monkeypatch.setattr(cache, "imported_text", lambda: edited)
    assert cache.module_name("glue", "source") != before


def test_the_static_glue_is_read_as_package_data_so_a_zipped_package_has_it(tmp_path):
    """A Spark executor imports modelcheck from a zip: the text that names
    a kernel is read there as well as from files."""
    import subprocess
    import sys
    import zipfile
    from pathlib import Path

    import modelcheck

    root = Path(modelcheck.__file__).parent.parent
    bundle = tmp_path / "modelcheck.zip"
    with zipfile.ZipFile(bundle, "w") as z:
        for path in (root / "modelcheck").rglob("*.py"):
            z.write(path, path.relative_to(root))
    code = "from modelcheck.engine.kernel import cache; print(cache.__file__); print(len(cache.imported_text()))"
    out = subprocess.run(
        [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(bundle)!r}); {code}"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    where, size = out.stdout.split()
    assert where.startswith(str(bundle)) and int(size) == len(cache.imported_text())


def test_the_generated_modules_import_compiled_code_only_from_modules_hashed_into_their_names():
    """Every real module a kernel's generated text imports compiled code
    from is one whose text names the kernel (else an edit to it would load
    stale machine code)."""
    kernel = kernel_for(load({"max_records": 1}))
    hashed = {f"{package}.{name.removesuffix('.py')}" for package, name in cache.IMPORTED}
    imported = {
        line.split()[1]
        for text in kernel.source.values()
        for line in text.splitlines()
        if line.startswith("from modelcheck.")
    }
    assert imported == hashed
