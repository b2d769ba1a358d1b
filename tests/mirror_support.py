"""A fake mirror of a public repository, as the `fetch` tool leaves one, for the tools' tests."""

from __future__ import annotations

import subprocess
from pathlib import Path


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
        check=True, capture_output=True, text=True,
    ).stdout.strip()


def commit(repo: Path, files: dict[str, str], message: str) -> str:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def mirrored_repo(mirror: Path, name: str) -> Path:
    """An empty repository at the place the mirror keeps OWNER/NAME."""
    repo = mirror / name.replace("/", "+") / "repo"
    repo.mkdir(parents=True)
    git(repo, "init", "-q")
    return repo


def drop_blob(repo: Path, revision: str, path: str) -> None:
    """Remove a blob, as a snapshot that left out a large file does."""
    blob = git(repo, "rev-parse", f"{revision}:{path}")
    (repo / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
