"""Sources for the cache, parallelism and prefilter tests: the fixtures, the rule pages' examples
and a tree of generated training scripts (benchmarks/generate_scripts.py)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from torchlint import pages

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = sorted((ROOT / "fixtures").glob("*.py"))


def _generator():
    spec = importlib.util.spec_from_file_location("generate_scripts", ROOT / "benchmarks" / "generate_scripts.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def generate_tree(folder: Path, count: int, seed: int = 0) -> list[Path]:
    """``count`` generated scripts (a tenth of them without torch) in project_NNN subfolders."""
    return _generator().generate(folder, count, seed)


def generated_sources(count: int, seed: int = 0) -> dict[str, str]:
    generator = _generator()
    return {
        f"generated_{index}.py": generator.utility(index, seed) if index % 10 == 9 else generator.script(index, seed)
        for index in range(count)
    }


def page_examples() -> dict[str, str]:
    examples = {}
    for page in sorted(pages.pages_dir().glob("TL*.md")):
        for number, example in enumerate(pages.examples(page.read_text(encoding="utf-8"))):
            examples[f"{page.stem}_{example.tag}_{number}.py"] = example.code
    return examples


def corpus(generated: int = 40) -> dict[str, str]:
    """name -> source for every fixture, every rule page example and ``generated`` scripts."""
    sources = {path.name: path.read_text(encoding="utf-8") for path in FIXTURES}
    sources.update(page_examples())
    sources.update(generated_sources(generated))
    return sources
