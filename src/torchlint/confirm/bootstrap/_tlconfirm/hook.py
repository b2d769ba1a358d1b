"""Run a callback right after `import torch` completes, without importing torch ourselves.

A process that never imports torch (a tokenizer helper, `git`, the shell) pays nothing.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys


class _AfterTorchImport(importlib.abc.MetaPathFinder):
    def __init__(self, callback) -> None:
        self.callback = callback

    def find_spec(self, name, path, target=None):
        if name != "torch":
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        loader_exec = spec.loader.exec_module
        callback = self.callback

        def exec_module(module):
            loader_exec(module)
            callback(module)

        spec.loader.exec_module = exec_module
        return spec


def after_torch_import(callback) -> None:
    if "torch" in sys.modules:
        callback(sys.modules["torch"])
    else:
        sys.meta_path.insert(0, _AfterTorchImport(callback))
