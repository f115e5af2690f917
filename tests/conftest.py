"""Shared fixtures: every test runs once per reader, without having to ask.

The autouse ``reader`` fixture routes the whole package through one twin
with ``twins.using()``; its ``compiled`` parameter imports
``toolnexus.agents._capread`` itself, so a missing build is a failure, never
a silent second run of the pure reader. A test that does not depend on the
reader (constants, argument parsing, subprocesses that choose their own)
is marked ``reader_independent`` and runs once; one that needs the compiled
reader alone is marked ``needs_compiled``.

Two options say what is being tested. ``--pure-only``: this install has
no compiled reader (a build without a compiler, or Windows, where it is
implied), so every test runs on the pure reader and the compiled reader's
own tests are skipped. ``--installed``: the package under test is an
installed wheel; without it, the suite refuses to run unless it imports
``toolnexus.agents`` from this checkout's ``src/`` (``pip install -e .``),
so that a change is never left untested by an older install.
"""

from __future__ import annotations

import os
import pickle
import re
import sys
import time
import traceback
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Final

import pytest
from hypothesis import HealthCheck, settings

import toolnexus.agents
from toolnexus.agents import _native
from toolnexus.agents._format import layout
from toolnexus.agents._vocabulary import FileRead
from twins import ReaderName, load, using

CHECKOUT: Final = Path(__file__).resolve().parents[1]
# The twins the suite runs on: both, unless --pure-only (or Windows) says
# the compiled one is not built here. Filled in place, at configuration.
TWINS: list[ReaderName] = ["compiled", "pure"]

# Hypothesis profiles, chosen with TOOLNEXUS_SOUL_FUZZ: "dev" (the default:
# the everyday run, quick), "ci" (six times the examples: what .ci/run, the
# workflows and the wheel builds set) or "long" (a fuzzing session). A test
# that sets its own max_examples scales it by the profile's (examples()).
settings.register_profile("dev", max_examples=50, deadline=None)
settings.register_profile("ci", max_examples=300, deadline=None)
settings.register_profile(
    "long", max_examples=20_000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("TOOLNEXUS_SOUL_FUZZ", "dev"))


def examples(at_ci: int) -> int:
    """``at_ci`` examples under the "ci" profile, scaled to the profile in use (at least 10)."""
    return max(10, at_ci * settings().max_examples // 300)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("toolnexus-soul")
    group.addoption(
        "--pure-only",
        action="store_true",
        help="this install has no compiled reader: run every test on the pure one, skip the compiled one's",
    )
    group.addoption(
        "--installed",
        action="store_true",
        help="test the installed package (a wheel), not this checkout's src/",
    )


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("pure_only") or sys.platform == "win32":  # Windows installs the pure reader only
        TWINS[:] = ["pure"]
    if not sys.platform.startswith(("linux", "darwin")):  # the memory laws' untested systems: try them
        os.environ.setdefault("TOOLNEXUS_SOUL_MEMORY_UNTESTED", "1")
    if not config.getoption("installed"):
        loaded = Path(toolnexus.agents.__file__).resolve().parent
        here = CHECKOUT / "src" / "toolnexus" / "agents"
        if loaded != here:
            raise pytest.UsageError(
                f"the tests import toolnexus.agents from {loaded}, not from this checkout ({here}):"
                " run `pip install -e '.[test]'` here first, or pass --installed to test an installed wheel"
            )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if metafunc.definition.get_closest_marker("reader_independent") is None:
        metafunc.parametrize("reader", TWINS, indirect=True)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if "compiled" in TWINS:
        return
    skip = pytest.mark.skip(reason="--pure-only: this install has no compiled reader")
    for item in items:
        if item.get_closest_marker("needs_compiled") is not None:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def reader(request: pytest.FixtureRequest) -> Iterator[ReaderName | None]:
    """The name of the twin under test, installed behind every public function."""
    name: ReaderName | None = getattr(request, "param", None)
    if name is None:  # a reader-independent test: whatever the package loaded
        yield None
        return
    with using(name):
        yield name


def compose_files(
    name: ReaderName | None, home: Path, names: Sequence[str], cap: int = 2**20, policy: str = "follow"
) -> tuple[str, tuple[str, ...], tuple[FileRead, ...]]:
    """``(soul, found, reads)`` of ``names`` in ``home``, straight from one twin's compose_homes."""
    assert name is not None, "a reader-independent test has no twin of its own"
    module = load(name)
    files = tuple(names)
    (composed,) = module.compose_homes(
        [os.fsencode(home)], [os.fsencode(n) for n in files], cap, policy, layout(files, cap)
    )
    return composed.text, composed.found, composed.reads


Writer = Callable[..., Path]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """An empty persona directory."""
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def write(home: Path) -> Writer:
    """``write(name, content)`` puts bytes or UTF-8 text into the home."""

    def _write(name: str, content: bytes | str, directory: Path | None = None) -> Path:
        target = (directory or home) / name
        data = content.encode("utf-8") if isinstance(content, str) else content
        target.write_bytes(data)
        return target

    return _write


def make_homes(root: Path, count: int) -> list[Path]:
    """``count`` homes ``root/h0``, ``root/h1``, ...: each a SOUL.md saying ``soul <index>``."""
    homes = []
    for index in range(count):
        home = root / f"h{index}"
        home.mkdir()
        (home / "SOUL.md").write_text(f"soul {index}")
        homes.append(home)
    return homes


EXAMPLE_MEMORY = (Path(__file__).resolve().parents[1] / "examples" / "aster" / "MEMORY.md").read_bytes()


@pytest.fixture
def memory(home: Path) -> Path:
    """The example persona's MEMORY.md, in a home of its own."""
    path = home / "MEMORY.md"
    path.write_bytes(EXAMPLE_MEMORY)
    return path


def tool_files(home: Path) -> list[str]:
    """The home's names, a kept file's token and its record's as ``*``: what a memory tool leaves there.

    A change keeps the file it replaced, with its record, until the next one
    (docs/reference/memory-file.md): ``.NAME.tmp-*`` and ``.NAME.was-*``.
    """
    return sorted(re.sub(r"\.(tmp|was)-[0-9a-f]{16}$", r".\1-*", name) for name in os.listdir(home))


def is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def fork() -> int:
    """os.fork(), without 3.12's warning about forking a process with threads.

    The tests fork on purpose (to drop privileges, to check fork safety) and
    only call async-signal-safe work or exec-free Python in the child.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return os.fork()


def in_child(call: Callable[[], object], setup: Callable[[], None] = lambda: None) -> object:
    """``call()`` in a forked child, after ``setup()``: its result, or the exception it raised.

    What the child returns or raises comes back pickled; the child's own
    failure (an unpicklable result) fails the test, with its traceback.
    """
    read_end, write_end = os.pipe()
    pid = fork()
    if pid == 0:  # the child: never returns
        code = 0
        try:
            os.close(read_end)
            setup()
            try:
                outcome: object = ("returned", call())
            except Exception as exc:
                outcome = ("raised", exc)
            os.write(write_end, pickle.dumps(outcome))
        except BaseException:
            code = 1
            traceback.print_exc()
        finally:
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        payload = pipe.read()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, "the child failed"
    how, value = pickle.loads(payload)
    if how == "raised":
        raise value
    return value


def _give_up_root() -> None:
    if is_root():
        os.setgroups([])
        os.setgid(65534)
        os.setuid(65534)


def unprivileged(call: Callable[[], object]) -> object:
    """``call()`` in a forked child that has given up root: its result, or the exception it raised.

    The child takes uid and gid 65534 (nobody) when it runs as root, so it
    can no longer read what only root can.
    """
    return in_child(call, _give_up_root)


def check_note() -> str:
    """What ``check`` says on standard error about the reader: only where the compiled one failed to build."""
    if _native.ACCELERATED or _native.NO_EXTENSIONS:
        return ""
    return (
        "toolnexus-soul: note: pure-Python reader: the compiled one is not built here;"
        " composing is several times slower\n"
    )


def waiting_on_a_lease(task: Path, alive: Callable[[], bool]) -> None:
    """Return once ``task`` (``/proc/PID``, ``/proc/self/task/TID``) waits for a lease, or is done.

    Its ``wchan`` says where it sleeps (``0`` while it runs). Where the
    kernel hides that, it is given five seconds.
    """
    deadline = time.monotonic() + 5
    while alive() and time.monotonic() < deadline:
        try:
            if (task / "wchan").read_text() == "__break_lease":
                return
        except OSError:
            return
        time.sleep(0.002)
