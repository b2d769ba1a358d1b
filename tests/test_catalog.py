"""rules/catalog.py is what torchlint knows about its rules without importing them: every rule
module has its entry, and each rule class is described by exactly its entry."""

import dataclasses
import subprocess
import sys
from pathlib import Path

from torchlint import registry
from torchlint.rules import catalog

RULES_PACKAGE = Path(catalog.__file__).parent


def test_every_rule_module_has_an_entry_that_loads_it():
    modules = {path.stem for path in RULES_PACKAGE.glob("tl*.py")}
    loaded = {entry.code: entry.load() for entry in catalog.RULES}
    assert {rule.__module__.rsplit(".", 1)[1] for rule in loaded.values()} == modules
    for entry in catalog.RULES:
        rule = loaded[entry.code]
        assert issubclass(rule, registry.Rule)
        assert {f.name: getattr(rule, f.name) for f in dataclasses.fields(entry)} == dataclasses.asdict(entry)


def test_codes_are_unique_and_in_order():
    codes = [entry.code for entry in catalog.RULES]
    assert codes == sorted(set(codes))
    assert list(registry.all_rules()) == codes


def test_selection_and_settings_import_no_rule():
    # What a run answered from the cache needs of the rules: resolving the selection, the
    # options, the cache fingerprint, the names for the output.
    script = (
        "import sys\n"
        "from torchlint import registry\n"
        "from torchlint.config import ConfigResolver\n"
        "settings = ConfigResolver(None, {'select': ['ALL'], 'preview': True}).for_path(__import__('pathlib').Path('x.py'))\n"
        "settings.fingerprint(); settings.selection_warnings()\n"
        "[rule.name for rule in registry.all_codes().values()]\n"
        "loaded = sorted(m for m in sys.modules if m.startswith(('libcst', 'torchlint.rules.tl', 'torchlint.model')))\n"
        "print(loaded)\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert result.stdout == "[]\n"
