"""Benchmark data, generated deterministically at run time (nothing large in git).

- typical: persona homes where each bootstrap name is present with
  probability 0.7, 200-8,000 bytes, mostly ASCII with some multi-byte text
  (one word in a hundred: accents, dashes, arrows, a little CJK);
- large: homes with three 3 MB files of mixed scripts (ASCII, Tamil, emoji),
  all truncated at the 2 MB cap; ascii: the same of ASCII text; dense: four
  3 MB files, one each of Tamil, CJK, Cyrillic and typographic English;
- empty: homes with none of the files (seven misses each).

Also the hand-written baseline: what hosts write today without this package,
and the timing loop the benchmarks share (``per_home_us``). Nothing here
imports the package, so that an older checkout's virtualenv can run the
benchmarks that use it for a "before" figure.
"""

from __future__ import annotations

import contextlib
import os
import random
import time
from collections.abc import Callable, Sequence
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
    return _three_large_files(root, "large", homes, _MIXED, seed)


def _three_large_files(root: Path, prefix: str, homes: int, words: list[str], seed: int) -> list[str]:
    rng = random.Random(seed)
    dirs = []
    for index in range(homes):
        home = root / f"{prefix}-{index:02d}"
        home.mkdir(parents=True)
        for name in ("AGENTS.md", "TOOLS.md", "MEMORY.md"):
            (home / name).write_bytes(_text(rng, 3 * 1024 * 1024, words, 0.0))
        dirs.append(str(home))
    return dirs


# Dense text: words of each script, with the spaces and punctuation of real
# prose; the English is what language models write, typographic quotes and all.
DENSE: dict[str, list[str]] = {
    "tamil": ["தமிழ்", "நினைவு", "முகவர்", "கருவிகள்", "பயனர்", "அடையாளம்", "இதயத்துடிப்பு", "ஆன்மா", "மற்றும்"],
    "cjk": [
        "記憶",
        "代理人",
        "道具",
        "使用者",
        "身元",
        "心拍",
        "魂",
        "日本語の文章",
        "中文文本",
        "검색",
        "한국어",
    ],
    "cyrillic": [
        "память",
        "агент",
        "инструменты",
        "пользователь",
        "личность",
        "сердцебиение",
        "и",
        "в",
        "не",
    ],
    "english": [
        "“Hello,”",
        "she",
        "said",
        "—",
        "‘it’s",
        "fine.’",
        "The",
        "agent’s",
        "notes",
        "don’t",
        "say",
        "“always”",
        "…",
        "and",
        "the",
        "user’s",
        "memory",
        "isn’t",
        "lost",
    ],
}


def dense_text(script: str, size: int, seed: int = SEED) -> bytes:
    """``size`` bytes (or a few less, ending on a character) of one script of DENSE."""
    return _text(random.Random(seed), size, DENSE[script], 0.0)


def make_dense(root: Path, homes: int = 2, seed: int = SEED) -> list[str]:
    """``homes`` directories with four 3 MB files, one per dense script."""
    dirs = []
    for index in range(homes):
        home = root / f"dense-{index:02d}"
        home.mkdir(parents=True)
        for name, script in zip(("AGENTS.md", "SOUL.md", "USER.md", "MEMORY.md"), DENSE, strict=True):
            (home / name).write_bytes(dense_text(script, 3 * 1024 * 1024, seed + index))
        dirs.append(str(home))
    return dirs


def make_ascii(root: Path, homes: int = 4, seed: int = SEED) -> list[str]:
    """``homes`` directories with three 3 MB files of ASCII text each."""
    return _three_large_files(root, "ascii", homes, _ASCII_WORDS, seed)


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


def per_home_us(run: Callable[[str], object], dirs: Sequence[str]) -> float:
    """µs per home of ``run`` called on each of ``dirs`` in turn."""
    start = time.perf_counter_ns()
    for directory in dirs:
        run(directory)
    return (time.perf_counter_ns() - start) / len(dirs) / 1000
