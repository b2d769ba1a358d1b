"""Where in the user's code something happens: the frames outside Python, torch and torchlint."""

from __future__ import annotations

import functools
import os
import sys
import sysconfig

_LIBRARY_ROOTS = tuple(
    sorted(
        {
            os.path.realpath(path) + os.sep
            for name in ("stdlib", "platstdlib", "purelib", "platlib")
            if (path := sysconfig.get_paths().get(name))
        }
        | {os.path.realpath(os.path.dirname(os.path.dirname(__file__))) + os.sep}
    )
)


@functools.lru_cache(maxsize=4096)
def is_user_file(filename: str) -> bool:
    if not filename or filename.startswith("<"):
        return False
    real = os.path.realpath(filename)
    return not real.startswith(_LIBRARY_ROOTS)


def user_frames(frame=None, limit: int = 6) -> list[list]:
    """[file, line, function] of the innermost user frames, innermost first."""
    frame = frame or sys._getframe(1)
    found = []
    while frame is not None and len(found) < limit:
        code = frame.f_code
        if is_user_file(code.co_filename):
            found.append([code.co_filename, frame.f_lineno, code.co_name])
        frame = frame.f_back
    return found


def user_frames_of_traceback(tb, limit: int = 6) -> list[list]:
    """The same for an exception's traceback, innermost first."""
    found = []
    while tb is not None:
        code = tb.tb_frame.f_code
        if is_user_file(code.co_filename):
            found.append([code.co_filename, tb.tb_lineno, code.co_name])
        tb = tb.tb_next
    return list(reversed(found))[:limit]

