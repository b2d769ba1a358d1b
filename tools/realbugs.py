"""Measure torchlint's recall on real bugs: the buggy and fixed versions of public fix commits.

The list lives in benchmarks/realbugs.toml (fields explained in its header); the repositories are
mirrored outside this repository (public code is never committed), by default under
/work/.mirror/OWNER+NAME/ as the `fetch` tool leaves them. For each bug the whole tree of the
buggy parent and of the fix is extracted into a temporary folder (as `git archive | tar -x`
would, skipping blobs the mirror lacks: rules that read the project's other modules need them), and the torchlint CLI checks the bug's files
with every rule selected, from the tree's root, as a user would run it there.

Matching: the bug is found when the buggy tree has a finding of the bug's rule within TOLERANCE
lines of the recorded line or of one of its `also` lines, in the file that line belongs to. On
the fixed tree every finding of that rule in those files is listed; when the bug's
`fixed_silent` is true each one is a false positive.

    .venv/bin/python tools/realbugs.py                        # every bug, table on stdout
    .venv/bin/python tools/realbugs.py --report /tmp/rb.md    # plus a detailed report
    .venv/bin/python tools/realbugs.py --only kair-set-epoch --rule TL006
    .venv/bin/python tools/realbugs.py --fetch-list           # the repositories to mirror
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import threading
import tomllib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from mirrors import DEFAULT_MIRROR, extract_tree, git_dir

DEFAULT_LIST = Path(__file__).resolve().parent.parent / "benchmarks" / "realbugs.toml"
TOLERANCE = 3
REQUIRED = ("id", "repo", "fix", "buggy", "path", "line", "rule", "kind", "fixed_silent")


@dataclass(frozen=True)
class Anchor:
    path: str
    line: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"


@dataclass(frozen=True)
class Bug:
    id: str
    repo: str
    fix: str
    buggy: str
    path: str
    line: int
    rule: str
    kind: str
    fixed_silent: bool
    also: tuple[Anchor, ...] = ()
    fixed_path: str = ""

    @property
    def anchors(self) -> tuple[Anchor, ...]:
        return (Anchor(self.path, self.line),) + self.also

    @property
    def buggy_files(self) -> list[str]:
        return sorted({anchor.path for anchor in self.anchors})

    @property
    def fixed_files(self) -> list[str]:
        """The bug's files in the fixed tree: the renamed main file, the other files as named."""
        renamed = self.fixed_path or self.path
        return sorted({renamed} | {anchor.path for anchor in self.also if anchor.path != self.path})


class ListError(ValueError):
    """The bug list is malformed; the message names the entry and the field."""


def _anchor(value: object, path: str, where: str) -> Anchor:
    if isinstance(value, int) and not isinstance(value, bool):
        return Anchor(path, value)
    if isinstance(value, str):
        other, sep, line = value.rpartition(":")
        if sep and other and line.isdigit():
            return Anchor(other, int(line))
    raise ListError(f"{where}: `also` entries are line numbers or 'path:line', not {value!r}")


def parse_bugs(text: str) -> list[Bug]:
    data = tomllib.loads(text)
    bugs: list[Bug] = []
    seen: set[str] = set()
    for number, entry in enumerate(data.get("bug", []), start=1):
        where = f"bug #{number} ({entry.get('id', 'no id')})"
        missing = [name for name in REQUIRED if name not in entry]
        if missing:
            raise ListError(f"{where}: missing {', '.join(missing)}")
        unknown = set(entry) - set(REQUIRED) - {"also", "fixed_path"}
        if unknown:
            raise ListError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
        if entry["id"] in seen:
            raise ListError(f"{where}: duplicate id")
        seen.add(entry["id"])
        also = tuple(_anchor(value, entry["path"], where) for value in entry.get("also", []))
        bugs.append(
            Bug(
                id=entry["id"], repo=entry["repo"], fix=entry["fix"], buggy=entry["buggy"],
                path=entry["path"], line=int(entry["line"]), rule=entry["rule"], kind=entry["kind"],
                fixed_silent=bool(entry["fixed_silent"]), also=also, fixed_path=entry.get("fixed_path", ""),
            )
        )
    return bugs


def load_bugs(path: Path) -> list[Bug]:
    return parse_bugs(path.read_text(encoding="utf-8"))


# --- matching -------------------------------------------------------------------------------

def _same_file(finding_path: str, wanted: str) -> bool:
    return Path(os.path.normpath(finding_path)).as_posix() == Path(os.path.normpath(wanted)).as_posix()


def matching_finding(bug: Bug, findings: list[dict], tolerance: int = TOLERANCE) -> dict | None:
    """The finding of the bug's rule nearest one of its anchors, within `tolerance` lines."""
    best: tuple[int, dict] | None = None
    for finding in findings:
        if finding["code"] != bug.rule:
            continue
        for anchor in bug.anchors:
            if _same_file(finding["path"], anchor.path):
                distance = abs(finding["line"] - anchor.line)
                if distance <= tolerance and (best is None or distance < best[0]):
                    best = (distance, finding)
    return best[1] if best else None


def fixed_findings(bug: Bug, findings: list[dict]) -> list[dict]:
    """Findings of the bug's rule on its files in the fixed tree."""
    return [
        f for f in findings
        if f["code"] == bug.rule and any(_same_file(f["path"], p) for p in bug.fixed_files)
    ]


# --- trees and runs -------------------------------------------------------------------------

def run_torchlint(tree: Path, files: list[str], python: str) -> tuple[list[dict], str]:
    """Findings (JSON format, paths relative to the tree) and stderr of one CLI run in `tree`."""
    present = [f for f in files if (tree / f).is_file()]
    if not present:
        return [], f"none of {files} exists in this tree"
    proc = subprocess.run(
        [python, "-m", "torchlint", "check", "--select", "ALL", "--preview", "--format", "json", "--no-cache",
         "--exit-zero", "--no-respect-gitignore", "-q", *present],
        cwd=tree, capture_output=True, text=True,
    )
    if proc.returncode != 0:
        return [], f"torchlint exited {proc.returncode}: {proc.stderr.strip()[-2000:]}"
    findings = json.loads(proc.stdout or "[]")
    missing = sorted(set(files) - set(present))
    return findings, proc.stderr.strip() + (f" (absent: {', '.join(missing)})" if missing else "")


@dataclass
class Outcome:
    bug: Bug
    error: str = ""
    found: dict | None = None
    buggy_findings: list[dict] = field(default_factory=list)
    fixed_hits: list[dict] = field(default_factory=list)

    @property
    def false_positives(self) -> list[dict]:
        return self.fixed_hits if self.bug.fixed_silent else []


class Trees:
    """Extracted trees, one per (repository, commit), shared by bugs of the same commit."""

    def __init__(self, mirror: Path, root: Path):
        self.mirror, self.root, self.made = mirror, root, {}
        self.locks: collections.defaultdict[tuple[str, str], threading.Lock] = collections.defaultdict(threading.Lock)
        self.locks_lock = threading.Lock()

    def get(self, repo: str, commit: str) -> Path:
        key = (repo, commit)
        with self.locks_lock:
            lock = self.locks[key]
        with lock:  # bugs of one commit run in parallel; the tree is extracted once
            if key not in self.made:
                gitdir = git_dir(self.mirror, repo)
                if gitdir is None:
                    raise FileNotFoundError(f"no mirror of {repo} under {self.mirror}")
                dest = self.root / repo.replace("/", "+") / commit[:12]
                extract_tree(gitdir, commit, dest)
                self.made[key] = dest
        return self.made[key]


def evaluate(bug: Bug, trees: Trees, python: str) -> Outcome:
    outcome = Outcome(bug)
    try:
        buggy_tree = trees.get(bug.repo, bug.buggy)
        fixed_tree = trees.get(bug.repo, bug.fix)
    except (FileNotFoundError, subprocess.CalledProcessError) as error:
        detail = getattr(error, "stderr", b"") or b""
        outcome.error = f"{error} {detail.decode(errors='replace').strip()}".strip()
        return outcome
    outcome.buggy_findings, note = run_torchlint(buggy_tree, bug.buggy_files, python)
    if not outcome.buggy_findings and note.startswith(("torchlint exited", "none of")):
        outcome.error = note
        return outcome
    outcome.found = matching_finding(bug, outcome.buggy_findings)
    fixed, note = run_torchlint(fixed_tree, bug.fixed_files, python)
    if note.startswith(("torchlint exited", "none of")):
        outcome.error = f"fixed version: {note}"
    outcome.fixed_hits = fixed_findings(bug, fixed)
    return outcome


# --- reports --------------------------------------------------------------------------------

def summary_rows(outcomes: list[Outcome]) -> list[tuple[str, int, int, int, int]]:
    """(rule, bugs, found, errors, false positives) per rule, then the total."""
    per_rule: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0, 0, 0])
    for o in outcomes:
        row = per_rule[o.bug.rule]
        row[0] += 1
        row[1] += o.found is not None
        row[2] += bool(o.error) and o.found is None
        row[3] += len(o.false_positives)
    rows = [(rule, *row) for rule, row in sorted(per_rule.items())]
    total = [sum(r[i] for r in rows) for i in range(1, 5)]
    return rows + [("all", *total)]


def available_codes(python: str) -> set[str]:
    """The rule codes of the torchlint that `python` runs (rules still being built are absent)."""
    proc = subprocess.run([python, "-c", "from torchlint import registry; print(*registry.all_codes())"],
                          capture_output=True, text=True, check=True)
    return set(proc.stdout.split())


def table(outcomes: list[Outcome], codes: set[str] | None = None) -> str:
    lines = ["| rule | bugs | found | recall | not run | FP on fixed |", "|---|---:|---:|---:|---:|---:|"]
    for rule, bugs, found, errors, fps in summary_rows(outcomes):
        missing = " (rule not in this build)" if codes is not None and rule != "all" and rule not in codes else ""
        lines.append(f"| {rule}{missing} | {bugs} | {found} | {found / bugs:.0%} | {errors} | {fps} |")
    return "\n".join(lines)


def _finding_line(f: dict) -> str:
    return f"`{f['path']}:{f['line']}` {f['code']} {f['message']}"


def detailed_report(outcomes: list[Outcome], header: str, codes: set[str] | None = None) -> str:
    parts = [header, "", table(outcomes, codes), ""]
    parts.append("## Missed")
    for o in outcomes:
        if o.found is None:
            b = o.bug
            other = sorted({f["code"] for f in o.buggy_findings})
            why = f"not run: {o.error}" if o.error else f"other findings in its files: {', '.join(other) or 'none'}"
            parts.append(f"- **{b.id}** {b.rule} {b.repo}@{b.buggy[:10]} `{b.path}:{b.line}`: {b.kind} ({why})")
    parts += ["", "## Found"]
    for o in outcomes:
        if o.found is not None:
            parts.append(f"- **{o.bug.id}** {_finding_line(o.found)}")
    parts += ["", "## Findings of the bug's rule on fixed versions"]
    for o in outcomes:
        for f in o.fixed_hits:
            label = "FALSE POSITIVE" if o.bug.fixed_silent else "another instance left by the fix"
            parts.append(f"- **{o.bug.id}** ({label}) {_finding_line(f)}")
    return "\n".join(parts) + "\n"


def fetch_list(bugs: list[Bug]) -> str:
    commits: dict[str, set[str]] = collections.defaultdict(set)
    for bug in bugs:
        commits[bug.repo] |= {bug.fix, bug.buggy}
    return "\n".join(f"{repo} {' '.join(sorted(c))}" for repo, c in sorted(commits.items()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", type=Path, default=DEFAULT_LIST, help="the bug list (TOML)")
    parser.add_argument("--mirror", type=Path, default=DEFAULT_MIRROR, help="folder of mirrored repositories")
    parser.add_argument("--only", nargs="*", default=[], help="bug ids to run")
    parser.add_argument("--rule", nargs="*", default=[], help="run only the bugs of these rules")
    parser.add_argument("--report", type=Path, help="write the detailed report (markdown) here")
    parser.add_argument("--json", type=Path, help="write every outcome as JSON here")
    parser.add_argument("--python", default=sys.executable, help="the interpreter that has torchlint installed")
    parser.add_argument("-j", "--jobs", type=int, default=2, help="bugs checked at once (each runs the CLI in a subprocess)")
    parser.add_argument("--fetch-list", action="store_true", help="print the repositories and commits needed, then exit")
    args = parser.parse_args(argv)

    try:
        bugs = load_bugs(args.list)
    except (ListError, tomllib.TOMLDecodeError) as error:
        print(f"{args.list}: {error}", file=sys.stderr)
        return 2
    if args.fetch_list:
        print(fetch_list(bugs))
        return 0
    bugs = [b for b in bugs if (not args.only or b.id in args.only) and (not args.rule or b.rule in args.rule)]
    outcomes = []
    with tempfile.TemporaryDirectory(prefix="realbugs-") as tmp:
        trees = Trees(args.mirror, Path(tmp))
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            for outcome in pool.map(lambda bug: evaluate(bug, trees, args.python), bugs):
                status = "found" if outcome.found else ("ERROR " + outcome.error if outcome.error else "missed")
                fps = f", {len(outcome.false_positives)} FP on fixed" if outcome.false_positives else ""
                print(f"{outcome.bug.id:40} {outcome.bug.rule} {status}{fps}", file=sys.stderr)
                outcomes.append(outcome)
    codes = available_codes(args.python)
    print(table(outcomes, codes))
    if args.report:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                cwd=Path(__file__).parent).stdout.strip()
        header = f"# torchlint on the real-bug set ({len(bugs)} bugs, torchlint commit {commit})"
        args.report.write_text(detailed_report(outcomes, header, codes), encoding="utf-8")
    if args.json:
        args.json.write_text(json.dumps([
            {"id": o.bug.id, "rule": o.bug.rule, "found": o.found, "error": o.error,
             "fixed_hits": o.fixed_hits, "fixed_silent": o.bug.fixed_silent}
            for o in outcomes
        ], indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
