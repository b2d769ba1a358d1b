"""argparse as the constant evaluator sees it: each option's destination, its default and the
`add_argument` call that declares it (TL007 reads its help), and which expressions hold a
parsed namespace.

Defaults are what runs when the script is started without options. They stop being known when
the code says the command line is not the only source: `set_defaults(**cfg)`, `vars(args).update`,
`args.__dict__.update`, `setattr(args, ...)`, or `parse_args([...])` with literal arguments.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

import libcst as cst

from torchlint.model.bindings import Binding
from torchlint.model.constants import UNKNOWN, agree
from torchlint.model.walks import Walk

if TYPE_CHECKING:
    from torchlint.model.constants import Evaluator

_PARSE_METHODS = frozenset({"parse_args", "parse_known_args", "parse_intermixed_args"})
_MUTATING_METHODS = frozenset({"update", "setdefault", "pop", "__setitem__"})


class Arguments:
    """The argparse parsers of a file: each destination's default and the `add_argument` call that
    declares it, and which expressions are parsed namespaces."""

    def __init__(self, model, evaluator: Evaluator) -> None:
        self.model = model
        self.evaluator = evaluator
        self.arguments: dict[str, list[cst.Call]] = {}
        self._defaults: dict[str, Any] = {}
        self.overridden = False  # defaults may not be what runs (see _scan)
        self._namespaces = Walk(self._is_namespace, False)
        self._parse_functions = Walk(self._find_returns_parse, False)
        self._parsed: set[str] | None = None
        self._scan()

    def _scan(self) -> None:
        set_defaults: list[cst.Call] = []
        for call in self.model.calls:
            func = call.func
            if isinstance(func, cst.Attribute):
                method = func.attr.value
                if method == "add_argument":
                    dest = _dest(call)
                    if dest is not None:
                        self.arguments.setdefault(dest, []).append(call)
                elif method == "set_defaults":
                    set_defaults.append(call)
                elif method in _PARSE_METHODS and _has_literal_argv(call):
                    self.overridden = True
                elif method in _MUTATING_METHODS and _is_vars_or_dict(func.value):
                    self.overridden = True
            elif isinstance(func, cst.Name) and func.value == "setattr" and call.args:
                target = call.args[0].value
                if isinstance(target, (cst.Name, cst.Attribute)) and self.is_namespace(target):
                    self.overridden = True
        for dest, calls in self.arguments.items():
            self._defaults[dest] = agree(_argument_default(self.evaluator, call) for call in calls)
        # parser-level defaults win over argument-level ones, whatever the order
        parser_level: dict[str, list[Any]] = {}
        for call in set_defaults:
            for arg in call.args:
                if arg.keyword is None:
                    self.overridden = True  # `set_defaults(**cfg)`: defaults come from a file
                else:
                    parser_level.setdefault(arg.keyword.value, []).append(self.evaluator.value(arg.value))
        for dest, values in parser_level.items():
            self._defaults[dest] = agree(values)

    def default(self, dest: str) -> Any:
        if self.overridden:
            return UNKNOWN
        return self._defaults.get(dest, UNKNOWN)

    def argument(self, expr: cst.BaseExpression) -> cst.Call | None:
        """The single `add_argument` call declaring `args.<dest>` read at ``expr``."""
        if not isinstance(expr, cst.Attribute) or not self.is_namespace(expr.value):
            return None
        return self.declaration(expr.attr.value)

    def declaration(self, dest: str) -> cst.Call | None:
        """The single `add_argument` call declaring ``dest``."""
        calls = self.arguments.get(dest, [])
        return calls[0] if len(calls) == 1 else None

    def is_namespace(self, expr: cst.BaseExpression) -> bool:
        """Whether ``expr`` holds the result of `parser.parse_args()` wherever it is read: every
        binding is a parse (directly, via `parse_known_args()`, or via a same-file function
        returning one), a copy of a namespace, or a parameter of a name that is a namespace
        elsewhere in the file (`main_worker(gpu, ngpus, args)`)."""
        return isinstance(expr, (cst.Name, cst.Attribute)) and self._namespaces(expr)

    def _is_namespace(self, expr: cst.Name | cst.Attribute) -> bool:
        bindings = self.model.bindings_of(expr)
        if not bindings:
            return False
        parsed_names = self._parsed_names()
        for binding in bindings:
            if binding.how == "param":
                if binding.name not in parsed_names:
                    return False
            elif not self._is_parse(binding):
                return False
        return True

    def _is_parse(self, binding: Binding) -> bool:
        if binding.how not in ("assign", "annassign", "walrus") or binding.source is None:
            return False
        source, path = binding.source, binding.path
        if isinstance(source, cst.Subscript) and path == () and len(source.slice) == 1:
            index = source.slice[0].slice
            if isinstance(index, cst.Index) and isinstance(index.value, cst.Integer) and index.value.value == "0":
                source, path = source.value, (0,)
        if isinstance(source, cst.Call):
            method = source.func.attr.value if isinstance(source.func, cst.Attribute) else None
            if method == "parse_known_args":
                return path == (0,)
            if method in _PARSE_METHODS:
                return path == ()
            if isinstance(source.func, cst.Name) and path == ():
                return self._returns_parse(source.func.value)
            return False
        bound = binding.value
        return isinstance(bound, (cst.Name, cst.Attribute)) and self.is_namespace(bound)

    def _returns_parse(self, function_name: str) -> bool:
        return self._parse_functions(function_name)

    def _find_returns_parse(self, function_name: str) -> bool:
        function = self.model.function(function_name)
        returns = (self.model.summaries.returns(function) or []) if function is not None else []
        return bool(returns) and all(
            (isinstance(r, cst.Call) and isinstance(r.func, cst.Attribute) and r.func.attr.value in _PARSE_METHODS - {"parse_known_args"})
            or (isinstance(r, cst.Name) and self.is_namespace(r))
            for r in returns
        )

    def _parsed_names(self) -> set[str]:
        if self._parsed is None:
            self._parsed = {
                binding.name for binding in self.model.all_bindings() if binding.how != "param" and self._is_parse(binding)
            }
        return self._parsed


def _dest(call: cst.Call) -> str | None:
    """argparse's destination for an add_argument call: `dest=`, else the first long option,
    else the first short option, else the positional name; dashes become underscores."""
    options = []
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "dest":
            return ast.literal_eval(arg.value.value) if isinstance(arg.value, cst.SimpleString) else None
        if arg.keyword is None and isinstance(arg.value, cst.SimpleString):
            options.append(ast.literal_eval(arg.value.value))
    if not options or not all(isinstance(option, str) for option in options):
        return None
    long = [option for option in options if option.startswith("--")]
    chosen = long[0][2:] if long else options[0].lstrip("-")
    return chosen.replace("-", "_") or None


def _argument_default(evaluator: Evaluator, call: cst.Call) -> Any:
    keywords = {arg.keyword.value: arg.value for arg in call.args if arg.keyword is not None}
    action = evaluator.value(keywords["action"]) if "action" in keywords else "store"
    if "default" not in keywords:
        if action == "store_true":
            return False
        if action == "store_false":
            return True
        return None
    default = evaluator.value(keywords["default"])
    converter = keywords.get("type")
    if isinstance(default, str) and converter is not None:
        # argparse passes a string default through type=, as if it came from the command line
        if isinstance(converter, cst.Name) and converter.value in ("int", "float"):
            return {"int": int, "float": float}[converter.value](default)
        return UNKNOWN
    return default


def _has_literal_argv(call: cst.Call) -> bool:
    """`parser.parse_args(["--lr", "10"])`: the command line is in the code."""
    for arg in call.args:
        if isinstance(arg.value, (cst.List, cst.Tuple)) and arg.value.elements:
            return True
    return False


def _is_vars_or_dict(expr: cst.BaseExpression) -> bool:
    """`vars(args)` or `args.__dict__`: the namespace as a mutable dict."""
    if isinstance(expr, cst.Attribute):
        return expr.attr.value == "__dict__"
    return isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == "vars"
