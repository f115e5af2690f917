"""Types of the compiled notifier (the ``Notifier`` of ``_twins``); it mirrors ``_notify_py`` exactly."""

def open_queue() -> int:
    """A new inotify descriptor, non-blocking and close-on-exec; OSError if there is none to be had."""

def add_watch(fd: int, path: bytes, mask: int) -> int:
    """Watch ``path`` (following symlinks unless ``mask`` says not to); returns the watch descriptor."""

def remove_watch(fd: int, wd: int) -> None:
    """Stop watching ``wd``; one the kernel already dropped (EINVAL) is no error."""

def drain(fd: int) -> list[tuple[int, int, bytes]] | None:
    """Every event queued on ``fd``, as ``[(wd, mask, name), ...]``, or None when there is none."""

def filesystem_type(path: bytes) -> int:
    """The ``f_type`` magic number ``statfs`` gives for the filesystem holding ``path``."""
