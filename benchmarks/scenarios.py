"""Benchmark data, generated deterministically at run time (nothing large in git).

- typical: persona homes where each bootstrap name is present with
  probability 0.7, 200-8,000 bytes, mostly ASCII with some multi-byte text
  (one word in a hundred: accents, dashes, arrows, a little CJK);
- large: homes with three 3 MB files of mixed scripts (ASCII, Tamil, emoji),
  all truncated at the 2 MB cap;
- empty: homes with none of the files (seven misses each).

Also the hand-written baseline: what hosts write today without this package.
"""

from __future__ import annotations

import contextlib
import os
import random
from pathlib import Path

BOOTSTRAP_ORDER = ("AGENTS.md", "SOUL.md", "IDENTITY.md", "USER.md", "TOOLS.md", "HEARTBEAT.md", "MEMORY.md")
SEED = 20261129

_ASCII_WORDS = [
    *("the", "agent", "answers", "questions", "about", "lab", "notes", "and", "cites", "every"),
    *("source", "it", "uses", "prefers", "metric", "units", "keeps", "replies", "short", "asks"),
    *("before", "writing", "outside", "workspace", "remembers", "what", "user", "said", "last", "time"),
]
_SOME_MULTIBYTE = ["café", "naïve", "größe", "été", "→", "—", "±", "°C", "µm", "日本"]
_MIXED = ["memory", "agent", "soul", "tools", "தமிழ்", "நினைவு", "முகவர்", "😀", "🚀", "🧠", "and", "the"]


def _text(rng: random.Random, size: int, words: list[str], multibyte_share: float) -> bytes:
    out = bytearray()
    line = 0
    while len(out) < size:
        pool = _SOME_MULTIBYTE if rng.random() < multibyte_share else words
        word = rng.choice(pool).encode()
        out += word
        line += len(word) + 1
        if line > 72:
            out += b"\n"
            line = 0
        else:
            out += b" "
    # Drop a character the cut split, so every file is valid UTF-8.
    return bytes(out[:size]).decode("utf-8", "ignore").encode()


def make_typical(root: Path, homes: int = 2000, seed: int = SEED) -> list[str]:
    """``homes`` directories, each name present with probability 0.7."""
    rng = random.Random(seed)
    dirs = []
    for index in range(homes):
        home = root / f"typical-{index:05d}"
        home.mkdir(parents=True)
        for name in BOOTSTRAP_ORDER:
            if rng.random() < 0.7:
                size = rng.randint(200, 8000)
                (home / name).write_bytes(_text(rng, size, _ASCII_WORDS, 0.01))
        dirs.append(str(home))
    return dirs


def make_large(root: Path, homes: int = 4, seed: int = SEED) -> list[str]:
    """``homes`` directories with three 3 MB files of mixed scripts each."""
    rng = random.Random(seed)
    dirs = []
    for index in range(homes):
        home = root / f"large-{index:02d}"
        home.mkdir(parents=True)
        for name in ("AGENTS.md", "TOOLS.md", "MEMORY.md"):
            (home / name).write_bytes(_text(rng, 3 * 1024 * 1024, _MIXED, 0.0))
        dirs.append(str(home))
    return dirs


def make_empty(root: Path, homes: int = 2000) -> list[str]:
    """``homes`` directories with no bootstrap file at all."""
    dirs = []
    for index in range(homes):
        home = root / f"empty-{index:05d}"
        home.mkdir(parents=True)
        dirs.append(str(home))
    return dirs


def baseline_compose_soul(directory: str) -> tuple[str, list[str]]:
    """What a host writes by hand today: exists(), read_text(), strip(), join.

    Not equivalent to the spec (no cap back-off, no BOM rule, str.strip's
    wider set, follows FIFOs); it is the cost to beat, not a reference.
    """
    base = Path(directory)
    sections = []
    found = []
    for name in BOOTSTRAP_ORDER:
        path = base / name
        if path.exists():
            text = path.read_text(encoding="utf-8", errors="replace").strip()
            found.append(name)
            sections.append(f"## {name}\n\n{text}")
    return "\n\n".join(sections), found


def bytes_on_disk(dirs: list[str]) -> int:
    """Total size of the bootstrap files under ``dirs``."""
    total = 0
    for directory in dirs:
        for name in BOOTSTRAP_ORDER:
            with contextlib.suppress(FileNotFoundError):
                total += os.stat(os.path.join(directory, name)).st_size
    return total
