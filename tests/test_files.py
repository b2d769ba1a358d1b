"""Which files a run checks: folders walked, default and configured excludes, .gitignore."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from torchlint import files
from torchlint.config import DEFAULT_EXCLUDE, ConfigResolver
from torchlint.runner import RunOptions, targets

pytestmark = pytest.mark.usefixtures("probe_rules", "in_tmp")


def touch(*paths: str) -> None:
    for path in paths:
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("x = 1\n", encoding="utf-8")


def found(*paths: str, respect_gitignore: bool = True, force_exclude: bool = False) -> list[str]:
    options = RunOptions(respect_gitignore=respect_gitignore, force_exclude=force_exclude)
    chosen = targets([Path(p) for p in paths], ConfigResolver(), options)
    return [path.as_posix() for path in chosen]


def test_python_sources_stubs_and_notebooks_in_walk_order():
    # Each folder's files by name, then its subfolders by name: stable whatever the file system.
    touch("b.py", "a.py", "pkg/z.pyi", "pkg/sub/n.ipynb", "pkg/readme.md", "pkg/data.json", "setup.cfg")
    assert found(".") == ["a.py", "b.py", "pkg/z.pyi", "pkg/sub/n.ipynb"]


@pytest.mark.parametrize("folder", [".git", ".venv", "venv", "build", "dist", "__pycache__", "node_modules",
                                    "site-packages", ".tox", ".torchlint_cache", ".ipynb_checkpoints"])
def test_default_excludes_at_any_depth(folder):
    assert folder in DEFAULT_EXCLUDE
    touch(f"{folder}/a.py", f"src/{folder}/b.py", "src/kept.py")
    assert found(".") == ["src/kept.py"]


def test_an_excluded_folder_or_file_named_explicitly_is_checked():
    touch("build/gen.py", "build/__pycache__/cached.py", "build/build/nested.py", "venv/lib/x.py")
    assert found("build/gen.py") == ["build/gen.py"]
    # Inside the named folder, the excludes apply again.
    assert found("build") == ["build/gen.py"]
    assert found("venv") == ["venv/lib/x.py"]


def test_force_exclude_applies_the_excludes_to_explicit_paths_too():
    # pre-commit names every staged file; --force-exclude keeps configured excludes in force.
    touch("build/gen.py", "venv/lib/x.py", "src/kept.py")
    named = ("build/gen.py", "venv/lib/x.py", "build", "src/kept.py")
    assert found(*named, force_exclude=True) == ["src/kept.py"]
    assert found(*named) == ["build/gen.py", "venv/lib/x.py", "src/kept.py"]


def test_cli_force_exclude_honours_configured_extend_exclude(run_cli):
    Path("pyproject.toml").write_text('[tool.torchlint]\nextend-exclude = ["generated"]\n', encoding="utf-8")
    Path("generated").mkdir()
    Path("generated/bad.py").write_text("def f(:\n", encoding="utf-8")
    assert run_cli("check", "--no-cache", "generated/bad.py").exit_code == 1
    assert run_cli("check", "--no-cache", "--force-exclude", "generated/bad.py").exit_code == 0


def test_gitignore_is_honoured():
    Path(".git").mkdir()
    Path(".gitignore").write_text("outputs/\n*_generated.py\n!keep_generated.py\n/rooted.py\n")
    touch("outputs/run.py", "model_generated.py", "keep_generated.py", "rooted.py", "sub/rooted.py", "train.py")
    assert found(".") == ["keep_generated.py", "train.py", "sub/rooted.py"]
    assert found(".", respect_gitignore=False) == [
        "keep_generated.py", "model_generated.py", "rooted.py", "train.py", "outputs/run.py", "sub/rooted.py",
    ]


def test_a_nested_gitignore_applies_to_its_own_folder():
    Path(".git").mkdir()
    Path("sub").mkdir()
    Path("sub/.gitignore").write_text("local.py\n")
    touch("local.py", "sub/local.py", "sub/deeper/local.py", "sub/other.py")
    assert found(".") == ["local.py", "sub/other.py"]


def test_a_gitignore_outside_the_repository_does_not_apply():
    Path("outer").mkdir()
    Path("outer/.gitignore").write_text("*.py\n")
    Path("outer/repo/.git").mkdir(parents=True)
    touch("outer/repo/train.py")
    assert found("outer/repo") == ["outer/repo/train.py"]


def test_a_file_named_explicitly_is_checked_even_when_gitignored():
    Path(".git").mkdir()
    Path(".gitignore").write_text("scratch.py\n")
    touch("scratch.py")
    assert found("scratch.py") == ["scratch.py"]


def test_cli_no_respect_gitignore(run_cli):
    Path(".git").mkdir()
    Path(".gitignore").write_text("ignored.py\n")
    Path("ignored.py").write_text("probe()\n")
    assert run_cli(".").exit_code == 0
    result = run_cli("--no-respect-gitignore", ".")
    assert result.exit_code == 1
    assert result.stdout.startswith("ignored.py:1:1: TL900")


def test_configured_exclude_patterns_match_paths_and_names():
    Path("pyproject.toml").write_text('[tool.torchlint]\nextend-exclude = ["experiments/old", "*_pb2.py"]\n')
    touch("experiments/old/a.py", "experiments/new/b.py", "proto/api_pb2.py", "proto/api.py")
    assert found(".") == ["experiments/new/b.py", "proto/api.py"]


def test_a_missing_path_is_kept_for_the_engine_to_report():
    assert found("nowhere.py") == ["nowhere.py"]


def test_a_symlink_loop_does_not_hang():
    touch("pkg/a.py")
    os.symlink("..", "pkg/loop")
    assert found(".") == ["pkg/a.py"]


def test_each_file_once_however_often_it_is_named():
    touch("pkg/a.py", "pkg/b.py")
    assert found("pkg", "pkg/a.py", "pkg") == ["pkg/a.py", "pkg/b.py"]


def test_a_build_or_dist_folder_holding_a_package_is_source():
    touch("dist/__init__.py", "dist/sampler.py", "build/lib/gen.py", "src/build/out.py")
    Path("train.py").write_text("from utils import world\n", encoding="utf-8")
    assert found(".") == ["train.py", "dist/__init__.py", "dist/sampler.py"]


@pytest.mark.parametrize(
    ("importer", "source"),
    [
        ("from dist.sampler import EpochSampler\n", True),
        ("import dist.launch\n", True),
        ("from .dist import helpers\n", True),
        ("from . import dist\n", True),
        # `dist` as a name, not a module path: the folder stays build output.
        ("import torch.distributed as dist\n", False),
        ("from torch import distributed as dist\n", False),
    ],
)
def test_a_dist_folder_without_init_is_source_when_a_module_next_to_it_imports_it(importer, source):
    touch("pkg/dist/helpers.py")
    Path("pkg/train.py").write_text(importer, encoding="utf-8")
    assert ("pkg/dist/helpers.py" in found(".")) is source


def test_build_output_names_the_user_writes_exclude_packages_too():
    touch("dist/__init__.py", "build/__init__.py", "kept.py")
    Path("pyproject.toml").write_text('[tool.torchlint]\nextend-exclude = ["dist"]\n', encoding="utf-8")
    assert found(".") == ["kept.py", "build/__init__.py"]
    Path("pyproject.toml").write_text('[tool.torchlint]\nexclude = ["build"]\n', encoding="utf-8")
    assert found(".") == ["kept.py", "dist/__init__.py"]


def test_force_exclude_keeps_a_file_of_a_dist_package():
    # pre-commit names the staged file; its folder is a package, so it is source.
    touch("dist/__init__.py", "dist/sampler.py", "build/gen.py")
    assert found("dist/sampler.py", "build/gen.py", force_exclude=True) == ["dist/sampler.py"]


def test_the_excludes_say_how_many_files_they_skipped():
    touch("kept.py", "build/a.py", "build/sub/b.py", "dist/c.ipynb", "venv/lib/d.py", "old/e.py", "notes/x.py")
    Path("pyproject.toml").write_text('[tool.torchlint]\nextend-exclude = ["old", "notes/x.py"]\n', encoding="utf-8")
    Path(".gitignore").write_text("venv/\n", encoding="utf-8")  # ignored anyway: not counted
    skipped: list[int] = []
    chosen = targets([Path(".")], ConfigResolver(), RunOptions(), skipped)
    assert [p.as_posix() for p in chosen] == ["kept.py"]
    assert sorted(skipped) == [1, 1, 1, 2]  # notes/x.py, old/, dist/, build/


def test_the_summary_line_counts_excluded_files(run_cli):
    touch("kept.py", "build/a.py", "build/b.py")
    result = run_cli(".")
    assert result.exit_code == 0
    assert result.stderr == "All checks passed! (1 file checked, 2 excluded)\n"
    Path("kept.py").write_text("probe()\n", encoding="utf-8")
    assert run_cli(".").stderr.startswith("Found 1 finding in 1 file, 2 excluded.\n")
    assert run_cli("--force-exclude", "build/a.py").stderr == (
        "warning: No Python files found under the given path(s) (1 excluded)\nAll checks passed! (0 files checked, 1 excluded)\n"
    )
    touch("elsewhere/plain.py")
    assert run_cli("elsewhere").stderr == "All checks passed! (1 file checked)\n"


def test_real_paths_are_those_path_resolve_gives():
    touch("real/pkg/a.py", "real/b.py")
    os.symlink("real/pkg", "linked")
    os.symlink("real/b.py", "real/pkg/c.py")
    real_path = files.RealPaths()
    for path in ["real/pkg/a.py", "linked/a.py", "real/pkg/c.py", "linked/c.py", "real/pkg/missing.py",
                 "real/pkg/../b.py", "real/pkg/..", ".", "linked", "real/./pkg"]:
        assert real_path(Path(path)) == Path(path).resolve(), path


@pytest.mark.parametrize("is_dir", [False, True])
def test_plain_name_excludes_match_as_gitignore_patterns_do(is_dir):
    # Plain names (the default excludes) are matched by name, without pathspec.
    names = ("build", ".venv", "site-packages", "x_1.py")
    assert files._plain_names(names) == frozenset(names)
    for pattern in ("*.py", "a/b", "!keep", "a b", "\\#x", "."):
        assert files._plain_names((*names, pattern)) is None, pattern
    spec = files._spec(names)
    for relative in ["build", "src/build", "build/a.py", "a/.venv/b", "x_1.py", "src/x_1.py", "builds", "src/a.py"]:
        path = Path(relative)
        slash = "/" if is_dir else ""
        by_pathspec = spec.match_file(path.name + slash) or (
            spec.match_file(relative + slash) and not spec.match_file(path.parent.as_posix() + "/")
        )
        assert files.excluded_entry(path, is_dir, names, None) == by_pathspec, relative
