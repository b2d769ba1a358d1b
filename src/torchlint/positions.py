"""Where nodes of a file are: LibCST's PositionProvider, for the top-level statements asked about.

LibCST's provider allocates two CodePositions and a CodeRange per node, splits every token with a
regular expression and enters a generator-based context manager per node, over the whole file.
This runs the same code generation with the same hooks and records plain tuples, and it
generates only the innermost statement of a block that holds a node asked for (a line of a loop
body, not the whole `main()` around it): each one starts where CPython's own parser (a fraction
of a LibCST parse) puts it, and is checked against the text there before its positions count.
A statement whose text does not match is generated with its whole top-level statement, and a
file CPython's line numbers cannot be matched with is generated whole, as the provider does. The results are
the provider's, node for node (the test suite compares the two); if a LibCST release changes the
hooks relied on here, the provider itself runs.
"""

from __future__ import annotations

import ast
import re
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import nullcontext

import libcst as cst
from libcst._nodes.internal import CodegenState
from libcst._position import CodePosition, CodeRange
from libcst.metadata import MetadataWrapper, PositionProvider
from libcst.metadata.position_provider import PositionProvidingCodegenState

from torchlint.model.tree import children

_Span = tuple[int, int, int, int]  # start line, start column, end line, end column
# The node types CPython's tree has a statement for, in both trees in source order.
_STATEMENTS = frozenset(
    kind
    for base in (cst.BaseSmallStatement, cst.BaseCompoundStatement)
    for kind in vars(cst).values()
    # base in the MRO: issubclass on LibCST's abstract classes walks every node class on first use
    if isinstance(kind, type) and base in kind.__mro__ and not kind.__name__.startswith("Base")
)
# The nodes whose code generation indents what they hold (a match indents its cases).
_INDENTING = (cst.IndentedBlock, cst.Match)
# Fields of CPython's statements that hold statements (or handlers and cases holding them), in
# source order.
_AST_BLOCKS = ("body", "handlers", "orelse", "finalbody", "cases")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_NOTHING = nullcontext()


class Positions(Mapping):
    """node -> CodeRange (1-based lines, 0-based columns, as PositionProvider gives them).

    With the text and the model's parent lookup, a node's top-level statement is generated when
    one of its nodes is first asked for; without them, or when that cannot be trusted, the
    whole module is generated at once."""

    def __init__(
        self, module: cst.Module, text: str | None = None, parent: Callable[[cst.CSTNode], cst.CSTNode | None] | None = None
    ) -> None:
        self.module = module
        self._text = text
        self._parent = parent
        self._spans: dict[cst.CSTNode, _Span] = {}
        self._index = {statement: index for index, statement in enumerate(module.body)}
        self._anchors: list[int] | None = None  # first line of each top-level statement
        self._line_starts: list[int] | None = None
        self._offsets: dict[int, tuple[int, int]] = {}  # statement index -> (start, end) offsets, checked
        self._generated: set[int] = set()  # top-level statements whose nodes' spans are recorded
        self._whole: list[int] | None = None  # statement offsets once the whole module is generated
        self._tree: list[ast.stmt] = []  # CPython's top-level statements
        self._first: list[int] = []  # per top-level statement, the index of its first in _tree
        self._lines: dict[int, dict[cst.CSTNode, ast.stmt] | None] = {}  # per top-level statement: its statements' CPython twins
        self._nested: set[cst.CSTNode] = set()  # the nested statements generated
        if text is None or parent is None or not module.has_trailing_newline or not self._anchor():
            self._generate_whole()

    # -- Mapping -------------------------------------------------------------------------------
    def __getitem__(self, node: cst.CSTNode) -> CodeRange:
        span = self._spans.get(node)
        if span is None:
            span = self._locate(node)
        line, column, end_line, end_column = span
        return CodeRange(CodePosition(line, column), CodePosition(end_line, end_column))

    def __iter__(self) -> Iterator[cst.CSTNode]:
        self._generate_whole()
        return iter(self._spans)

    def __len__(self) -> int:
        self._generate_whole()
        return len(self._spans)

    # -- statements ----------------------------------------------------------------------------
    def top_level_index(self, node: cst.CSTNode) -> int | None:
        """The index in the module body of the top-level statement holding ``node``."""
        parent = self._parent or _no_parent
        while node is not None:
            index = self._index.get(node)
            if index is not None:
                return index
            node = parent(node)
        return None

    def statement_offset(self, index: int) -> int | None:
        """Where top-level statement ``index`` starts in the text (``len(body)``: where the last
        one ends); None when generating the statements does not reproduce the text (LibCST's
        round trip is exact except for rare files, such as ones with old Mac line endings)."""
        if self._whole is None:
            body = self.module.body
            if index < len(body) and self._find(index):
                return self._offsets[index][0]
            if index == len(body) and body and self._find(index - 1):
                return self._offsets[index - 1][1]
            self._generate_whole()
        return self._whole[index] if self._whole else None

    # -- generation ----------------------------------------------------------------------------
    def _locate(self, node: cst.CSTNode) -> _Span:
        if self._whole is None:
            index = self.top_level_index(node)
            if index is not None:
                statement = self._innermost_statement(node)
                if statement is not None and self._generate_nested(index, statement) and node in self._spans:
                    return self._spans[node]
                if self._generate(index) and node in self._spans:
                    return self._spans[node]
            self._generate_whole()
        return self._spans[node]

    def _innermost_statement(self, node: cst.CSTNode) -> cst.BaseStatement | None:
        """The statement of an indented block (not the module's) that holds ``node``."""
        parent_of = self._parent or _no_parent
        child, parent = node, parent_of(node)
        while parent is not None:
            if type(parent) is cst.IndentedBlock:
                return child
            child, parent = parent, parent_of(parent)
        return None

    def _anchor(self) -> bool:
        """Find each top-level statement's first line (its leading blank and comment lines
        included) from CPython's tree of the text; False when the two trees do not pair up."""
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # SyntaxWarning for invalid escapes is not ours to report
                statements = compile(self._text, "<positions>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True).body
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return False
        anchors, taken = [], 0
        for statement in self.module.body:
            if taken >= len(statements):
                return False
            first = statements[taken]
            self._first.append(taken)
            taken += len(statement.body) if isinstance(statement, cst.SimpleStatementLine) else 1
            line = _first_line(statement, first)
            if line is None:
                return False
            anchors.append(line)
        if taken != len(statements):
            return False
        self._tree = statements
        self._anchors = anchors
        self._line_starts = [0] + [match.end() for match in _LINE_BREAK.finditer(self._text)]
        return True

    def _find(self, index: int) -> bool:
        """Where top-level statement ``index`` is in the text (`_offsets`), found as `_generate`
        finds it but without recording its nodes' spans (which costs as much again as the code
        generation itself): a fix needs only where the statements it rewrites, and the one after
        them, start. False when its code is not the text at its anchor."""
        module = self.module
        return index in self._offsets or self._at_anchor(
            index, lambda line, start: _Text(default_indent=module.default_indent, default_newline=module.default_newline)
        ) is not None

    def _generate(self, index: int) -> bool:
        """Generate top-level statement ``index`` from its anchor; False when its code is not
        the text found there."""
        if index in self._generated:
            return True
        state = self._at_anchor(index, lambda line, start: _State(self.module, {}, line, start))
        if state is None:
            return False
        self._spans.update(state.spans)
        self._generated.add(index)
        return True

    def _at_anchor(self, index: int, state_at: Callable[[int, int], CodegenState]) -> CodegenState | None:
        """Generate top-level statement ``index`` into ``state_at(line, offset)`` of its anchor;
        the state when the code is the text found there (and its extent is noted), else None."""
        line = self._anchors[index]
        if not 0 < line <= len(self._line_starts):
            return None
        start = self._line_starts[line - 1]
        state = state_at(line, start)
        try:
            self.module.body[index]._codegen(state)
        except Exception:  # noqa: BLE001 - LibCST internals changed: the whole module decides
            return None
        code = "".join(state.tokens)
        if not self._text.startswith(code, start):
            return None
        self._offsets[index] = (start, start + len(code))
        return state

    def _generate_nested(self, index: int, statement: cst.BaseStatement) -> bool:
        """Generate a statement of an indented block inside top-level statement ``index`` from
        the line CPython gives it, with the indentation of the blocks around it; False when its
        code is not the text found there."""
        if statement in self._nested:
            return True
        twins = self._twins(index)
        first = statement.body[0] if isinstance(statement, cst.SimpleStatementLine) else statement
        twin = twins.get(first) if twins is not None else None
        line = _first_line(statement, twin) if twin is not None else None
        if line is None or not 0 < line <= len(self._line_starts):
            return False
        start = self._line_starts[line - 1]
        state = _State(self.module, {}, line, start)
        parent = self._parent
        blocks = []
        node = parent(statement)
        while node is not None:
            if type(node) in _INDENTING:
                blocks.append(node)
            node = parent(node)
        for block in reversed(blocks):
            state.increase_indent(state.default_indent if block.indent is None else block.indent)
        try:
            statement._codegen(state)
        except Exception:  # noqa: BLE001 - LibCST internals changed: the top-level statement decides
            return False
        if not self._text.startswith("".join(state.tokens), start):
            return False
        self._spans.update(state.spans)
        self._nested.add(statement)
        return True

    def _twins(self, index: int) -> dict[cst.CSTNode, ast.stmt] | None:
        """Each statement inside top-level statement ``index`` -> CPython's statement for
        it: both trees list the same statements in source order. None when they do not."""
        if index not in self._lines:
            statement = self.module.body[index]
            count = len(statement.body) if isinstance(statement, cst.SimpleStatementLine) else 1
            theirs = [nested for top in self._tree[self._first[index] : self._first[index] + count] for nested in _ast_statements(top)]
            ours = []
            pending = [statement]
            while pending:
                node = pending.pop()
                if type(node) in _STATEMENTS:
                    ours.append(node)
                found = children(node)
                found.reverse()
                pending.extend(found)
            paired = len(ours) == len(theirs)
            self._lines[index] = dict(zip(ours, theirs)) if paired else None
        return self._lines[index]

    def _generate_whole(self) -> None:
        if self._whole is not None:
            return
        module = self.module
        try:
            state = _State(module, {}, 1, 0)
            module._codegen(state)
        except Exception:  # noqa: BLE001 - LibCST internals changed: use the public provider
            ranges = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
            self._spans = {node: (r.start.line, r.start.column, r.end.line, r.end.column) for node, r in ranges.items()}
            self._whole = []
            return
        self._spans = state.spans
        reproduced = self._text is None or "".join(state.tokens) == self._text
        self._whole = [*state.statement_starts, state.body_end] if reproduced else []


class _State(PositionProvidingCodegenState):
    """PositionProvidingCodegenState's bookkeeping with tuples instead of objects, from a given
    line and text offset; it also notes where each top-level statement starts in the text."""

    def __init__(self, module: cst.Module, spans: dict[cst.CSTNode, _Span], line: int, offset: int) -> None:
        super().__init__(default_indent=module.default_indent, default_newline=module.default_newline, provider=None)
        self.line = line
        self.spans = spans
        self.starts: list[tuple[int, int]] = []
        self.offset = offset
        self.body = frozenset(module.body)
        self.statement_starts: list[int] = []
        self.body_end = offset

    def _update_position(self, value: str) -> None:
        self.offset += len(value)
        if "\r" in value:  # rare: let LibCST's own rule handle \r and \r\n
            super()._update_position(value)
            return
        newlines = value.count("\n")
        if newlines:
            self.line += newlines
            self.column = len(value) - value.rfind("\n") - 1
        else:
            self.column += len(value)

    def before_codegen(self, node: cst.CSTNode) -> None:
        if node in self.body:
            self.statement_starts.append(self.offset)
        self.starts.append((self.line, self.column))

    def after_codegen(self, node: cst.CSTNode) -> None:
        line, column = self.starts.pop()
        if node in self.body:
            self.body_end = self.offset
        # A syntactic position recorded while generating the node's children takes precedence.
        if node not in self.spans:
            self.spans[node] = (line, column, self.line, self.column)

    def record_syntactic_position(self, node, *, start_node=None, end_node=None):
        return _Syntactic(self, node, start_node, end_node)


class _Text(CodegenState):
    """LibCST's code generation without the context manager it enters per node, which only the
    position provider's subclass uses: the code alone, at twice the speed of `_State`."""

    def record_syntactic_position(self, node, *, start_node=None, end_node=None):
        return _NOTHING


class _Syntactic:
    """The span of a node without its surrounding whitespace, optionally hoisted from children."""

    __slots__ = ("state", "node", "start_node", "end_node", "start")

    def __init__(self, state: _State, node, start_node, end_node) -> None:
        self.state, self.node, self.start_node, self.end_node = state, node, start_node, end_node

    def __enter__(self) -> None:
        self.start = (self.state.line, self.state.column)

    def __exit__(self, *exc_info) -> None:
        spans = self.state.spans
        start = spans[self.start_node][:2] if self.start_node is not None else self.start
        end = spans[self.end_node][2:] if self.end_node is not None else (self.state.line, self.state.column)
        spans[self.node] = start + end


def _first_line(statement: cst.BaseStatement, twin: ast.stmt) -> int | None:
    """The first line of a statement, its leading blank and comment lines included, from the
    line CPython gives its twin (the `def` line of a decorated function: its decorators come
    first); None when the twin is no match."""
    line = twin.lineno - len(statement.leading_lines)
    if isinstance(statement, (cst.FunctionDef, cst.ClassDef)) and statement.decorators:
        if not getattr(twin, "decorator_list", None):
            return None
        line = twin.decorator_list[0].lineno - len(statement.decorators[0].leading_lines) - len(statement.leading_lines)
    return line


def _ast_statements(statement: ast.stmt) -> Iterator[ast.stmt]:
    """A statement of CPython's tree and every statement inside it, in source order."""
    yield statement
    for field in _AST_BLOCKS:
        for child in getattr(statement, field, ()):
            if isinstance(child, ast.stmt):
                yield from _ast_statements(child)
            else:  # an except handler or a match case
                for inner in child.body:
                    yield from _ast_statements(inner)


def positions(module: cst.Module) -> Positions:
    """Every node's position, the whole module generated at once."""
    return Positions(module)


def _no_parent(node: cst.CSTNode) -> None:
    return None
