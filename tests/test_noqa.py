"""Suppression comments: `# noqa`, `# noqa: CODES` on the finding's line or on the first or last
line of its statement, and the file-wide `# torchlint: noqa`."""

from __future__ import annotations

import pytest

from torchlint import noqa

from conftest import lint

pytestmark = pytest.mark.usefixtures("probe_rules")


def found(source: str) -> list[tuple[str, int]]:
    return [(d.code, d.line) for d in lint(source)]


@pytest.mark.parametrize(
    "comment",
    ["# noqa", "#noqa", "# NOQA", "# noqa: TL900", "# noqa:TL900", "# noqa: tl900", "# noqa: TL901, TL900",
     "# noqa: TL901,TL900", "# noqa:   TL900", "# type: ignore  # noqa: TL900", "# noqa: TL900 -- probing on purpose"],
)
def test_noqa_on_the_line_suppresses(comment):
    assert found(f"probe()  {comment}\nprobe()\n") == [("TL900", 2)]


@pytest.mark.parametrize(
    "comment", ["# noqa: TL901", "# noqa:  TL901", "# noqa: E501", "# noqa: TL90", "# not noqa", "# noqa-ish: TL900"]
)
def test_noqa_for_other_codes_does_not_suppress(comment):
    expected = [("TL900", 1)]
    if comment == "# noqa-ish: TL900":
        # `# noqa-ish` reads as a bare `# noqa` followed by text (as in flake8): all suppressed.
        expected = []
    assert found(f"probe()  {comment}\n") == expected


def test_code_specific_noqa_keeps_the_other_codes():
    assert found("probe(); other()  # noqa: TL900\n") == [("TL901", 1)]


def test_noqa_inside_a_string_is_not_a_comment():
    assert found('probe("# noqa")\n') == [("TL900", 1)]


MULTILINE = """\
x = probe(
    1,
    2,
)
"""


@pytest.mark.parametrize(("line", "suppressed"), [(1, True), (2, False), (3, False), (4, True)])
def test_noqa_on_the_first_or_last_line_of_a_multiline_statement(line, suppressed):
    lines = MULTILINE.splitlines()
    lines[line - 1] += "  # noqa: TL900"
    assert found("\n".join(lines) + "\n") == ([] if suppressed else [("TL900", 1)])


def test_noqa_on_the_last_line_of_a_nested_statement():
    source = """\
def train():
    for step in range(3):
        loss = compute(
            probe(step),
        )  # noqa: TL900
        other()
"""
    assert found(source) == [("TL901", 6)]


def test_a_statement_noqa_does_not_reach_the_next_statement():
    source = "x = probe(\n    1,\n)  # noqa\ny = probe()\n"
    assert found(source) == [("TL900", 4)]


def test_noqa_on_a_compound_statement_header_line():
    assert found("if probe():  # noqa\n    other()\n") == [("TL901", 2)]


@pytest.mark.parametrize(
    "exemption",
    ["# torchlint: noqa", "#torchlint:noqa", "# TORCHLINT: NOQA", "    # torchlint: noqa"],
)
def test_file_exemption(exemption):
    assert found(f'"""A script."""\n{exemption}\nprobe()\nother()\n') == []


def test_file_exemption_for_some_codes():
    assert found("# torchlint: noqa: TL900\nprobe()\nother()\n") == [("TL901", 3)]
    assert found("# torchlint: noqa: TL900, TL901\nprobe()\nother()\n") == []


def test_file_exemption_must_be_a_comment_line_of_its_own():
    # After code it exempts neither the file nor the line (ruff treats `# ruff: noqa` so).
    assert found("probe()  # torchlint: noqa\nother()\n") == [("TL900", 1), ("TL901", 2)]


def test_file_exemption_skips_even_a_file_that_does_not_parse():
    assert found("# torchlint: noqa\ndef f(:\n") == []


def test_noqa_does_not_hide_a_syntax_error():
    assert [d.code for d in lint("def f(:  # noqa\n")] == ["TL000"]


def test_line_suppressions_map():
    text = "a = 1  # noqa\nb = 2  # noqa: TL900,TL901\ns = '# noqa'\n"
    assert noqa.line_suppressions(text) == {1: noqa.ALL, 2: frozenset({"TL900", "TL901"})}


def test_line_suppressions_of_text_that_does_not_tokenize_keep_what_was_read():
    assert noqa.line_suppressions("a = 1  # noqa\nb = (\n") == {1: noqa.ALL}


def test_an_exemption_inside_a_string_is_not_a_comment():
    source = 'HELP = """\n# torchlint: noqa\n"""\nprobe()\n'
    assert found(source) == [("TL900", 4)]
