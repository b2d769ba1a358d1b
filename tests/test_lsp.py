"""The language server, driven over stdio by pytest-lsp's real LSP client.

The server is started through tests/probe_rule.py, so the test-only rule TL900 (flags `probe()`
calls, fix: rename to `checked`) is there next to the real rules.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES
from pygls.protocol import default_converter

from torchlint import pages
from torchlint.config import CONFIG_FILES
from torchlint.diagnostics import Diagnostic, Position
from torchlint.lsp import suppress

PROBE = Path(__file__).with_name("probe_rule.py")
DEBOUNCE_MS = 50



def _recording_client() -> LanguageClient:
    """pytest-lsp's client, also keeping every publishDiagnostics (it keeps only the last)."""
    client = LanguageClient(converter_factory=default_converter)
    client.published = []
    for method, handler in DEFAULT_CLIENT_FEATURES.items():
        if method != types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS:
            client.feature(method)(handler)

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def publish(ls: LanguageClient, params: types.PublishDiagnosticsParams) -> None:
        ls.published.append(params)
        ls.diagnostics[params.uri] = params.diagnostics

    client.registrations = []

    @client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def register(ls: LanguageClient, params: types.RegistrationParams) -> None:
        ls.registrations.extend(params.registrations)

    return client


SERVER = ClientServerConfig(server_command=[sys.executable, str(PROBE), "lsp"], client_factory=_recording_client)


async def _start(client: LanguageClient, root: Path, editor: str = "visual-studio-code", **options) -> None:
    await client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities(editor),
            root_uri=root.as_uri(),
            initialization_options={"torchlint": {"debounceMs": DEBOUNCE_MS, **options}},
        )
    )


# Starting a server costs seconds (pygls and lsprotocol are large), so one serves the module;
# each test works in its own folder and restores any client settings it changes.
lsp_test = pytest.mark.asyncio(loop_scope="module")


@pytest_lsp.fixture(config=SERVER, scope="module")
async def client(lsp_client: LanguageClient, tmp_path_factory):
    await _start(lsp_client, tmp_path_factory.mktemp("workspace"))
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=SERVER, loop_scope="module")
async def neovim(lsp_client: LanguageClient, tmp_path):
    await _start(lsp_client, tmp_path, "neovim")
    yield
    await lsp_client.shutdown_session()


def _reset_client_settings(client: LanguageClient) -> None:
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"torchlint": {"debounceMs": DEBOUNCE_MS}})
    )


class Document:
    """One file of the test workspace, open in the client."""

    def __init__(self, client: LanguageClient, path: Path, text: str) -> None:
        self.client, self.path, self.text, self.version = client, path, text, 1
        self.uri = path.as_uri()
        path.write_text(text)
        client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(uri=self.uri, language_id="python", version=1, text=text)
            )
        )

    def change(self, text: str) -> None:
        self.text, self.version = text, self.version + 1
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=self.uri, version=self.version),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
            )
        )

    def save(self) -> None:
        self.path.write_text(self.text)
        self.client.text_document_did_save(
            types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=self.uri))
        )

    def publishes(self) -> list[types.PublishDiagnosticsParams]:
        return [p for p in self.client.published if p.uri == self.uri]

    async def published(self, count: int, timeout: float = 10) -> list[types.Diagnostic]:
        """The diagnostics of the ``count``-th publish for this document, once it arrives."""
        deadline = time.monotonic() + timeout
        while len(self.publishes()) < count:
            assert time.monotonic() < deadline, f"no publish #{count} for {self.path.name}"
            await asyncio.sleep(0.01)
        return list(self.publishes()[count - 1].diagnostics)

    async def caught_up(self, timeout: float = 10) -> list[types.Diagnostic]:
        """The diagnostics published for the document's current version, once they arrive."""
        deadline = time.monotonic() + timeout
        while not any(p.version == self.version for p in self.publishes()):
            assert time.monotonic() < deadline, f"no publish of version {self.version} for {self.path.name}"
            await asyncio.sleep(0.01)
        return list(self.publishes()[-1].diagnostics)

    async def quiet(self, seconds: float) -> int:
        """How many publishes arrive in the next ``seconds``."""
        before = len(self.publishes())
        await asyncio.sleep(seconds)
        return len(self.publishes()) - before


def _where(diagnostics) -> list[tuple[str, int, int, int, int]]:
    return [
        (d.code, d.range.start.line, d.range.start.character, d.range.end.line, d.range.end.character)
        for d in diagnostics
    ]


def _apply(text: str, edits: list[types.TextEdit]) -> str:
    """Apply single-line edits (all the tests need), last first."""
    lines = text.split("\n")
    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        assert edit.range.start.line == edit.range.end.line
        line = lines[edit.range.start.line]
        lines[edit.range.start.line] = line[: edit.range.start.character] + edit.new_text + line[edit.range.end.character :]
    return "\n".join(lines)


def _edits(action: types.CodeAction) -> list[types.TextEdit]:
    (document_edit,) = action.edit.document_changes
    return list(document_edit.edits)


@lsp_test
async def test_open_publishes_diagnostics_with_code_link_and_the_call_as_range(client: LanguageClient, tmp_path):
    doc = Document(client, tmp_path / "train.py", "import os\n\nvalue = probe(1) + 2\n")
    (diagnostic,) = await doc.published(1)
    assert _where([diagnostic]) == [("TL900", 2, 8, 2, 16)]
    assert diagnostic.code_description.href == pages.url("TL900")
    assert (diagnostic.source, diagnostic.severity) == ("torchlint", types.DiagnosticSeverity.Warning)
    assert diagnostic.message == "call of probe(): replace it with checked()"


@lsp_test
async def test_utf16_columns_for_a_client_that_speaks_only_utf16(client: LanguageClient, tmp_path):
    # VS Code speaks UTF-16: the emoji is two units. Neovim offers UTF-8 first: four bytes.
    text = 's = "\U0001f600"; probe()\n'
    assert _where(await Document(client, tmp_path / "vscode.py", text).published(1)) == [("TL900", 0, 10, 0, 17)]


@lsp_test
async def test_utf8_columns_for_a_client_that_asks_for_them(neovim: LanguageClient, tmp_path):
    text = 's = "\U0001f600"; probe()\n'
    assert _where(await Document(neovim, tmp_path / "nvim.py", text).published(1)) == [("TL900", 0, 12, 0, 19)]


@lsp_test
async def test_change_is_checked_after_a_pause_and_unchanged_text_is_not_rechecked(client: LanguageClient, tmp_path):
    doc = Document(client, tmp_path / "train.py", "probe()\n")
    assert len(await doc.published(1)) == 1
    doc.change("probe()\nprobe()\n")
    assert _where(await doc.published(2)) == [("TL900", 0, 0, 0, 7), ("TL900", 1, 0, 1, 7)]
    doc.save()  # the saved text is the text already checked
    doc.change(doc.text)
    assert await doc.quiet(0.5) == 0
    doc.change("x = 1\n")
    doc.save()  # checks at once, and the check the change scheduled is not run again
    assert await doc.published(3) == []
    assert await doc.quiet(0.3) == 0


@lsp_test
async def test_a_syntax_error_mid_edit_keeps_the_last_good_diagnostics_and_adds_tl000(client: LanguageClient, tmp_path):
    doc = Document(client, tmp_path / "train.py", "import os\nprobe()\n")
    assert _where(await doc.published(1)) == [("TL900", 1, 0, 1, 7)]
    doc.change("import os\nprobe()\ndef f(:\n")
    kept, syntax_error = await doc.published(2)
    assert _where([kept]) == [("TL900", 1, 0, 1, 7)]
    assert syntax_error.code == "TL000" and "SyntaxError" in syntax_error.message
    assert syntax_error.range.start.line == 2 and syntax_error.range.start != syntax_error.range.end
    doc.change("import os\nprobe()\ndef f(\n")  # still broken: still the last good ones
    assert [d.code for d in await doc.published(3)] == ["TL900", "TL000"]
    doc.change("import os\nchecked()\ndef f():\n    pass\n")
    assert await doc.published(4) == []


@lsp_test
async def test_code_actions_offer_the_rules_fix_and_a_noqa_suppression(client: LanguageClient, tmp_path):
    text = "x = probe(1)\ny = probe(2)  # noqa: E501\n"
    doc = Document(client, tmp_path / "train.py", text)
    first, second = await doc.published(1)

    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=doc.uri),
            range=types.Range(start=types.Position(line=0, character=5), end=types.Position(line=0, character=5)),
            context=types.CodeActionContext(diagnostics=[first]),
        )
    )
    fix, noqa = actions
    assert (fix.title, fix.kind, fix.is_preferred) == ("Rename to checked()", types.CodeActionKind.QuickFix, True)
    assert _apply(text, _edits(fix)) == "x = checked(1)\ny = probe(2)  # noqa: E501\n"
    assert noqa.title == "Suppress TL900 on this line with # noqa: TL900"
    assert _apply(text, _edits(noqa)) == "x = probe(1)  # noqa: TL900\ny = probe(2)  # noqa: E501\n"

    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=doc.uri),
            range=second.range,
            context=types.CodeActionContext(diagnostics=[second], only=[types.CodeActionKind.QuickFix]),
        )
    )
    fixed = _apply(text, _edits(actions[1]))
    assert fixed == "x = probe(1)\ny = probe(2)  # noqa: E501, TL900\n"
    doc.change(fixed)
    assert _where(await doc.published(2)) == [("TL900", 0, 4, 0, 12)]

    doc.change("x = probe(unsafe=True)\n")
    (risky,) = await doc.published(3)
    fix, _noqa = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=doc.uri),
            range=risky.range,
            context=types.CodeActionContext(diagnostics=[risky]),
        )
    )
    # Offered, since a quick fix is applied only on request, but marked and never preferred.
    assert (fix.title, fix.is_preferred) == ("Rename to checked() (unsafe fix)", False)

    refactor_only = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=doc.uri),
            range=first.range,
            context=types.CodeActionContext(diagnostics=[first], only=[types.CodeActionKind.Refactor]),
        )
    )
    assert not refactor_only


@lsp_test
async def test_hover_over_a_noqa_code_shows_the_rule_page(client: LanguageClient, tmp_path):
    doc = Document(client, tmp_path / "train.py", "x = 1  # noqa: TL000, TL900\n# torchlint: noqa: tl000\n")
    await doc.published(1)

    async def hover(line: int, character: int) -> types.Hover | None:
        return await client.text_document_hover_async(
            types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=doc.uri),
                position=types.Position(line=line, character=character),
            )
        )

    page = await hover(0, 17)
    assert page.contents.kind == types.MarkupKind.Markdown
    assert page.contents.value.startswith(pages.page("TL000"))
    assert pages.url("TL000") in page.contents.value
    # A code without a page (the test rule) still gets its summary.
    assert "a call of a probe function" in (await hover(0, 24)).contents.value
    assert (await hover(1, 22)).contents.value.startswith(pages.page("TL000"))
    assert await hover(0, 2) is None
    assert await hover(7, 0) is None


@lsp_test
async def test_workspace_configuration_is_read_and_reread_when_it_changes(client: LanguageClient, tmp_path):
    # VS Code watches files for the server: the server asks it to once initialized.
    deadline = time.monotonic() + 10
    while not client.registrations and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    (registration,) = client.registrations
    assert registration.method == types.WORKSPACE_DID_CHANGE_WATCHED_FILES
    (watcher,) = registration.register_options["watchers"]
    assert watcher["globPattern"] == "**/{" + ",".join(CONFIG_FILES) + "}"
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[tool.torchlint.probe]\nnames = ["spy"]\n')
    doc = Document(client, tmp_path / "train.py", "probe()\nspy()\n")
    assert _where(await doc.published(1)) == [("TL900", 1, 0, 1, 5)]

    def changed() -> None:
        client.workspace_did_change_watched_files(
            types.DidChangeWatchedFilesParams(
                changes=[types.FileEvent(uri=pyproject.as_uri(), type=types.FileChangeType.Changed)]
            )
        )

    pyproject.write_text('[tool.torchlint.probe]\nnames = ["probe"]\n')
    changed()
    assert _where(await doc.published(2)) == [("TL900", 0, 0, 0, 7)]

    pyproject.write_text('[tool.torchlint]\nselect = "TL"\n')
    changed()
    (invalid,) = await doc.published(3)
    assert invalid.code == "TL000" and "invalid configuration" in invalid.message and "pyproject.toml" in invalid.message

    pyproject.unlink()
    changed()
    assert _where(await doc.published(4)) == [("TL900", 0, 0, 0, 7)]


@lsp_test
async def test_client_settings_override_the_workspace_configuration(client: LanguageClient, tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.torchlint]\nignore = ["TL9"]\n')
    doc = Document(client, tmp_path / "train.py", "probe()\n")
    assert await doc.published(1) == []

    try:
        client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"torchlint": {"select": ["TL900"], "debounceMs": DEBOUNCE_MS}})
        )
        assert [d.code for d in await doc.published(2)] == ["TL900"]

        # Settings the client only gives on request (Neovim, VS Code): the server asks for them.
        client.set_configuration({"select": "TL", "ignore": "TL900", "debounceMs": DEBOUNCE_MS}, section="torchlint")
        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
        assert await doc.published(3) == []

        client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"torchlint": {"select": ["TL900"], "ignore": ["XX1"]}})
        )
        assert await doc.published(4) == []  # back to the workspace's ignore
        assert any("client settings ignored" in m.message and "XX1" in m.message for m in client.messages)
    finally:
        _reset_client_settings(client)


@lsp_test
async def test_a_burst_of_200_changes_is_not_checked_change_by_change(client: LanguageClient, tmp_path):
    lines = ["import torch", "x = torch.zeros(3)"]
    doc = Document(client, tmp_path / "train.py", "\n".join(lines) + "\n")
    await doc.published(1)
    for i in range(200):
        lines.append(f"probe({i})" if i % 50 == 49 else f"y{i} = x + {i}")
        doc.change("\n".join(lines) + ("\n" if i % 2 else "\ndef broken(:\n"))
    await doc.caught_up()
    assert await doc.quiet(DEBOUNCE_MS / 1000 * 4) == 0
    publishes = doc.publishes()[1:]
    # The first change is checked at once and the rest once the burst pauses, however fast one
    # check is; how often sending the burst itself pauses for longer than the debounce depends on
    # the machine's load.
    assert len(publishes) <= 20, len(publishes)
    assert publishes[-1].version == doc.version == 201
    assert _where(publishes[-1].diagnostics) == [("TL900", n, 0, n, len(lines[n])) for n in (51, 101, 151, 201)]


@lsp_test
async def test_the_server_survives_odd_requests_and_documents(client: LanguageClient, tmp_path):
    unknown = types.TextDocumentIdentifier(uri=(tmp_path / "never_opened.py").as_uri())
    nowhere = types.Range(start=types.Position(line=0, character=0), end=types.Position(line=0, character=0))
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(text_document=unknown, range=nowhere, context=types.CodeActionContext(diagnostics=[]))
    )
    assert not actions
    assert await client.text_document_hover_async(types.HoverParams(text_document=unknown, position=nowhere.start)) is None

    doc = Document(client, tmp_path / "odd.py", "x = '\x00'\n" + "(" * 5000 + "\n")
    (cannot,) = await doc.published(1)
    assert cannot.code == "TL000"
    doc.change("")
    assert await doc.published(2) == []
    doc.change("# torchlint: noqa\nprobe()\n")
    assert await doc.published(3) == []


@lsp_test
async def test_a_notebook_opened_as_text_gets_no_code_action_with_cell_positions(client: LanguageClient, tmp_path):
    # Its findings, and their fixes, count lines of a cell, not of the JSON text in the editor.
    cells = [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": "x = 1\nprobe()"}]
    text = json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1) + "\n"
    doc = Document(client, tmp_path / "nb.ipynb", text)
    (diagnostic,) = await doc.published(1)
    assert diagnostic.code == "TL900"
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=doc.uri),
            range=diagnostic.range,
            context=types.CodeActionContext(diagnostics=[diagnostic]),
        )
    )
    assert not actions


async def _cell_publish(client: LanguageClient, uri: str, count: int, timeout: float = 10) -> list[types.Diagnostic]:
    deadline = time.monotonic() + timeout
    while len(found := [p for p in client.published if p.uri == uri]) < count:
        assert time.monotonic() < deadline, f"no publish #{count} for {uri}"
        await asyncio.sleep(0.01)
    return list(found[count - 1].diagnostics)


@lsp_test
async def test_a_notebook_is_checked_as_one_script_and_each_cell_gets_its_findings(client: LanguageClient, tmp_path):
    notebook = (tmp_path / "explore.ipynb").as_uri()
    uses = "model = torch.nn.Linear(2, 2).to(device)\nx = torch.randn(4, 2, device=device)\nfor step in range(9):\n    y = model(x)\n"
    texts = {
        "setup": "import torch\ndevice = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n",
        "notes": "probe() in prose",
        "train": uses,
        "probe": "x = 1\nprobe(1)\n",
    }
    uri = {name: f"vscode-notebook-cell:{tmp_path / 'explore.ipynb'}#{name}" for name in texts}
    kinds = {name: types.NotebookCellKind.Markup if name == "notes" else types.NotebookCellKind.Code for name in texts}
    client.notebook_document_did_open(
        types.DidOpenNotebookDocumentParams(
            notebook_document=types.NotebookDocument(
                uri=notebook,
                notebook_type="jupyter-notebook",
                version=1,
                cells=[types.NotebookCell(kind=kinds[name], document=uri[name]) for name in texts],
            ),
            cell_text_documents=[
                types.TextDocumentItem(uri=uri[name], language_id="python" if name != "notes" else "markdown", version=1, text=text)
                for name, text in texts.items()
            ],
        )
    )
    # The device chosen in the first cell is used in the third: nothing to say about it.
    assert await _cell_publish(client, uri["setup"], 1) == []
    assert await _cell_publish(client, uri["train"], 1) == []
    (probe,) = await _cell_publish(client, uri["probe"], 1)
    assert _where([probe]) == [("TL900", 1, 0, 1, 8)]  # in the cell's own lines
    assert not [p for p in client.published if p.uri in (uri["notes"], notebook)]

    fix, noqa = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri["probe"]),
            range=probe.range,
            context=types.CodeActionContext(diagnostics=[probe]),
        )
    )
    assert _apply(texts["probe"], _edits(fix)) == "x = 1\nchecked(1)\n"
    assert _apply(texts["probe"], _edits(noqa)) == "x = 1\nprobe(1)  # noqa: TL900\n"

    # An edit of one cell re-checks the notebook: the first cell's device is now never used.
    client.notebook_document_did_change(
        types.DidChangeNotebookDocumentParams(
            notebook_document=types.VersionedNotebookDocumentIdentifier(version=2, uri=notebook),
            change=types.NotebookDocumentChangeEvent(
                cells=types.NotebookDocumentCellChanges(
                    text_content=[
                        types.NotebookDocumentCellContentChanges(
                            document=types.VersionedTextDocumentIdentifier(uri=uri["train"], version=2),
                            changes=[types.TextDocumentContentChangeWholeDocument(text=uses.replace(".to(device)", "").replace(", device=device", ""))],
                        )
                    ]
                )
            ),
        )
    )
    (unused,) = await _cell_publish(client, uri["setup"], 2)
    assert unused.code == "TL001" and unused.range.start.line == 1

    client.notebook_document_did_close(
        types.DidCloseNotebookDocumentParams(
            notebook_document=types.NotebookDocumentIdentifier(uri=notebook),
            cell_text_documents=[types.TextDocumentIdentifier(uri=uri[name]) for name in texts],
        )
    )
    assert await _cell_publish(client, uri["setup"], 3) == []
    assert await _cell_publish(client, uri["probe"], 3) == []


@lsp_test
async def test_a_cell_sent_outside_its_notebook_is_not_checked_alone(client: LanguageClient, tmp_path):
    # Alone it lacks the cells above it (and read as the .ipynb its path names, it is no JSON).
    cell = f"vscode-notebook-cell:{tmp_path / 'alone.ipynb'}#c1"
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=cell, language_id="python", version=1, text="probe()\n")
        )
    )
    beside = Document(client, tmp_path / "beside.py", "probe()\n")  # opened after it, checked
    assert len(await beside.published(1)) == 1
    await asyncio.sleep(0.3)
    assert not [p for p in client.published if p.uri == cell]


@lsp_test
async def test_tl005_from_the_real_rules_points_at_the_lr_argument(client: LanguageClient, tmp_path):
    text = "import torch\nmodel = torch.nn.Linear(2, 2)\nopt = torch.optim.Adam(model.parameters(), lr=10.0)\n"
    (diagnostic,) = await Document(client, tmp_path / "train.py", text).published(1)
    assert diagnostic.code == "TL005" and diagnostic.range.start.line == 2


@lsp_test
async def test_tl003_quick_fix_assigns_the_result(client: LanguageClient, tmp_path):
    # Goes green when TL003 (to-result-discarded) and its fix land.
    text = 'import torch\nx = torch.zeros(3)\nx.to("cuda")\n'
    doc = Document(client, tmp_path / "train.py", text)
    (diagnostic,) = await doc.published(1)
    assert _where([diagnostic]) == [("TL003", 2, 0, 2, 12)]
    fix, _noqa = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=doc.uri),
            range=diagnostic.range,
            context=types.CodeActionContext(diagnostics=[diagnostic]),
        )
    )
    assert _apply(text, _edits(fix)) == 'import torch\nx = torch.zeros(3)\nx = x.to("cuda")\n'


def _diagnostic(line: int, end_line: int | None = None, code: str = "TL900") -> Diagnostic:
    return Diagnostic(code, "m", "t.py", Position(line, 1), Position(end_line or line, 2))


@pytest.mark.parametrize(
    ("text", "diagnostic", "expected"),
    [
        ("a()\n", _diagnostic(1), "a()  # noqa: TL900\n"),
        ("a()   \r\nb()\r\n", _diagnostic(1), "a()  # noqa: TL900\r\nb()\r\n"),
        ("a()  # why\n", _diagnostic(1), "a()  # why  # noqa: TL900\n"),
        ("a()  # noqa:E501 because\n", _diagnostic(1), "a()  # noqa:E501, TL900 because\n"),
        # The first line ends inside a string: the comment goes where the statement ends.
        ('f("""\ntext\n""", 1,\n  2)\n', _diagnostic(1, 3), 'f("""\ntext\n""", 1,  # noqa: TL900\n  2)\n'),
        ("a()", _diagnostic(1), "a()  # noqa: TL900"),
    ],
)
def test_the_noqa_edit_lands_where_the_engine_reads_it(text, diagnostic, expected):
    from torchlint.lsp.convert import Lines
    from pygls.workspace.position_codec import PositionCodec

    lines = Lines(text, PositionCodec(types.PositionEncodingKind.Utf32))
    (edit,) = suppress.suppress_fix(text, lines.lines, diagnostic).edits
    start = sum(len(line) + 1 for line in text.split("\n")[: edit.start.line - 1]) + edit.start.column - 1
    end = sum(len(line) + 1 for line in text.split("\n")[: edit.end.line - 1]) + edit.end.column - 1
    assert text[:start] + edit.content + text[end:] == expected


@lsp_test
async def test_a_client_that_cannot_watch_files_gets_configuration_changes_on_save(neovim: LanguageClient, tmp_path):
    # Neovim does not offer to watch files (on Linux): saving any document re-reads the configuration.
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[tool.torchlint.probe]\nnames = ["spy"]\n')
    doc = Document(neovim, tmp_path / "train.py", "probe()\nspy()\n")
    other = Document(neovim, tmp_path / "other.py", "probe()\n")
    assert _where(await doc.published(1)) == [("TL900", 1, 0, 1, 5)]
    assert await other.published(1) == []
    doc.save()
    assert await doc.quiet(0.3) == 0  # the same configuration: nothing is checked again

    pyproject.write_text('[tool.torchlint.probe]\nnames = ["probe"]\n')
    doc.save()
    assert _where(await doc.published(2)) == [("TL900", 0, 0, 0, 7)]
    assert _where(await other.published(2)) == [("TL900", 0, 0, 0, 7)]
    assert not neovim.registrations


@lsp_test
async def test_saving_a_module_checks_the_open_documents_that_use_it_again(client: LanguageClient, tmp_path):
    project = Path(__file__).resolve().parent.parent / "fixtures" / "projects" / "loop_in_engine"
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "engine.py").write_text((project / "engine.py").read_text())
    train = Document(client, tmp_path / "train.py", (project / "train.py").read_text())
    assert [d.code for d in await train.published(1)] == ["TL006"]
    engine = Document(client, tmp_path / "engine.py", (tmp_path / "engine.py").read_text())
    await engine.published(1)
    engine.change(engine.text.replace("    model.train()\n", "    model.train()\n    loader.sampler.set_epoch(0)\n"))
    await engine.published(2)
    assert await train.quiet(0.3) == 0  # an unsaved edit of the module changes nothing yet
    engine.save()
    assert await train.published(2) == []


EDITED_SCRIPT = '''import torch
from torch import nn


def build(width):
    layer = nn.Linear(width, width)
    layer.to("cuda")
    return layer


def train(model, batches):
    optimizer = torch.optim.Adam(model.parameters(), lr=10.0)
    for batch in batches:
        optimizer.zero_grad()
        probe(model(batch)).sum().backward()
        optimizer.step()


if __name__ == "__main__":
    train(build(8), [torch.zeros(8)])
'''


@lsp_test
async def test_diagnostics_after_each_edit_are_those_of_a_full_check(client: LanguageClient, tmp_path):
    """The server re-parses only the statements an edit touches (incremental.py): after every
    edit its diagnostics are those of the same text opened afresh, which is parsed whole."""
    doc = Document(client, tmp_path / "train.py", EDITED_SCRIPT)
    await doc.published(1)
    edits = [
        ("        optimizer.step()\n", "        optimizer.step()  # typed\n"),
        ("def train(", "@torch.no_grad()\ndef train("),
        ("    return layer\n", "    return layer\n    # about build\n"),
        ("lr=10.0)", "lr=10.0"),  # broken: the last good diagnostics and TL000
        ("lr=10.0\n", "lr=0.01)\n"),  # repaired
        ("import torch\n", "import torch\nprobe()\n"),
        ("def build(width):\n    layer", "def build(width):\n  layer"),  # the first block's indentation
        ('    layer.to("cuda")\n', ""),
        ("\n\nif __name__", "\nprobe()\n\nif __name__"),
    ]
    text = EDITED_SCRIPT
    for number, (old, new) in enumerate(edits):
        assert text.count(old) == 1, old
        text = text.replace(old, new)
        doc.change(text)
        published = await doc.caught_up()
        fresh = Document(client, tmp_path / f"fresh_{number}.py", text)
        expected = await fresh.published(1)
        if any(d.code == "TL000" for d in expected):
            assert [d for d in published if d.code == "TL000"] == expected
        else:
            assert [(d.code, d.message, d.range) for d in published] == [(d.code, d.message, d.range) for d in expected]
            assert {d.code for d in published} >= {"TL900"}
