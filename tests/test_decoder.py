"""The compiled reader's UTF-8 decoder against CPython's, and its vector paths against its scalar one."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import TWINS
from twins import load

if "compiled" not in TWINS:
    pytest.skip("--pure-only: the decoder is the compiled reader's own", allow_module_level=True)
pytestmark = pytest.mark.reader_independent  # the decoder is the compiled reader's own
COMPILED = load("compiled")
HARNESS = Path(__file__).parent / "native" / "utf8_check.c"

# Text in every width and script the decoder has a path for, and bytes of
# every kind; prefixes shift it across the 16-byte blocks of the vectors.
SCRIPTS = [
    "a",
    " ",
    "\n",
    "é",
    "ß",
    "Ж",
    "€",
    "த",
    "中",
    "😀",
    "\U0010ffff",
    "\x80",
    "\ufeff",
    "abcdefgh" * 2,
]
texts = st.lists(st.sampled_from(SCRIPTS), max_size=200).map("".join).map(lambda t: t.encode())
raw = st.binary(max_size=300)


@given(data=texts | raw, shift=st.integers(0, 31))
def test_decodes_as_cpython_at_every_alignment(data: bytes, shift: int) -> None:
    padded = b"x" * shift + data
    assert COMPILED.decode_utf8(padded) == padded.decode("utf-8", "replace")
    assert COMPILED.decode_utf8(padded[shift:]) == data.decode("utf-8", "replace")


@given(data=texts, cut=st.integers(0, 4))
def test_texts_cut_short(data: bytes, cut: int) -> None:
    short = data[: max(len(data) - cut, 0)]
    assert COMPILED.decode_utf8(short) == short.decode("utf-8", "replace")


def test_every_length_and_alignment_of_each_width() -> None:
    for char in ("é", "Ж", "த", "中", "😀", "\U00010000"):
        encoded = char.encode()
        for length in range(0, 70):
            for shift in range(0, 17):
                data = b"a" * shift + encoded * length
                assert COMPILED.decode_utf8(data) == data.decode(), (char, length, shift)
                assert COMPILED.decode_utf8(data[:-1]) == data[:-1].decode("utf-8", "replace")


@given(unit=texts, middle=texts | raw, copies=st.integers(1, 64), shift=st.integers(0, 31))
def test_long_texts_decoded_in_two_streams(unit: bytes, middle: bytes, copies: int, shift: int) -> None:
    # From 4096 bytes on, the fill decodes the two halves side by side; the
    # middle lands near where the text is split.
    half = b"x" * (2048 + shift) + (unit * copies)[:2048].decode("utf-8", "ignore").encode()
    data = half + middle + half
    assert COMPILED.decode_utf8(data) == data.decode("utf-8", "replace")


def run_harness(compiler: list[str], runner: list[str], tmp_path: Path) -> str:
    binary = tmp_path / "utf8_check"
    # Not the sanitizer runtime .ci/sanitize preloads into Python: the harness
    # and the compiler are separate programs.
    env = {key: value for key, value in os.environ.items() if key != "LD_PRELOAD"}
    subprocess.run(
        [*compiler, "-O2", "-o", str(binary), str(HARNESS)], check=True, capture_output=True, env=env
    )
    done = subprocess.run(
        [*runner, str(binary)], capture_output=True, text=True, timeout=600, check=False, env=env
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.mark.slow  # a C build and 18 million decodes: seconds, for code that changes rarely
@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the harness is built for Linux")
def test_vector_paths_match_the_scalar_one(tmp_path: Path) -> None:
    assert run_harness(["cc"], [], tmp_path) == "ok 18209088\n"


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the harness is built for Linux")
def test_vector_paths_under_sanitizers(tmp_path: Path) -> None:
    # Every vector load and table lookup within bounds, no undefined behaviour.
    sanitize = ["-fsanitize=address,undefined", "-fno-sanitize-recover=undefined", "-fno-omit-frame-pointer"]
    probe = subprocess.run(
        ["cc", *sanitize, "-x", "c", "-o", str(tmp_path / "probe"), "-"],
        input=b"int main(void) { return 0; }",
        capture_output=True,
        check=False,
        env={key: value for key, value in os.environ.items() if key != "LD_PRELOAD"},
    )
    if probe.returncode != 0:
        pytest.skip("this compiler has no AddressSanitizer runtime")
    assert run_harness(["cc", *sanitize, "-g"], [], tmp_path) == "ok 18209088\n"


@pytest.mark.slow
@pytest.mark.skipif(
    shutil.which("aarch64-linux-gnu-gcc") is None or shutil.which("qemu-aarch64") is None,
    reason="needs Debian's gcc-aarch64-linux-gnu and qemu-user",
)
def test_neon_path_matches_the_scalar_one(tmp_path: Path) -> None:
    # The NEON path, built for AArch64 and run under emulation (about 12 s).
    assert run_harness(["aarch64-linux-gnu-gcc", "-static"], ["qemu-aarch64"], tmp_path) == "ok 18209088\n"
