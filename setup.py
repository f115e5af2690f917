"""Build the optional extensions (``_native._capread``; ``_native._notify`` on Linux).

Everything else is in pyproject.toml.

A source install without a working compiler falls back to the pure-Python
reader with a warning. A wheel build (``CIBUILDWHEEL=1``) or
``TOOLNEXUS_SOUL_REQUIRE_EXTENSIONS=1`` turns that fallback into an error, so
a slow wheel is never shipped by accident. ``TOOLNEXUS_SOUL_NO_EXTENSIONS=1``
skips the extension on purpose.
"""

from __future__ import annotations

import os
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


def _flag(name: str) -> bool:
    return os.environ.get(name, "") not in ("", "0")


NO_EXTENSIONS = _flag("TOOLNEXUS_SOUL_NO_EXTENSIONS")
REQUIRE_EXTENSIONS = _flag("TOOLNEXUS_SOUL_REQUIRE_EXTENSIONS") or _flag("CIBUILDWHEEL")
# The reader is POSIX (openat, pread, O_NOFOLLOW); Windows gets the pure one.
SUPPORTED = sys.platform != "win32" and sys.implementation.name == "cpython"
# The notifier is inotify, which only Linux has.
LINUX = sys.platform.startswith("linux")

WARNING = """
*********************************************************************
 WARNING: toolnexus-soul's C extension could not be built ({reason}).
 The package will work, on the slower pure-Python reader.
 Set TOOLNEXUS_SOUL_REQUIRE_EXTENSIONS=1 to make this an error.
*********************************************************************
"""


class OptionalBuildExt(build_ext):
    """build_ext that degrades to pure Python unless the extension is required."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:
            self._give_up(exc)

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception as exc:
            self._give_up(exc)

    def _give_up(self, exc: Exception) -> None:
        if REQUIRE_EXTENSIONS:
            raise exc
        sys.stderr.write(WARNING.format(reason=f"{type(exc).__name__}: {exc}"))


def _extensions() -> list[Extension]:
    if NO_EXTENSIONS:
        return []
    if not SUPPORTED:
        return []
    try:
        from Cython.Build import cythonize  # noqa: PLC0415 - optional: pure install without it
    except ImportError as exc:
        if REQUIRE_EXTENSIONS:
            raise
        sys.stderr.write(WARNING.format(reason=f"Cython is not installed: {exc}"))
        return []
    native = "src/toolnexus/agents/_native"
    extensions = [
        Extension(
            "toolnexus.agents._native._capread",
            [f"{native}/_capread.pyx"],
            depends=[f"{native}/include/capread_os.h", f"{native}/include/capread_utf8.h"],
        )
    ]
    if LINUX:
        extensions.append(Extension("toolnexus.agents._native._notify", [f"{native}/_notify.pyx"]))
    return cythonize(extensions, compiler_directives={"language_level": "3"}, quiet=True)


setup(ext_modules=_extensions(), cmdclass={"build_ext": OptionalBuildExt})
