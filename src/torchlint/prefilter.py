"""Which files can produce a finding at all: a substring search before anything is parsed.

Soundness. Every mission rule (TL001-TL008) fires only on evidence that comes from a qualified
name, and the model resolves names only through import statements (`import torch as T`,
`from torch.utils.data import DataLoader`; relative imports and star imports resolve nothing).
So a file in which none of the top-level packages a rule knows appears as text cannot give that
rule its evidence: the package name would have to be spelt out in an `import` or `from` statement.
The words are searched in the decoded source, so the test holds in any PEP 263 encoding.

Only rules listed here are pre-filtered; any other rule (a new rule, a plugin, the test suite's
probe rule) makes every file go through the full check, so adding a rule can never be silently
skipped. The pre-filter replaces the LibCST parse and the model by CPython's syntax check, so a
syntax error is still reported (TL000) in every file.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

# The top-level packages whose names give each rule its evidence. `torchvision`, `torchaudio`
# and `torch_xla` contain "torch"; model zoos and frameworks that do not (timm, accelerate,
# lightning, deepspeed, transformers) only ever silence a rule or name a module whose device
# placement or training still has to be seen through torch.
_TORCH = ("torch",)
REQUIRED_WORDS: Mapping[str, tuple[str, ...]] = {
    "TL001": _TORCH,
    "TL002": _TORCH,
    "TL003": _TORCH,
    "TL004": _TORCH,
    "TL005": _TORCH,
    "TL006": _TORCH,
    "TL007": _TORCH,
    "TL008": _TORCH,
}


@functools.lru_cache(maxsize=64)
def _words(codes: frozenset[str]) -> tuple[str, ...] | None:
    """The words one of which a file must contain for any of ``codes`` to fire; None when some
    rule among them is not pre-filtered (every file must be checked)."""
    words: set[str] = set()
    for code in codes:
        required = REQUIRED_WORDS.get(code)
        if required is None:
            return None
        words.update(required)
    return tuple(sorted(words))


def can_fire(text: str, codes: frozenset[str]) -> bool:
    """False only when no rule among ``codes`` can possibly report anything in ``text``."""
    words = _words(codes)
    return words is None or any(word in text for word in words)
