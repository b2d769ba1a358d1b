"""Where each node of a file is: LibCST's PositionProvider, computed about five times faster.

LibCST's provider allocates two CodePositions and a CodeRange per node, splits every token with a
regular expression and enters a generator-based context manager per node: on a file with findings
that costs almost two LibCST parses. This runs the same code generation pass with the same hooks,
records plain tuples, and builds a CodeRange only for the nodes asked for. The result is the
provider's, node for node (the test suite compares the two); if a LibCST release changes the
hooks relied on here, `positions` falls back to the provider itself.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import libcst as cst
from libcst._position import CodePosition, CodeRange
from libcst.metadata import MetadataWrapper, PositionProvider
from libcst.metadata.position_provider import PositionProvidingCodegenState

_Span = tuple[int, int, int, int]  # start line, start column, end line, end column


class Positions(Mapping):
    """node -> CodeRange (1-based lines, 0-based columns, as PositionProvider gives them)."""

    def __init__(self, spans: dict[cst.CSTNode, _Span]) -> None:
        self._spans = spans

    def __getitem__(self, node: cst.CSTNode) -> CodeRange:
        line, column, end_line, end_column = self._spans[node]
        return CodeRange(CodePosition(line, column), CodePosition(end_line, end_column))

    def __iter__(self) -> Iterator[cst.CSTNode]:
        return iter(self._spans)

    def __len__(self) -> int:
        return len(self._spans)

    def statement_lines(self) -> Iterator[tuple[cst.SimpleStatementLine, CodeRange]]:
        """The simple statement lines and their ranges, the only nodes noqa placement needs."""
        for node in self._spans:
            if isinstance(node, cst.SimpleStatementLine):
                yield node, self[node]


def positions(module: cst.Module) -> Positions:
    try:
        state = _State(module)
        module._codegen(state)
        return Positions(state.spans)
    except Exception:  # noqa: BLE001 - LibCST internals changed: use the public provider
        ranges = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
        return Positions({node: (r.start.line, r.start.column, r.end.line, r.end.column) for node, r in ranges.items()})


class _State(PositionProvidingCodegenState):
    """PositionProvidingCodegenState's bookkeeping with tuples instead of objects."""

    def __init__(self, module: cst.Module) -> None:
        super().__init__(default_indent=module.default_indent, default_newline=module.default_newline, provider=None)
        self.spans: dict[cst.CSTNode, _Span] = {}
        self.starts: list[tuple[int, int]] = []

    def _update_position(self, value: str) -> None:
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
        self.starts.append((self.line, self.column))

    def after_codegen(self, node: cst.CSTNode) -> None:
        line, column = self.starts.pop()
        # A syntactic position recorded while generating the node's children takes precedence.
        if node not in self.spans:
            self.spans[node] = (line, column, self.line, self.column)

    def record_syntactic_position(self, node, *, start_node=None, end_node=None):
        return _Syntactic(self, node, start_node, end_node)


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
