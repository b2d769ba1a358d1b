"""The language server: documents in, diagnostics, quick fixes and rule pages out.

Every check is one call of the engine on the editor's text; nothing here parses or runs rules,
and nothing imports or executes the user's code.
"""

from __future__ import annotations

import asyncio
import gc
import os
import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from urllib.parse import unquote, urlparse

from lsprotocol import types
from pygls.lsp._capabilities import get_capability
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path
from pygls.workspace import TextDocument

from torchlint import __version__, engine, pages, registry
from torchlint.config import CONFIG_FILES, ConfigError, Settings
from torchlint.diagnostics import Applicability, Diagnostic, Fix, Position
from torchlint.incremental import Reparser
from torchlint.lsp import notebooks, suppress
from torchlint.lsp.convert import Lines
from torchlint.lsp.settings import ClientSettings, WorkspaceSettings

logger = logging.getLogger(__name__)

_QUICK_FIX = types.CodeActionKind.QuickFix
_CONFIG_GLOB = "**/{" + ",".join(CONFIG_FILES) + "}"


@dataclass
class _Checked:
    """What the client was last sent for one document, and what it was computed from."""

    text: str
    settings: Settings | ConfigError
    lines: Lines
    # Diagnostics of this very text, each with the engine diagnostic it came from.
    current: list[tuple[types.Diagnostic, Diagnostic]] = field(default_factory=list)
    # The diagnostics of the last text that parsed: kept on screen while the user is mid-edit.
    last_good: list[types.Diagnostic] = field(default_factory=list)
    # The project modules whose summaries the check used: saving one checks this document again.
    used: frozenset[str] = frozenset()
    # For a notebook: the documents of its code cells, which were sent its findings.
    cells: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Outcome:
    """A check's diagnostics, whether the text parsed, and the project modules whose summaries the
    check used."""

    diagnostics: list[Diagnostic]
    parsed: bool
    used: frozenset[str]


def _analyze(text: str, path: str, settings: Settings | ConfigError, reparser: Reparser) -> _Outcome:
    """Runs in the worker thread, which keeps the project summaries from one check to the next,
    and the document's last tree, whose unchanged statements the next parse reuses."""
    if isinstance(settings, ConfigError):
        start = Position(1, 1)
        message = f"invalid configuration: {settings}"
        diagnostic = Diagnostic(engine.CANNOT_CHECK, message, path, start, start, registry.COULD_NOT_CHECK.severity)
        return _Outcome([diagnostic], True, frozenset())
    analysis = engine.analyze(text, path, settings, reparser)
    return _Outcome(analysis.diagnostics, analysis.module is not None or not analysis.diagnostics, frozenset(analysis.used))


class _Heap:
    """The cycle collector, kept off what outlives a check (memory.py says why it matters).

    A full collection walks every container object of the process: what the server imported
    (pygls, lsprotocol, LibCST, the rules) and the documents' trees (50,000 objects for 2,000
    lines, which an edit's tree mostly shares with the one before: incremental.py). A check's
    model, which holds cycles, brought one about every other check of a 2,000-line file: 40% of
    the check's CPU. So after each check is published, its garbage is collected and what lives
    on is frozen (`gc.freeze`): the next check's collections walk only what it makes. Reference
    counting still frees frozen objects, trees included (they hold no cycle); a frozen object
    that later dies in a cycle (a model the project index drops) is freed when the frozen heap
    has doubled since its last full collection, which unfreezes it all first.
    """

    def __init__(self) -> None:
        self._collected = 0  # frozen objects after the last full collection

    def tidy(self) -> None:
        gc.collect()
        gc.freeze()
        if gc.get_freeze_count() > 2 * self._collected:
            gc.unfreeze()
            gc.collect()
            gc.freeze()
            self._collected = gc.get_freeze_count()


class TorchlintServer(LanguageServer):
    def __init__(self) -> None:
        # Full sync: pygls applies incremental changes with str.splitlines, which also breaks lines
        # at form feeds; whole texts cannot go wrong, and they are small.
        super().__init__(
            "torchlint",
            __version__,
            text_document_sync_kind=types.TextDocumentSyncKind.Full,
            notebook_document_sync=notebooks.SYNC,
        )
        self.settings = WorkspaceSettings()
        self.checked: dict[str, _Checked] = {}
        self._reparsers: dict[str, Reparser] = {}
        self._running: dict[str, tuple[str, Settings | ConfigError]] = {}
        self._timers: dict[str, asyncio.TimerHandle] = {}
        # event-loop time of each document's last change: a change soon after it is part of a burst
        self._last_change: dict[str, float] = {}
        self._tasks: set[asyncio.Task] = set()
        # documents to check again although their text did not change: a module they use was saved
        self._stale: set[str] = set()
        # One worker: analyses of one document run in order, and the event loop stays free to
        # take the next change while one runs.
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="torchlint-check")
        self._heap = _Heap()
        # Whether the client tells us about configuration file changes; if not, the
        # configuration is re-read whenever a document is opened or saved.
        self.watching = False

    # -- documents -------------------------------------------------------------------------
    def document(self, uri: str) -> TextDocument | None:
        """An open document; never one read from disk."""
        return self.workspace.text_documents.get(unquote(uri))

    def _source(self, uri: str) -> tuple[str, str, int | None, notebooks.Cells | None] | None:
        """What a check of ``uri`` reads: its text, its path, its version and, for a notebook, its
        cells; None for a document that is not open, or a notebook cell sent as a document of its
        own (it is checked with its notebook, or not at all: alone it lacks the cells above it)."""
        notebook = self.workspace.get_notebook_document(notebook_uri=uri)
        if notebook is not None:
            cells = notebooks.cells_of(notebook, self.workspace)
            path = to_fs_path(uri) or unquote(urlparse(uri).path)
            return cells.text, path if engine.is_notebook(path) else "notebook.ipynb", notebook.version, cells
        document = self.document(uri)
        if document is None:
            return None
        if engine.is_notebook(document.path) and urlparse(uri).scheme not in ("file", "untitled"):
            return None
        return document.source, document.path, document.version, None

    def _checked_with(self, uri: str) -> str:
        """The document a check of ``uri`` is part of: a cell's notebook, or itself."""
        notebook = self.workspace.get_notebook_document(cell_uri=uri)
        return notebook.uri if notebook is not None else uri

    def schedule(self, uri: str, delay: float) -> None:
        """Check ``uri`` (a cell: its notebook) after ``delay`` seconds, replacing a check
        scheduled before."""
        uri = self._checked_with(uri)
        timer = self._timers.pop(uri, None)
        if timer is not None:
            timer.cancel()
        self._timers[uri] = asyncio.get_running_loop().call_later(delay, self._start, uri)

    def _idle(self, reparser: Reparser) -> None:
        """Work for the worker between checks, once one is published."""
        reparser.prepare()
        self._heap.tidy()

    def changed(self, uri: str) -> None:
        """Check a changed document: at once when it is the first change after a pause of the
        debounce, so that an edit alone never waits for it; a change that follows another
        within the debounce, or arrives while a check of the document runs or waits, belongs
        to a burst and is checked once the burst pauses for the debounce. A burst of
        keystrokes costs one check at its start and one when it pauses, however fast checks are."""
        now = asyncio.get_running_loop().time()
        debounce = self.settings.client.debounce_ms / 1000
        previous = self._last_change.get(uri)
        self._last_change[uri] = now
        in_burst = previous is not None and now - previous < debounce
        busy = uri in self._running or uri in self._timers
        self.schedule(uri, debounce if in_burst or busy else 0)

    def _start(self, uri: str) -> None:
        self._timers.pop(uri, None)
        task = asyncio.ensure_future(self.check(uri))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def forget(self, uri: str) -> None:
        self._last_change.pop(uri, None)
        timer = self._timers.pop(uri, None)
        if timer is not None:
            timer.cancel()
        checked = self.checked.pop(uri, None)
        self._reparsers.pop(uri, None)
        for cell in checked.cells if checked is not None else ():
            self.checked.pop(cell, None)
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=cell, diagnostics=[]))
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    def recheck_dependents(self, uri: str) -> None:
        """Check again the open documents that used the summary of the module just saved."""
        document = self.document(uri)
        if document is None:
            return
        saved = os.path.abspath(document.path)
        for other, checked in self.checked.items():
            if other != uri and saved in checked.used:
                self._stale.add(self._checked_with(other))
                self.schedule(other, 0)

    def recheck_all(self) -> None:
        for document in list(self.workspace.text_documents.values()):
            self.schedule(document.uri, 0)  # a cell schedules its notebook

    async def check(self, uri: str) -> None:
        try:
            await self._check(uri)
        except Exception:  # noqa: BLE001 - the editor keeps its server whatever one check does
            logger.exception("checking %s failed", uri)
            self.window_log_message(
                types.LogMessageParams(type=types.MessageType.Error, message=f"torchlint: checking {uri} failed")
            )

    async def _check(self, uri: str) -> None:
        source = self._source(uri)
        if source is None:
            return
        text, path, version, cells = source
        settings = self.settings.for_path(Path(path))
        previous = self.checked.get(uri)
        # Settings compare by value: configuration re-read unchanged does not cost a check.
        stale = uri in self._stale
        self._stale.discard(uri)
        if not stale and previous is not None and previous.text == text and previous.settings == settings:
            return
        running = self._running.get(uri)
        if not stale and running is not None and running[0] == text and running[1] == settings:
            return
        self._running[uri] = job = (text, settings)
        try:
            loop = asyncio.get_running_loop()
            reparser = self._reparsers.setdefault(uri, Reparser())
            outcome = await loop.run_in_executor(self._worker, _analyze, text, path, settings, reparser)
        finally:
            if self._running.get(uri) is job:  # a newer check may be waiting behind this one
                del self._running[uri]
        now = self._source(uri)
        if now is None or now[0] != text:
            return  # superseded: the check scheduled by the newer change publishes
        if cells is None:
            self._publish(uri, version, text, settings, outcome)
        else:
            self._publish_cells(uri, cells, settings, outcome)
        self._worker.submit(self._idle, reparser)

    def _publish(
        self, uri: str, version: int | None, text: str, settings: Settings | ConfigError, outcome: _Outcome
    ) -> None:
        previous = self.checked.get(uri)
        lines = Lines(text, self.workspace.position_codec)
        current = [(lines.diagnostic(d), d) for d in outcome.diagnostics]
        fresh = [item[0] for item in current]
        last_good = fresh if outcome.parsed else (previous.last_good if previous else [])
        self.checked[uri] = _Checked(text, settings, lines, current, last_good, outcome.used)
        shown = fresh if outcome.parsed else last_good + fresh
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, version=version, diagnostics=shown))

    def _publish_cells(self, uri: str, cells: notebooks.Cells, settings: Settings | ConfigError, outcome: _Outcome) -> None:
        """A notebook's findings, each to its cell; a cell that left the notebook is cleared."""
        previous = self.checked.get(uri)
        lines = Lines("", self.workspace.position_codec)
        self.checked[uri] = _Checked(cells.text, settings, lines, used=outcome.used, cells=cells.uris)
        for cell, found in notebooks.by_cell(outcome.diagnostics, cells).items():
            document = self.document(cell)
            if document is not None:
                self._publish(cell, document.version, document.source, settings, replace(outcome, diagnostics=found))
        for gone in set(previous.cells if previous is not None else ()) - set(cells.uris):
            self.checked.pop(gone, None)
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=gone, diagnostics=[]))

    # -- configuration ---------------------------------------------------------------------
    def configure(self, client: ClientSettings) -> None:
        message = self.settings.configure(client)
        if message:
            self.window_show_message(types.ShowMessageParams(type=types.MessageType.Warning, message=message))
        self.recheck_all()

    async def pull_configuration(self) -> None:
        """Ask the client for the `torchlint` settings section, where it answers such requests."""
        if not get_capability(self.client_capabilities, "workspace.configuration", False):
            return
        try:
            result = await self.workspace_configuration_async(
                types.ConfigurationParams(items=[types.ConfigurationItem(section="torchlint")])
            )
        except Exception:  # noqa: BLE001 - a client that fails the request keeps the settings it gave
            logger.exception("workspace/configuration failed")
            return
        if result and isinstance(result[0], dict):
            self.configure(ClientSettings.parse(result[0]))

    async def watch_configuration_files(self) -> None:
        if not get_capability(self.client_capabilities, "workspace.did_change_watched_files.dynamic_registration", False):
            return
        watchers = [types.FileSystemWatcher(glob_pattern=_CONFIG_GLOB)]
        registration = types.Registration(
            id="torchlint-configuration-files",
            method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
            register_options=types.DidChangeWatchedFilesRegistrationOptions(watchers=watchers),
        )
        try:
            await self.client_register_capability_async(types.RegistrationParams(registrations=[registration]))
        except Exception:  # noqa: BLE001 - without watching, opening or saving re-reads the configuration
            logger.exception("registering the configuration file watcher failed")
            return
        self.watching = True

    def reread_unwatched_configuration(self) -> None:
        if not self.watching:
            self.settings.reload()
            self.recheck_all()  # checks only the documents whose settings did change

    # -- requests --------------------------------------------------------------------------
    def code_actions(self, params: types.CodeActionParams) -> list[types.CodeAction]:
        uri = params.text_document.uri
        document, checked = self.document(uri), self.checked.get(uri)
        if document is None or checked is None or checked.text != document.source:
            return []  # edits are only offered against the text they were computed on
        versioned = get_capability(self.client_capabilities, "workspace.workspace_edit.document_changes", False)
        actions: list[types.CodeAction] = []
        offered: set[tuple[str, int]] = set()

        def action(fix: Fix, diagnostic: types.Diagnostic, preferred: bool) -> types.CodeAction:
            # A quick fix is applied only on request, so unsafe fixes are offered too, marked.
            unsafe = " (unsafe fix)" if fix.applicability is Applicability.UNSAFE else ""
            return types.CodeAction(
                title=fix.message + unsafe,
                kind=_QUICK_FIX,
                diagnostics=[diagnostic],
                is_preferred=preferred and not unsafe,
                edit=checked.lines.workspace_edit(uri, document.version, fix, versioned),
            )

        for shown, diagnostic in checked.current:
            if diagnostic.code == engine.CANNOT_CHECK or not _touches(shown.range, params.range):
                continue
            if diagnostic.cell is not None:
                continue  # a notebook opened as text: the fix's positions count lines of a cell
            if diagnostic.fix is not None:
                actions.append(action(diagnostic.fix, shown, True))
            if (diagnostic.code, diagnostic.line) not in offered:
                offered.add((diagnostic.code, diagnostic.line))
                actions.append(action(suppress.suppress_fix(checked.text, checked.lines.lines, diagnostic), shown, False))
        return actions

    def hover(self, params: types.HoverParams) -> types.Hover | None:
        document = self.document(params.text_document.uri)
        if document is None:
            return None
        lines = Lines(document.source, self.workspace.position_codec)
        if params.position.line >= len(lines.lines):
            return None
        line = lines.lines[params.position.line]
        column = self.workspace.position_codec.position_from_client_units(lines.lines, params.position).character
        code = suppress.code_at(line, column)
        rule = registry.all_codes().get(code) if code else None
        if rule is None:
            return None
        page = pages.page(rule.code) or f"# {rule.code}: {rule.name}\n\n{rule.summary}\n"
        link = f"\n\n[{rule.code} on the web]({pages.url(rule.code)})"
        return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=page + link))


def _touches(a: types.Range, b: types.Range) -> bool:
    def key(position: types.Position) -> tuple[int, int]:
        return (position.line, position.character)

    return key(a.start) <= key(b.end) and key(b.start) <= key(a.end)


def _uri_of(params) -> str:
    """The document of a text document's or a notebook's open, change or close."""
    notebook = getattr(params, "notebook_document", None)
    return notebook.uri if notebook is not None else params.text_document.uri


def _is_configuration_file(uri: str) -> bool:
    return PurePosixPath(unquote(urlparse(uri).path)).name in CONFIG_FILES


def build() -> TorchlintServer:
    server = TorchlintServer()

    @server.feature(types.INITIALIZE)
    def initialize(ls: TorchlintServer, params: types.InitializeParams) -> None:
        ls.configure(ClientSettings.parse(params.initialization_options))

    @server.feature(types.INITIALIZED)
    async def initialized(ls: TorchlintServer, params: types.InitializedParams) -> None:
        await asyncio.gather(ls.watch_configuration_files(), ls.pull_configuration())

    # A notebook's events are a document's: its cells are checked together (notebooks.py).
    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    @server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
    async def did_open(ls: TorchlintServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.reread_unwatched_configuration()
        await ls.check(_uri_of(params))

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def did_change(ls: TorchlintServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.changed(_uri_of(params))

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: TorchlintServer, params: types.DidSaveTextDocumentParams) -> None:
        ls.reread_unwatched_configuration()
        ls.schedule(params.text_document.uri, 0)
        ls.recheck_dependents(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def did_close(ls: TorchlintServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.forget(_uri_of(params))

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(ls: TorchlintServer, params: types.DidChangeConfigurationParams) -> None:
        if isinstance(params.settings, dict) and isinstance(params.settings.get("torchlint"), dict):
            ls.configure(ClientSettings.parse(params.settings))
        else:
            await ls.pull_configuration()

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def did_change_watched_files(ls: TorchlintServer, params: types.DidChangeWatchedFilesParams) -> None:
        if any(_is_configuration_file(change.uri) for change in params.changes):
            message = ls.settings.reload()
            if message:
                ls.window_show_message(types.ShowMessageParams(type=types.MessageType.Warning, message=message))
            ls.recheck_all()

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(code_action_kinds=[_QUICK_FIX]))
    def code_action(ls: TorchlintServer, params: types.CodeActionParams) -> list[types.CodeAction] | None:
        only = params.context.only
        if only and not any(_QUICK_FIX == kind or _QUICK_FIX.startswith(f"{kind}.") for kind in only):
            return None
        return ls.code_actions(params)

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(ls: TorchlintServer, params: types.HoverParams) -> types.Hover | None:
        return ls.hover(params)

    return server


def serve() -> None:
    build().start_io()
