"""A writer that takes no lock, stopped in the middle of its work (run as a script, by the tests).

    python paused_writer.py append  PATH FIRST SECOND   # open to append, write FIRST, stop, write SECOND
    python paused_writer.py inplace PATH FIRST SECOND   # empty it at open, write FIRST, stop, write SECOND

It stops itself with SIGSTOP after its first write (after its open, when
FIRST is empty); the test continues it with SIGCONT, once the tool has done
what it is to do meanwhile. Then it writes SECOND and closes the file.
"""

from __future__ import annotations

import os
import signal
import sys


def main() -> None:
    mode, path, first, second = sys.argv[1:5]
    flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if mode == "append" else os.O_TRUNC)
    fd = os.open(path, flags, 0o644)
    if first:
        os.write(fd, first.encode())
    os.kill(os.getpid(), signal.SIGSTOP)
    if second:
        os.write(fd, second.encode())
    os.close(fd)


if __name__ == "__main__":
    main()
