"""Autofix: rules describe fixes on the tree (registry.NodeFix); this package applies them.

- transform: one LibCST transformer applies every selected replacement of a file, plus imports;
- text: a NodeFix as text edits (diagnostics.Fix) for JSON, SARIF and editors;
- loop: `--fix` for one file: apply, re-parse, re-check, drop what fails, repeat until stable;
- write: atomic writes that keep permissions, encoding and BOM;
- report: the unified diff and the list of applied fixes the CLI prints;
- build: helpers rules call to make their NodeFixes.
"""
