"""tools/corpus.py on a tiny two-repository corpus: counts, table, report and JSON agree."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

TOOLS = Path(__file__).resolve().parent.parent / "tools"


def test_corpus_run_reports_each_finding_per_repo(tmp_path, capsys, monkeypatch):
    # Imported by name from sys.path so its worker processes can unpickle the per-file job.
    monkeypatch.syspath_prepend(str(TOOLS))
    tool = importlib.import_module("corpus")
    root = tmp_path / "corpus"
    (root / "broken" / "pkg").mkdir(parents=True)
    (root / "broken" / "pkg" / "train.py").write_text("import torch\nfor epoch in range(3)\n    pass\n")
    (root / "broken" / "ok.py").write_text("x = 1\n")
    (root / "clean").mkdir()
    (root / "clean" / "main.py").write_text("import torch\nprint(torch.__version__)\n")
    report, rows = tmp_path / "report.md", tmp_path / "findings.json"

    assert tool.main(["--root", str(root), "--report", str(report), "--json", str(rows), "-j", "1"]) == 0

    findings = json.loads(rows.read_text())
    assert [(f["repo"], f["code"], Path(f["path"]).name, f["line"]) for f in findings] == [
        ("broken", "TL000", "train.py", 2)
    ]
    table = capsys.readouterr().out
    broken_row = next(line for line in table.splitlines() if line.startswith("| broken"))
    cells = [cell.strip() for cell in broken_row.strip("|").split("|")]
    assert cells[1] == "2" and cells[-1] == "1"  # two files checked, one finding
    text = report.read_text()
    assert "`pkg/train.py:2:" in text and "`for epoch in range(3)`" in text
    assert "## clean (" in text and ": 0 findings in 1 files" in text
