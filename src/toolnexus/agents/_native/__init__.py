"""The native seam, chosen once at import: each compiled twin where it is built, else its pure one.

The package calls the twins through ``reader`` and ``notifier`` (None without inotify): tests swap them."""

from __future__ import annotations

import os
from contextlib import suppress
from typing import Final

from . import _capread_py
from ._twins import Notifier, Reader

NO_EXTENSIONS: Final = os.environ.get("TOOLNEXUS_SOUL_NO_EXTENSIONS", "") not in ("", "0")
"""True when ``TOOLNEXUS_SOUL_NO_EXTENSIONS`` (not "" or "0") chose the pure twins, built or not."""


def _twins() -> tuple[Reader, Notifier | None]:
    reader: Reader = _capread_py
    notifier: Notifier | None = None
    if not NO_EXTENSIONS:  # each on its own: a build whose notifier failed keeps its fast reader
        with suppress(ImportError):  # not built here: a source install without a compiler
            from . import _capread

            reader = _capread
        with suppress(ImportError):
            from . import _notify

            notifier = _notify
    if notifier is None:
        with suppress(ImportError):  # no inotify: not Linux
            from . import _notify_py

            notifier = _notify_py
    return reader, notifier


reader, notifier = _twins()
ACCELERATED: Final = reader is not _capread_py
"""True when the compiled reader is in use; False on the pure one (not built, or asked for)."""
