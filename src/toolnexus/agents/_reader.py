"""Chooses the bounded reader: the compiled ``_capread`` or its pure twin.

Set ``TOOLNEXUS_SOUL_NO_EXTENSIONS`` to a non-empty value other than ``0``
before import to force the pure-Python reader. ``ACCELERATED`` says which one
was loaded; nothing else in the package needs to know.
"""

from __future__ import annotations

import os

from . import _capread_py

__all__ = ["ACCELERATED", "NO_EXTENSIONS", "read_home", "read_homes"]

NO_EXTENSIONS = os.environ.get("TOOLNEXUS_SOUL_NO_EXTENSIONS", "") not in ("", "0")

if NO_EXTENSIONS:
    read_home = _capread_py.read_home
    read_homes = _capread_py.read_homes
    ACCELERATED = False
else:
    try:
        from ._capread import read_home, read_homes
    except ImportError:  # not built here: a source install without a compiler
        read_home = _capread_py.read_home
        read_homes = _capread_py.read_homes
        ACCELERATED = False
    else:
        ACCELERATED = True
