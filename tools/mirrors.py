"""Mirrored public repositories (outside this repository) and the trees of their commits.

The `fetch` tool leaves a snapshot of OWNER/NAME under /work/.mirror/OWNER+NAME/; a bare clone
there works too. Both tools/realbugs.py (whole trees of fix commits) and tools/corpus_trees.py
(the source files of the precision corpora) extract commits from there.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

DEFAULT_MIRROR = Path("/work/.mirror")


def git_dir(mirror: Path, repo: str) -> Path | None:
    """The git directory of a mirrored repository (the `fetch` tool's layouts, or a bare clone)."""
    base = mirror / repo.replace("/", "+")
    for candidate in (base / "repo" / ".git", base / "repo", base / ".git", base):
        if (candidate / "HEAD").is_file() and (candidate / "objects").is_dir():
            return candidate
    return None


def resolve(gitdir: Path, revision: str) -> str | None:
    """The full commit id of ``revision``, or None when the mirror does not hold it."""
    proc = subprocess.run(
        ["git", f"--git-dir={gitdir}", "rev-parse", "--verify", "-q", f"{revision}^{{commit}}"],
        capture_output=True, text=True,
    )
    return proc.stdout.strip() if proc.returncode == 0 else None


def extract_tree(
    gitdir: Path, commit: str, dest: Path, keep: Callable[[str], bool] | None = None, mark_root: bool = True,
) -> list[str]:
    """Write the commit's files (those ``keep`` accepts, by default all) under dest; return the
    paths whose blobs the mirror lacks. With ``mark_root``, an empty `.git` folder marks dest as
    a clone's root.

    Like `git archive | tar -x`, but a snapshot may leave out its largest files (data, weights):
    those are skipped and reported instead of failing the whole tree.
    """
    listing = subprocess.run(
        ["git", f"--git-dir={gitdir}", "ls-tree", "-r", "-z", "--full-tree", commit],
        check=True, capture_output=True,
    ).stdout
    blobs = []
    for entry in listing.split(b"\0"):
        if not entry:
            continue
        meta, _, raw_name = entry.partition(b"\t")
        mode, kind, sha = meta.split()
        name = raw_name.decode("utf-8", "surrogateescape")
        # Symbolic links and submodules are not sources.
        if kind == b"blob" and mode != b"120000" and (keep is None or keep(name)):
            blobs.append((sha.decode(), name))
    batch = subprocess.run(
        ["git", f"--git-dir={gitdir}", "cat-file", "--batch"],
        input="".join(f"{sha}\n" for sha, _ in blobs).encode(), check=True, capture_output=True,
    ).stdout
    absent, offset = [], 0
    for sha, name in blobs:
        end = batch.index(b"\n", offset)
        header = batch[offset:end].split()
        offset = end + 1
        if header[-1] == b"missing":
            absent.append(name)
            continue
        size = int(header[2])
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(batch[offset:offset + size])
        offset += size + 1
    if mark_root:
        # A checkout's root holds `.git`: torchlint finds the project's top folder (and so its
        # import roots) by it, as it does in the clone a user runs it in.
        (dest / ".git").mkdir(parents=True, exist_ok=True)
    return absent
