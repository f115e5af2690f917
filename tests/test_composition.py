"""The rules of docs/format.md, one by one, as exact strings, on both readers."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import Writer
from spec_reference import body_text
from toolnexus.agents import BOOTSTRAP_ORDER, MAX_BOOTSTRAP_FILE_BYTES, compose_soul, truncation_notice

CAP = MAX_BOOTSTRAP_FILE_BYTES
NOTICE_2MB = "\n[truncated: exceeds 2 MB bootstrap cap]"


@pytest.mark.reader_independent
def test_public_constants() -> None:
    assert BOOTSTRAP_ORDER == (
        "AGENTS.md",
        "SOUL.md",
        "IDENTITY.md",
        "USER.md",
        "TOOLS.md",
        "HEARTBEAT.md",
        "MEMORY.md",
    )
    assert MAX_BOOTSTRAP_FILE_BYTES == 2 * 1024 * 1024


def test_empty_directory(home: Path) -> None:
    assert compose_soul(home) == ("", [])


def test_all_seven_in_order_regardless_of_write_order(home: Path, write: Writer) -> None:
    for name in reversed(BOOTSTRAP_ORDER):
        write(name, f"body of {name}")
    soul, found = compose_soul(home)
    assert found == list(BOOTSTRAP_ORDER)
    assert soul == (
        "## AGENTS.md\n\nbody of AGENTS.md\n\n"
        "## SOUL.md\n\nbody of SOUL.md\n\n"
        "## IDENTITY.md\n\nbody of IDENTITY.md\n\n"
        "## USER.md\n\nbody of USER.md\n\n"
        "## TOOLS.md\n\nbody of TOOLS.md\n\n"
        "## HEARTBEAT.md\n\nbody of HEARTBEAT.md\n\n"
        "## MEMORY.md\n\nbody of MEMORY.md"
    )


def test_other_files_are_ignored(home: Path, write: Writer) -> None:
    write("README.md", "not a bootstrap file")
    write("soul.md", "wrong case")
    write("TOOLS.md", "the tools")
    assert compose_soul(home) == ("## TOOLS.md\n\nthe tools", ["TOOLS.md"])


def test_found_is_a_new_list_each_call(home: Path, write: Writer) -> None:
    write("SOUL.md", "x")
    _, first = compose_soul(home)
    first.append("mutated")
    assert compose_soul(home) == ("## SOUL.md\n\nx", ["SOUL.md"])


@pytest.mark.parametrize(
    ("content", "body"),
    [
        (b"", ""),
        (b" \t\r\n\x0b\x0c ", ""),
        (b"\xef\xbb\xbf", ""),
        (b"\xef\xbb\xbf \n", ""),
    ],
    ids=["empty", "whitespace-only", "bom-only", "bom-and-whitespace"],
)
def test_present_file_with_empty_body_keeps_its_section(
    home: Path, write: Writer, content: bytes, body: str
) -> None:
    write("AGENTS.md", "first")
    write("USER.md", content)
    write("MEMORY.md", "last")
    soul, found = compose_soul(home)
    assert found == ["AGENTS.md", "USER.md", "MEMORY.md"]
    assert soul == f"## AGENTS.md\n\nfirst\n\n## USER.md\n\n{body}\n\n## MEMORY.md\n\nlast"


def test_empty_file_alone(home: Path, write: Writer) -> None:
    write("SOUL.md", b"")
    assert compose_soul(home) == ("## SOUL.md\n\n", ["SOUL.md"])


# ---- trim (docs/format.md, section 6) ---------------------------------------

WHITE_SPACE = [
    *map(chr, range(0x09, 0x0E)),
    " ",
    "\x85",
    "\xa0",
    "\u1680",
    *map(chr, range(0x2000, 0x200B)),
    "\u2028",
    "\u2029",
    "\u202f",
    "\u205f",
    "\u3000",
]
NOT_WHITE_SPACE = ["\x1c", "\x1d", "\x1e", "\x1f", "\u200b", "\u180e", "\ufeff", "\x00", "\u2060"]


@pytest.mark.parametrize("char", WHITE_SPACE, ids=lambda c: f"U+{ord(c):04X}")
def test_white_space_is_trimmed_at_both_ends(home: Path, write: Writer, char: str) -> None:
    write("SOUL.md", f"{char}{char}a{char}b{char}{char}")
    assert compose_soul(home) == (f"## SOUL.md\n\na{char}b", ["SOUL.md"])


@pytest.mark.parametrize("char", NOT_WHITE_SPACE, ids=lambda c: f"U+{ord(c):04X}")
def test_other_characters_are_not_trimmed(home: Path, write: Writer, char: str) -> None:
    write("SOUL.md", f" {char}a{char} ")
    assert compose_soul(home) == (f"## SOUL.md\n\n{char}a{char}", ["SOUL.md"])


@pytest.mark.reader_independent
def test_the_trim_set_is_exactly_unicode_white_space() -> None:
    from toolnexus.agents._format import WHITESPACE

    assert sorted(WHITESPACE) == sorted(WHITE_SPACE)


# ---- BOM and decoding (sections 4 and 5) -----------------------------------


@pytest.mark.parametrize(
    ("content", "body"),
    [
        (b"\xef\xbb\xbfhello", "hello"),
        (b"\xef\xbb\xbf\xef\xbb\xbfhello", "\ufeffhello"),  # only one BOM goes
        (b"hello\xef\xbb\xbf", "hello\ufeff"),  # not at the start: kept
        (b"\xef\xbbhello", "\ufffdhello"),  # a partial BOM is invalid UTF-8
        (b"a\xffb", "a\ufffdb"),
        (b"a\xc3(b", "a\ufffd(b"),
        (b"\xe2\x82", "\ufffd"),
        (b"\xed\xa0\x80x", "\ufffd\ufffd\ufffdx"),  # a surrogate: three replacements
        (b"\xf4\x90\x80\x80", "\ufffd\ufffd\ufffd\ufffd"),  # above U+10FFFF
        (b"\xc0\xaf", "\ufffd\ufffd"),  # overlong
        (b"\xf0\x9f\x98\x80", "\U0001f600"),
    ],
)
def test_bom_and_lossy_decoding(home: Path, write: Writer, content: bytes, body: str) -> None:
    write("SOUL.md", content)
    assert compose_soul(home) == (f"## SOUL.md\n\n{body}", ["SOUL.md"])


# ---- cap and back-off, notice (sections 3 and 7) ---------------------------


@pytest.mark.parametrize(
    ("cap", "notice"),
    [
        (CAP, "[truncated: exceeds 2 MB bootstrap cap]"),
        (1024 * 1024, "[truncated: exceeds 1 MB bootstrap cap]"),
        (3 * 1024 * 1024, "[truncated: exceeds 3 MB bootstrap cap]"),
        (1024, "[truncated: exceeds 1 KB bootstrap cap]"),
        (1536 * 1024, "[truncated: exceeds 1536 KB bootstrap cap]"),
        (1000, "[truncated: exceeds 1000 bytes bootstrap cap]"),
        (1, "[truncated: exceeds 1 bytes bootstrap cap]"),
        (1025, "[truncated: exceeds 1025 bytes bootstrap cap]"),
    ],
)
@pytest.mark.reader_independent
def test_notice_text(cap: int, notice: str) -> None:
    assert truncation_notice(cap) == notice


@pytest.mark.parametrize(
    ("content", "cap", "body"),
    [
        (b"abcdef", 6, "abcdef"),  # exactly the cap: not truncated
        (b"abcdefg", 6, "abcdef\n[truncated: exceeds 6 bytes bootstrap cap]"),
        ("aé".encode(), 2, "a\n[truncated: exceeds 2 bytes bootstrap cap]"),  # é split: backed off
        ("aé".encode(), 3, "aé"),
        ("aéb".encode(), 3, "aé\n[truncated: exceeds 3 bytes bootstrap cap]"),
        ("a€".encode(), 2, "a\n[truncated: exceeds 2 bytes bootstrap cap]"),
        ("a€".encode(), 3, "a\n[truncated: exceeds 3 bytes bootstrap cap]"),
        ("a€b".encode(), 4, "a€\n[truncated: exceeds 4 bytes bootstrap cap]"),
        ("a😀b".encode(), 2, "a\n[truncated: exceeds 2 bytes bootstrap cap]"),
        ("a😀b".encode(), 3, "a\n[truncated: exceeds 3 bytes bootstrap cap]"),
        ("a😀b".encode(), 4, "a\n[truncated: exceeds 4 bytes bootstrap cap]"),
        ("a😀b".encode(), 5, "a😀\n[truncated: exceeds 5 bytes bootstrap cap]"),
        # cap 1 or 2 on a 4-byte character: the back-off stops at byte 0.
        ("😀".encode(), 1, "\n[truncated: exceeds 1 bytes bootstrap cap]"),
        ("😀".encode(), 2, "\n[truncated: exceeds 2 bytes bootstrap cap]"),
        ("😀".encode(), 3, "\n[truncated: exceeds 3 bytes bootstrap cap]"),
        # Continuation bytes with no lead: at most 3 are backed off.
        (b"\x80" * 10, 5, "\ufffd\ufffd\n[truncated: exceeds 5 bytes bootstrap cap]"),
        (b"ab\x80\x80\x80\x80\x80", 4, "a\n[truncated: exceeds 4 bytes bootstrap cap]"),
        (b"abcd\xe2\x82", 5, "abcd\n[truncated: exceeds 5 bytes bootstrap cap]"),
        (b"abc\xff\x80\x80", 5, "abc\n[truncated: exceeds 5 bytes bootstrap cap]"),
        # Whitespace before the cut is trimmed before the notice goes on.
        (b"ab   cd", 4, "ab\n[truncated: exceeds 4 bytes bootstrap cap]"),
        (b"    xyz", 3, "\n[truncated: exceeds 3 bytes bootstrap cap]"),
        # A BOM that the cut splits is backed off, not decoded.
        (b"\xef\xbb\xbfabc", 2, "\n[truncated: exceeds 2 bytes bootstrap cap]"),
        (b"\xef\xbb\xbfabc", 3, "\n[truncated: exceeds 3 bytes bootstrap cap]"),
        (b"\xef\xbb\xbfabc", 4, "a\n[truncated: exceeds 4 bytes bootstrap cap]"),
    ],
)
def test_cap_and_back_off_literal(home: Path, write: Writer, content: bytes, cap: int, body: str) -> None:
    write("TOOLS.md", content)
    assert compose_soul(home, max_file_bytes=cap) == (f"## TOOLS.md\n\n{body}", ["TOOLS.md"])


@pytest.mark.parametrize("char", ["é", "€", "😀"], ids=["2-byte", "3-byte", "4-byte"])
@pytest.mark.parametrize("pad", range(4))
@pytest.mark.parametrize("cap", range(1, 13))
def test_cap_at_every_alignment_small(home: Path, write: Writer, char: str, pad: int, cap: int) -> None:
    data = b"p" * pad + char.encode() * 4
    write("SOUL.md", data)
    # The character boundary at or below the cap, computed from the characters.
    kept = ""
    used = 0
    for ch in "p" * pad + char * 4:
        if used + len(ch.encode()) > cap:
            break
        kept += ch
        used += len(ch.encode())
    notice = f"\n[truncated: exceeds {cap} bytes bootstrap cap]"
    expected = kept if len(data) <= cap else kept + notice
    assert compose_soul(home, max_file_bytes=cap) == (f"## SOUL.md\n\n{expected}", ["SOUL.md"])
    assert expected == body_text(data, cap)


@pytest.mark.parametrize("char", ["é", "€", "😀"], ids=["2-byte", "3-byte", "4-byte"])
@pytest.mark.parametrize("shift", range(5))
def test_default_cap_at_every_alignment(home: Path, write: Writer, char: str, shift: int) -> None:
    width = len(char.encode())
    head = CAP - shift
    write("MEMORY.md", b"m" * head + char.encode() * 3)
    # Characters that end at or before the cap survive; a split one does not.
    whole = max(0, (CAP - head) // width)
    body = "m" * head + char * whole
    total = head + 3 * width
    expected = body + (NOTICE_2MB if total > CAP else "")
    soul, found = compose_soul(home)
    assert found == ["MEMORY.md"]
    assert soul == "## MEMORY.md\n\n" + expected


def test_cap_exactly_at_default(home: Path, write: Writer) -> None:
    write("AGENTS.md", b"a" * CAP)
    write("SOUL.md", b"s" * (CAP + 1))
    soul, found = compose_soul(home)
    assert found == ["AGENTS.md", "SOUL.md"]
    assert soul == "## AGENTS.md\n\n" + "a" * CAP + "\n\n## SOUL.md\n\n" + "s" * CAP + NOTICE_2MB


def test_files_on_disk_are_not_modified(home: Path, write: Writer) -> None:
    write("AGENTS.md", b"x" * (CAP + 1024))
    write("SOUL.md", " soul \n")
    before = {p.name: (p.read_bytes(), p.stat().st_mtime_ns, p.stat().st_ctime_ns) for p in home.iterdir()}
    listing = sorted(p.name for p in home.iterdir())
    for cap in (1, 7, CAP):
        compose_soul(home, max_file_bytes=cap)
    after = {p.name: (p.read_bytes(), p.stat().st_mtime_ns, p.stat().st_ctime_ns) for p in home.iterdir()}
    assert after == before
    assert sorted(p.name for p in home.iterdir()) == listing


@pytest.mark.parametrize(
    "char",
    [
        "\x7f",
        "\x80",
        "\xff",
        "\u0100",
        "\u07ff",
        "\u0800",
        "\ud7ff",
        "\ue000",
        "\uffff",
        "\U00010000",
        "\U0010ffff",
    ],
    ids=lambda c: f"U+{ord(c):04X}",
)
def test_code_point_boundaries(home: Path, write: Writer, char: str) -> None:
    # Each boundary of UTF-8 lengths and of str widths (1, 2 and 4 bytes),
    # sparse (the compiled reader decodes that itself) and dense (CPython does).
    body = "ascii text " * 8 + char + " tail" + char + char * 40
    write("SOUL.md", body)
    assert compose_soul(home) == ("## SOUL.md\n\n" + body, ["SOUL.md"])


@pytest.mark.parametrize(
    ("content", "body"),
    [
        (b"\xe0\x80\x80", "\ufffd\ufffd\ufffd"),  # overlong 3-byte
        (b"\xe0\x9f\xbf", "\ufffd\ufffd\ufffd"),  # overlong, just below U+0800
        (b"\xf0\x80\x80\x80", "\ufffd\ufffd\ufffd\ufffd"),  # overlong 4-byte
        (b"\xf0\x8f\xbf\xbf", "\ufffd\ufffd\ufffd\ufffd"),
        (b"\xed\xbf\xbf", "\ufffd\ufffd\ufffd"),  # a low surrogate
        (b"\xf4\x8f\xbf\xbf", "\U0010ffff"),
        (b"\xf5\x80\x80\x80", "\ufffd\ufffd\ufffd\ufffd"),
        (b"x\xc2", "x\ufffd"),  # cut short at the end
        (b"x\xe2\x82 y", "x\ufffd y"),
        (b"x\xf0\x9f\x98", "x\ufffd"),
        (b"abcdefgh\xc3\xa9abcdefgh", "abcdefghéabcdefgh"),  # after an 8-byte ASCII run
        (b"abcdefg\xffabcdefgh", "abcdefg\ufffdabcdefgh"),
    ],
)
def test_ill_formed_sequences(home: Path, write: Writer, content: bytes, body: str) -> None:
    write("SOUL.md", content)
    assert compose_soul(home) == (f"## SOUL.md\n\n{body}", ["SOUL.md"])
    assert body == content.decode("utf-8", "replace").strip()
