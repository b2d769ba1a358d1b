"""Rebuild the precision corpora that benchmarks/corpus.md lists, from mirrored repositories.

Every set in corpus.md is a table of folders, each one repository at one commit, living under a
root outside this repository (`/work/corpus`, `/work/corpus10`, ...; public code is never
committed). This tool makes a listed run repeatable: it extracts each commit's source files (the
`.py` and `.ipynb` files, and `pyproject.toml` / `setup.cfg` for configuration discovery, with
their paths; no symbolic links) from the mirrors into ROOT/FOLDER, and checks the file counts
against the table.

    .venv/bin/python tools/corpus_trees.py --fetch-list             # repositories not mirrored yet
    .venv/bin/python tools/corpus_trees.py --set corpus10 corpus11  # extract what is missing
    .venv/bin/python tools/corpus_trees.py --check                  # compare counts only

A table names its root in a `set` column (`corpus2` is `/work/corpus2`) or, without one, in the
text of its section (the first `/work/corpusN/` it mentions); `--base` moves `/work`.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from mirrors import DEFAULT_MIRROR, extract_tree, git_dir, resolve

DEFAULT_LIST = Path(__file__).resolve().parent.parent / "benchmarks" / "corpus.md"
DEFAULT_BASE = Path("/work")
SOURCE_SUFFIXES = (".py", ".ipynb")
CONFIGURATION_FILES = ("pyproject.toml", "setup.cfg")

_ROOT_MENTION = re.compile(r"/work/(corpus\d*)/")
_COMMIT = re.compile(r"`?([0-9a-f]{7,40})`?")


class ListError(ValueError):
    """corpus.md does not read as the tables this tool expects."""


@dataclass(frozen=True)
class Entry:
    set: str  # the root folder's name under the base: corpus, corpus10, ...
    folder: str
    repo: str
    commit: str
    py: int
    ipynb: int

    def tree(self, base: Path) -> Path:
        return base / self.set / self.folder


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def parse_corpus(text: str) -> list[Entry]:
    """The rows of every `| folder | repository | commit | .py | .ipynb |` table (with or without
    a leading `set` column), each with its set."""
    entries: list[Entry] = []
    section_set: str | None = None
    header: list[str] | None = None
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("#"):
            section_set, header = None, None
            continue
        if not line.startswith("|"):
            header = None
            if section_set is None and (mention := _ROOT_MENTION.search(line)):
                section_set = mention.group(1)
            continue
        cells = _cells(line)
        if header is None:
            header = cells if "repository" in cells and "commit" in cells else None
            continue
        if set(line) <= set("|-: "):
            continue
        row = dict(zip(header, cells))
        where = row.get("set") or section_set
        commit = _COMMIT.fullmatch(row.get("commit", ""))
        if where is None or commit is None or len(cells) != len(header):
            raise ListError(f"line {number}: a table row without a set or a commit: {line.strip()}")
        try:
            py, ipynb = int(row[".py"]), int(row[".ipynb"])
        except (KeyError, ValueError):
            raise ListError(f"line {number}: the .py / .ipynb counts are not numbers: {line.strip()}") from None
        entries.append(Entry(where, row["folder"], row["repository"], commit.group(1), py, ipynb))
    return entries


def is_source(path: str) -> bool:
    name = PurePosixPath(path).name
    return name.endswith(SOURCE_SUFFIXES) or name in CONFIGURATION_FILES


def counts(tree: Path) -> tuple[int, int]:
    files = [p for p in tree.rglob("*") if p.is_file()]
    return sum(p.suffix == ".py" for p in files), sum(p.suffix == ".ipynb" for p in files)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", type=Path, default=DEFAULT_LIST, help="the corpus list (markdown)")
    parser.add_argument("--mirror", type=Path, default=DEFAULT_MIRROR, help="folder of mirrored repositories")
    parser.add_argument("--base", type=Path, default=DEFAULT_BASE, help="the folder that holds the sets' roots")
    parser.add_argument("--set", nargs="*", default=[], help="only these sets (corpus, corpus10, ...)")
    parser.add_argument("--fetch-list", action="store_true", help="print the repositories not mirrored, then exit")
    parser.add_argument("--check", action="store_true", help="compare the counts of the trees present; extract nothing")
    args = parser.parse_args(argv)

    try:
        entries = parse_corpus(args.list.read_text(encoding="utf-8"))
    except (OSError, ListError) as error:
        print(f"{args.list}: {error}", file=sys.stderr)
        return 2
    entries = [e for e in entries if not args.set or e.set in args.set]
    if args.fetch_list:
        missing = sorted({f"{e.repo} {e.commit}" for e in entries if git_dir(args.mirror, e.repo) is None})
        print("\n".join(missing))
        return 0

    problems = present = 0
    for entry in entries:
        tree = entry.tree(args.base)
        if not tree.exists() and not args.check:
            gitdir = git_dir(args.mirror, entry.repo)
            commit = gitdir and resolve(gitdir, entry.commit)
            if commit is None:
                print(f"{entry.set}/{entry.folder}: {entry.repo} {entry.commit} is not mirrored", file=sys.stderr)
                problems += 1
                continue
            extract_tree(gitdir, commit, tree, keep=is_source, mark_root=False)
        if not tree.exists():
            continue
        present += 1
        found = counts(tree)
        if found != (entry.py, entry.ipynb):
            print(f"{entry.set}/{entry.folder}: {found[0]} .py and {found[1]} .ipynb, the list says "
                  f"{entry.py} and {entry.ipynb}", file=sys.stderr)
            problems += 1
    print(f"{len(entries)} trees listed, {present} present, {problems} with problems", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
