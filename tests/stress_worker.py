"""Concurrency stress, run in a subprocess by test_hostile.py (a crash then
fails a test instead of killing pytest).

    python stress_worker.py READER MODE CALLS HOME

READER is ``compiled`` or ``pure``; MODE how a writer process (this script
again, as ``write MODE PATH``) replaces MEMORY.md while four threads call
``compose()`` on the home:

- ``rename``: write a new version to a temporary name, ``os.replace`` it in;
- ``recreate``: unlink MEMORY.md, create it again with the new version;
- ``inplace``: truncate MEMORY.md and write the new version in 64 KB pieces.

Versions run from 1 KB to 3 MB (past the 2 MB cap). Each starts with its
number and is made of one letter of its own (with a sparse "é"), so a body
mixing two versions cannot pass for either. Prints one JSON line: calls,
bodies checked, torn bodies (stable and unstable), unstable entries. In
``inplace`` mode the readers go on past CALLS until an unstable entry is
seen, ten times CALLS at most.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import twins
from toolnexus.agents import MAX_BOOTSTRAP_FILE_BYTES, compose

SIZES = (1024, 3000, 5000, 70_000, 1_100_000, 3 * 1024 * 1024)
CAP = MAX_BOOTSTRAP_FILE_BYTES
NOTICE = "\n[truncated: exceeds 2 MB bootstrap cap]"


def version(k: int) -> bytes:
    """Version k of MEMORY.md: its number, then its own letter, no white space at the ends."""
    size = SIZES[k % len(SIZES)]
    letter = "abcdefghijklmnopqrstuvwxyz"[k % 26]
    head = f"v{k:07d}|".encode()
    unit = (letter * 49 + "é").encode()  # 51 bytes
    body = head + unit * ((size - len(head)) // len(unit) + 1)
    return body[:size].decode("utf-8", "ignore").encode()


def expected_text(k: int) -> str:
    """What compose() must give for version k read whole."""
    data = version(k)
    if len(data) <= CAP:
        return data.decode()
    cut = CAP
    while cut > CAP - 3 and data[cut] & 0xC0 == 0x80:
        cut -= 1
    return data[:cut].decode() + NOTICE


def write_version(mode: str, path: str, k: int) -> None:
    data = version(k)
    if mode == "rename":
        tmp = path + ".tmp"
        with open(tmp, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    elif mode == "recreate":
        os.unlink(path)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
    else:
        fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
        try:
            for start in range(0, len(data), 65536):
                os.write(fd, data[start : start + 65536])
        finally:
            os.close(fd)


def writer(mode: str, path: str) -> None:
    """Rewrite MEMORY.md, version after version, until killed."""
    k = 0
    while True:
        k = (k + 1) % (len(SIZES) * 26)
        write_version(mode, path, k)


def main() -> None:  # noqa: PLR0915 - one scenario, read top to bottom
    if sys.argv[1] == "write":
        writer(sys.argv[2], sys.argv[3])
        return
    kind, mode, calls = sys.argv[1], sys.argv[2], int(sys.argv[3])
    twins.use("compiled" if kind == "compiled" else "pure")
    home = sys.argv[4]
    path = os.path.join(home, "MEMORY.md")
    with open(path, "wb") as handle:
        handle.write(version(0))
    expected = {k: expected_text(k) for k in range(len(SIZES) * 26)}
    lock = threading.Lock()
    counts = {"calls": 0, "checked": 0, "torn_stable": 0, "torn_unstable": 0, "unstable": 0, "empty": 0}
    errors: list[str] = []

    def judge(text: str, stable: bool) -> None:
        body = text.removeprefix("## MEMORY.md\n\n")
        if body == "":
            counts["empty"] += 1  # between unlink and create, or just truncated
            return
        try:
            k = int(body[1:8])
            whole = expected[k]
        except (ValueError, KeyError):
            whole = None
        # A version caught half written (created, or rewritten in place) is
        # a prefix of it; its last character may be cut in two, and decode
        # as U+FFFD. A body from two versions is a prefix of neither.
        prefix = body.removesuffix("\ufffd")
        good = whole is not None and (body == whole or whole.startswith(prefix))
        if not good:
            counts["torn_stable" if stable else "torn_unstable"] += 1
            if os.environ.get("STRESS_DEBUG"):
                at = next(
                    (i for i, (a, b) in enumerate(zip(body, whole or "", strict=False)) if a != b), None
                )
                print(
                    "TORN",
                    len(body),
                    body[:12],
                    None if whole is None else len(whole),
                    at,
                    body[at - 3 : at + 3] if at else "",
                    file=sys.stderr,
                )

    def done() -> bool:
        # In place, the test needs reads that never settled; a loaded machine may starve the writer
        # for a while, so go on past the calls asked for until one is seen (ten times as many at most).
        if mode == "inplace" and not counts["unstable"]:
            return counts["calls"] >= 10 * calls
        return counts["calls"] >= calls

    def reader() -> None:
        try:
            while True:
                with lock:
                    if done():
                        return
                    counts["calls"] += 1
                soul = compose(home)
                memory = soul.files[6]
                with lock:
                    if not memory.stable:
                        counts["unstable"] += 1
                    if memory.present:
                        counts["checked"] += 1
                        judge(soul.text, memory.stable)
        except BaseException as exc:  # reported, then the test fails on it
            errors.append(repr(exc))

    threads = [threading.Thread(target=reader) for _ in range(4)]
    write_process = subprocess.Popen([sys.executable, __file__, "write", mode, path])
    try:
        time.sleep(0.05)  # let the writer get going
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        write_process.kill()
        write_process.wait()
    print(json.dumps({**counts, "errors": errors}))


if __name__ == "__main__":
    main()
