"""Writing a fixed file: all or nothing, with the file's permissions kept.

The new bytes go to a temporary file in the same folder (so the rename cannot cross file
systems), which then replaces the original with os.replace: a reader sees the old file or the
new one, never half of one, and an interrupted run leaves the original intact. Mode and (where
allowed) owner are copied; a read-only file is not written. A symbolic link is followed, so the
link stays a link and its target is what changes.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from pathlib import Path


def atomic_write(path: Path, data: bytes) -> None:
    target = Path(os.path.realpath(path))
    status = target.stat()
    if not os.access(target, os.W_OK):
        # Replacing the file would succeed in a writable folder; a read-only file says "do not".
        raise PermissionError(errno.EACCES, "file is read-only", str(path))
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".torchlint-tmp")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, stat.S_IMODE(status.st_mode))
        with contextlib.suppress(OSError):  # only root may give the file back to its owner
            os.chown(temporary, status.st_uid, status.st_gid)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
