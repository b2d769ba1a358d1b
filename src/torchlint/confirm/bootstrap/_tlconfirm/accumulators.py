"""TL018 evidence: at each optimizer step, what the accumulator of a finding's statement holds
(`total_loss` in `total_loss += loss`, `losses` in `losses.append(loss)`): whether it carries
autograd history, how large the graph reachable from it is, and whether the history it held at
the last step is still reachable after a new value came in (every step's graph kept alive).

The accumulator is read in the frames of the script on the stack at the step (the training loop
that holds the statement is there), by name and attribute only: reading it runs no user code but
a property.
"""

from __future__ import annotations

import ast
import collections
import os
import sys

import torch

from _tlconfirm import events

# Samples per statement, and autograd nodes counted per sample.
_SAMPLES = 30
_MAX_NODES = 20000


class Accumulators:
    def __init__(self, script: str, lines: frozenset) -> None:
        self.script = os.path.realpath(script)
        self.accumulators = _accumulators(script, lines) if lines else {}
        self.code_lines: dict = {}
        self.samples = collections.Counter()
        # Line -> the graph roots the accumulator held at the last sample. Holding them keeps their
        # identity unique: a new root means the statement accumulated again, and an old one still
        # reachable from the new roots means the history of earlier steps is kept.
        self.roots: dict[int, list] = {}

    def sample(self, step: int) -> None:
        if not self.accumulators:
            return
        frame = sys._getframe(1)
        while frame is not None:
            if os.path.realpath(frame.f_code.co_filename) == self.script:
                self._sample_frame(frame, step)
            frame = frame.f_back

    def _sample_frame(self, frame, step: int) -> None:
        lines = self._lines_of(frame.f_code)
        for line, (name, path) in self.accumulators.items():
            if line not in lines or self.samples[line] >= _SAMPLES:
                continue
            found, value = _read(frame, path)
            if not found:
                continue
            self.samples[line] += 1
            with torch._C.DisableTorchFunction():
                roots = _roots(value)
                graph = _graph(roots)
            previous = self.roots.get(line, [])
            self.roots[line] = roots
            # A new value came in on top of history held at the last sample.
            accumulated = bool(previous) and any(all(root is not old for old in previous) for root in roots)
            # ... and that history is still reachable from the accumulator.
            kept_earlier = accumulated and any(old in graph for old in previous)
            if kept_earlier:
                self.samples[line] = _SAMPLES  # shown: the rest of the run adds nothing
            events.emit(
                "accumulator",
                line=line,
                name=name,
                step=step,
                type=type(value).__name__,
                items=len(value) if isinstance(value, (list, tuple, collections.deque)) else None,
                with_history=len(roots),
                grad_fn=type(roots[0]).__name__ if roots else None,
                nodes=len(graph),
                accumulated=accumulated,
                kept_earlier=kept_earlier,
            )

    def _lines_of(self, code) -> set:
        lines = self.code_lines.get(code)
        if lines is None:
            lines = self.code_lines[code] = {line for _, _, line in code.co_lines() if line is not None}
        return lines


def _accumulators(script: str, lines: frozenset) -> dict[int, tuple[str, list]]:
    """First line of each statement that accumulates -> the accumulator: its text and its name path."""
    try:
        with open(script, encoding="utf-8") as handle:
            tree = ast.parse(handle.read())
    except (OSError, SyntaxError, ValueError):
        return {}
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and node.lineno in lines:
            target = _accumulator(node)
            path = _path(target)
            if path:
                found[node.lineno] = (ast.unparse(target), path)
    return found


def _accumulator(node: ast.stmt):
    if isinstance(node, ast.AugAssign):
        return node.target
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
        return node.targets[0]
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Attribute):
        return node.value.func.value  # losses.append(loss)
    return None


def _path(node) -> list[str] | None:
    """`self.total` -> ["self", "total"]; None for anything else (TL018 reports names and attributes)."""
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        base = _path(node.value)
        return base + [node.attr] if base else None
    return None


def _read(frame, path: list[str]):
    head, *attributes = path
    if head in frame.f_locals:
        value = frame.f_locals[head]
    elif head in frame.f_globals:
        value = frame.f_globals[head]
    else:
        return False, None
    for attribute in attributes:
        try:
            value = getattr(value, attribute)
        except Exception:  # noqa: BLE001 - a property of the user's may raise anything
            return False, None
    return True, value


def _roots(value) -> list:
    """The grad_fn of the accumulator, or of the tensors it holds, where they have one."""
    if isinstance(value, torch.Tensor):
        tensors = [value]
    elif isinstance(value, (list, tuple, collections.deque)):
        tensors = [item for item in value if isinstance(item, torch.Tensor)]
    else:
        tensors = []
    return [tensor.grad_fn for tensor in tensors if tensor.grad_fn is not None]


def _graph(roots: list) -> set:
    """The autograd nodes reachable from `roots` (the first _MAX_NODES of them)."""
    seen = set()
    pending = list(roots)
    while pending and len(seen) < _MAX_NODES:
        node = pending.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        pending.extend(child for child, _ in node.next_functions)
    return seen
