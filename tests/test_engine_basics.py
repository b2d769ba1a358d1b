from torchlint import engine
from torchlint.config import Settings

from conftest import lint


def test_syntax_error_is_one_tl000_at_the_error():
    diagnostics = lint("def f(:\n    pass\n")
    assert [(d.code, d.line, d.column) for d in diagnostics] == [("TL000", 1, 7)]
    assert "SyntaxError" in diagnostics[0].message


def test_syntax_error_column_is_the_texts_not_the_files_on_disk(tmp_path):
    # An editor's unsaved text: CPython would read the line of an unclosed bracket from the file.
    path = tmp_path / "train.py"
    path.write_text("x = 1\nyy\n")
    (diagnostic,) = engine.check_source("x = 1\nyyyyyyyyyyyyy = f(1, 2\n", str(path))
    assert (diagnostic.code, diagnostic.line, diagnostic.column) == ("TL000", 2, 18)


def test_missing_file_is_a_diagnostic(tmp_path):
    analysis = engine.check_path(tmp_path / "missing.py", Settings())
    assert [d.code for d in analysis.diagnostics] == ["TL000"]
    assert "No such file" in analysis.diagnostics[0].message


def test_lambda_star_parameters_are_bound_in_the_lambda():
    import libcst as cst

    from torchlint.model import Model

    model = Model(cst.parse_module("xs = 1\nf = lambda *xs, **kw: (xs, kw)\n"))
    lam = next(n for n in model.nodes if isinstance(n, cst.Lambda))
    reads = [r for r in model.reads_table["xs"] if model.scope(r) is lam]
    assert [b.how for b in model.bindings_of(reads[0])] == ["param"]
    assert [b.how for b in model.bindings(lam, "kw")] == ["param"]
