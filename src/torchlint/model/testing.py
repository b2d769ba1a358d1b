"""Test code: whether a file belongs to a test suite rather than to a training script.

Some rules judge training choices (a learning rate, a global batch size, re-seeding a sampler
each epoch) that a test does not make: it picks whatever makes its check fast and visible. A file
is test code when a test runner would see it as such:

- by its path: inside a `tests`/`test` folder (or `tests_*`), named `test_*.py`, `*_test.py` or
  `conftest.py`;
- by what it defines: a class deriving from a test case (`unittest.TestCase`, or a project's own
  base whose name says it is one: `TestCasePlus`, `ModelTesterMixin`, `BaseTest`), a pytest-style
  `Test*` class with `test_*` methods, or `test_*` functions; or it imports a test framework.
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import PurePath

import libcst as cst

from torchlint.knowledge.testing import TEST_BASES, TEST_FRAMEWORKS
from torchlint.model.constants import per_model
from torchlint.model.names import dotted

# A capitalised word "Test" in a class name (TestCase, ModelTesterMixin, BaseTests), not a word
# that merely starts with it (Testament).
_TEST_WORD = re.compile(r"Test(?![a-z])|Tester|Tests")


@per_model
def is_test_code(model) -> bool:
    return _test_path(model.path) or _defines_tests(model)


def _test_path(path: str) -> bool:
    if not path:
        return False
    folder, file_name = os.path.split(path)
    name = file_name.rsplit(".", 1)[0]
    if name == "conftest" or name.startswith("test_") or name.endswith("_test"):
        return True
    return _test_folder(folder)


@functools.lru_cache(maxsize=1024)
def _test_folder(folder: str) -> bool:
    # the same answer for every file of a folder
    return any(part in ("tests", "test") or part.startswith("tests_") for part in PurePath(folder).parts)


def _defines_tests(model) -> bool:
    for path in model.imports.bindings.values():
        if any(path == framework or path.startswith(f"{framework}.") for framework in TEST_FRAMEWORKS):
            return True
    for statement in model.module.body:
        if type(statement) is cst.FunctionDef and statement.name.value.startswith("test_"):
            return True
        if type(statement) is cst.ClassDef and is_test_class(model, statement):
            return True
    return False


def is_test_class(model, classdef: cst.ClassDef, seen: set[str] | None = None) -> bool:
    """Whether a test runner collects the class's `test_*` methods: a pytest-style `Test*` class
    with such methods, or a class deriving from a test case."""
    seen = set() if seen is None else seen
    name = classdef.name.value
    if name in seen:
        return False
    seen.add(name)
    if name.startswith("Test") and any(
        isinstance(s, cst.FunctionDef) and s.name.value.startswith("test_") for s in classdef.body.body
    ):
        return True
    for base in classdef.bases:
        if model.qualified_name(base.value) in TEST_BASES:
            return True
        written = dotted(base.value) or ""
        last = written.rsplit(".", 1)[-1]
        local = model.classes.get(last)
        if local is not None and local is not classdef:
            if is_test_class(model, local, seen):
                return True
        elif _TEST_WORD.search(last):
            return True
    return False
