"""Which files can produce a finding at all: a substring search before anything is parsed.

Soundness. A rule whose catalogue entry says `prefiltered` (rules/catalog.py; every rule
torchlint ships: the mission rules TL001-TL008; TL013, TL014, TL017, TL019 and TL020, which start
from a torch loader, load, loss, module class or tensor factory; the training-loop rules TL011,
TL012, TL015, TL016 and TL018, each of which needs a torch.optim optimizer's step or a known
module's call) fires only on a value whose kind the model knows: a device, module, tensor,
loader, sampler, optimizer or traced module. The model gives a value a
kind only from
- a qualified name listed in `torchlint.knowledge` (`torch.device`, `timm.create_model`,
  `transformers.AutoModel.from_pretrained`...), and the model resolves names only through import
  statements, so the package name is spelt out in the file (`import torch as T` still says
  `torch`; relative imports resolve nothing) unless a star import of a project module binds it
  (`from models import *`, where models.py imports torch): a file with a star import is always
  checked;
- a device string (`"cuda"`, `"mps:0"`, `f"cuda:{rank}"`), whose device name is in the file.
Hence a file that contains none of those package names and device names cannot fire such a
rule. Project-wide analysis does not change this: what a file learns from the summaries of the
modules it imports (a helper moves an argument, re-seeds it, iterates it in a training loop) is
about values the file itself makes, whose kinds still come from its own text; a module built by
a class of another project module (and an optimizer known only by how a loop steps it) counts only
in a file that imports torch. The words are
derived from the knowledge tables themselves, less the packages those tables name only as readers
of values (`logging.info`, `json.dump`, `tqdm` around a loader), so a new library added to the
knowledge is never silently filtered out; the test suite checks that every package the knowledge
and the model name is classified, and that the full check finds nothing in fixtures and rule
examples with these words renamed. The search runs on the decoded text, so it
holds in any PEP 263 encoding.

Only those rules are filtered; any other rule (a new rule whose entry does not say so, a plugin,
the test suite's probe rule) makes every file go through the full check. A skipped file still gets
CPython's syntax check, so a syntax error is still reported (TL000) in every file.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
import re
from collections.abc import Iterator

from torchlint.rules import catalog

PREFILTERED = frozenset(entry.code for entry in catalog.RULES if entry.prefiltered)

# Packages the knowledge and the model name only to read a value (a device that is only logged,
# an environment variable, `math.sqrt`), to see through a wrapper (`tqdm(loader)`, `@functools.wraps`)
# or to end the run (`sys.exit`): no value gets a kind from them alone, so they are no evidence.
READERS_ONLY = frozenset(
    {"abc", "functools", "glob", "itertools", "json", "logging", "math", "np", "numpy", "os", "posixpath", "pprint",
     "rich", "sys", "tqdm", "warnings", "yaml"}
)

# `from models import *` binds the names models.py imports (`torch` among them) without spelling them
_STAR_IMPORT = re.compile(r"\bimport\s+\*")
_QUALIFIED = re.compile(r"^([A-Za-z_]\w*)(?:\.\w+)*\.$|^([A-Za-z_]\w*)(?:\.\w+)+$")


@functools.cache
def knowledge_roots() -> frozenset[str]:
    """The top-level package of every qualified name (or namespace prefix) in the knowledge
    (the prefilter's evidence and the packages no project module can be)."""
    import torchlint.knowledge as knowledge

    roots: set[str] = set()
    for info in pkgutil.iter_modules(knowledge.__path__):
        module = importlib.import_module(f"{knowledge.__name__}.{info.name}")
        for name, value in vars(module).items():
            if not name.startswith("__"):
                roots.update(_roots_in(value))
    return frozenset(roots)


def _roots_in(value) -> Iterator[str]:
    if isinstance(value, str):
        match = _QUALIFIED.match(value)
        if match:
            yield match.group(1) or match.group(2)
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _roots_in(key)
            yield from _roots_in(item)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for item in value:
            yield from _roots_in(item)


def device_names() -> set[str]:
    """The device names a string can carry (`"cuda"`, `"xpu:1"`), placement devices only."""
    from torchlint.knowledge import devices

    names = re.search(r"\(([\w|]+)\)", devices.DEVICE_STRING.pattern).group(1).split("|")
    return set(names) - set(devices.NON_PLACEMENT_DEVICES)


@functools.cache
def evidence_words() -> tuple[str, ...]:
    words = (knowledge_roots() - READERS_ONLY) | device_names()
    # `torch` already finds `torchvision`, `lightning` finds `pytorch_lightning`.
    return tuple(sorted(w for w in words if not any(other != w and other in w for other in words)))


@functools.lru_cache(maxsize=64)
def _needs_check(codes: frozenset[str]) -> bool:
    """Whether every file must be fully checked for ``codes`` (some rule is not pre-filtered)."""
    return not codes <= PREFILTERED


def can_fire(text: str, codes: frozenset[str]) -> bool:
    """False only when no rule among ``codes`` can possibly report anything in ``text``."""
    if _needs_check(codes):
        return True
    return bool(codes) and (any(word in text for word in evidence_words()) or _STAR_IMPORT.search(text) is not None)
