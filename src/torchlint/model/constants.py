"""Compile-time constants: the value an expression certainly has when the script runs with its
defaults, or UNKNOWN.

Followed: literals, arithmetic and unary minus, `int()`/`float()`/`min()`/`max()`/`abs()`/
`round()`, names whose every binding agrees, module constants, literal dicts, lists and tuples and
their subscripts (`cfg["lr"]`, `cfg.get("lr", 1e-3)`), conditional expressions with a known test,
argparse defaults reaching `args.lr` (including `type=float` on a string default and
`set_defaults`), and class or dataclass attribute defaults (`cfg = TrainConfig(); cfg.lr`).

A function parameter has the value every same-file call passes (its default where a call leaves
it out), when all of them agree and the function cannot be called from elsewhere.

Everything that may change a value behind the code's back makes it UNKNOWN: a loop variable, a name bound twice to different values, a dict that is mutated or handed to an
unknown function, `exec` of a config file (it rewrites module globals), `setattr`/`vars()`/
`__dict__` on an argparse namespace, `set_defaults(**cfg)`, or `parse_args([...])` with literal
arguments. Rules take UNKNOWN as "stay silent".
"""

from __future__ import annotations

import ast
import functools
import math
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

import libcst as cst

from torchlint.model.bindings import Binding
from torchlint.model.names import dotted
from torchlint.model.tree import children
from torchlint.model.walks import Walk

if TYPE_CHECKING:
    from torchlint.model.arguments import Arguments


class _Unknown:
    __slots__ = ()

    def __repr__(self) -> str:
        return "UNKNOWN"

    def __bool__(self) -> bool:
        return False


UNKNOWN: Any = _Unknown()
_MAX_DEPTH = 100  # expressions being evaluated at once (each a few frames deep); past it unknown
T = TypeVar("T")

# Calls that read a dict without changing it: handing a config dict to them keeps it constant.
_READ_ONLY_CALLS = frozenset({"print", "len", "str", "repr", "dict", "sorted", "list", "pprint", "format"})
_READ_ONLY_CALL_TAILS = frozenset({"dumps", "dump", "info", "debug", "warning", "log", "init", "pprint", "get", "items", "keys", "values"})
_MUTATING_METHODS = frozenset(
    {"update", "setdefault", "pop", "popitem", "clear", "__setitem__", "__delitem__", "append", "extend", "insert", "remove"}
)
_PASSTHROUGH_CONVERSIONS = {"int": int, "float": float, "abs": abs, "round": round}


def value(model, expr: cst.BaseExpression) -> Any:
    """The compile-time value of ``expr``, or UNKNOWN."""
    return evaluator(model).value(expr)


@functools.lru_cache(maxsize=4096)
def literal(text: str) -> Any:
    """The value of a number's or a plain string's source text (`'cuda:0'`, `1e-3`), as LibCST's
    `evaluated_value` gives it: `ast.literal_eval` runs CPython's compiler (several microseconds),
    and the scripts of a run repeat the same few literals. Its values are immutable."""
    return ast.literal_eval(text)


def per_model(build: Callable[[Any], T]) -> Callable[[Any], T]:
    """``build(model)``, computed on first use and stored on the model itself, so it lives and
    dies with the model (a cache outside it would keep every model's tree alive)."""
    slot = f"_per_model_{build.__module__}.{build.__qualname__}"

    @functools.wraps(build)
    def cached(model) -> T:
        found = model.__dict__.get(slot)
        if found is None:
            found = model.__dict__[slot] = build(model)
        return found

    return cached


class Evaluator:
    def __init__(self, model) -> None:
        self.model = model
        # UNKNOWN for a value defined in terms of itself (`args.lr = args.lr * 2`)
        self._values = Walk(self._evaluate_safely, UNKNOWN, depth=_MAX_DEPTH)
        self._argparse: Arguments | None = None
        self._module_rewritten: bool | None = None

    @property
    def argparse(self) -> Arguments:
        if self._argparse is None:
            from torchlint.model.arguments import Arguments

            self._argparse = Arguments(self.model, self)
        return self._argparse

    def value(self, expr: cst.BaseExpression) -> Any:
        return self._values(expr)

    def _evaluate_safely(self, expr: cst.BaseExpression) -> Any:
        try:
            return self._evaluate(expr)
        except (ArithmeticError, ValueError, TypeError):  # what running the code would raise
            return UNKNOWN

    # -- expressions -------------------------------------------------------------------------
    def _evaluate(self, expr: cst.BaseExpression) -> Any:
        if type(expr) in (cst.Integer, cst.Float, cst.SimpleString):
            return literal(expr.value)
        if isinstance(expr, cst.ConcatenatedString):
            left, right = self.value(expr.left), self.value(expr.right)
            return left + right if isinstance(left, str) and isinstance(right, str) else UNKNOWN
        if isinstance(expr, cst.Name):
            if expr.value in ("True", "False", "None"):
                return {"True": True, "False": False, "None": None}[expr.value]
            return self._name(expr)
        if isinstance(expr, cst.UnaryOperation):
            return _unary(expr.operator, self.value(expr.expression))
        if isinstance(expr, cst.BinaryOperation):
            return _binary(expr.operator, self.value(expr.left), self.value(expr.right))
        if isinstance(expr, cst.Comparison):
            return self._comparison(expr)
        if isinstance(expr, cst.BooleanOperation):
            left = self.value(expr.left)
            if left is UNKNOWN:
                return UNKNOWN
            if isinstance(expr.operator, cst.And):
                return self.value(expr.right) if left else left
            return left if left else self.value(expr.right)
        if isinstance(expr, cst.IfExp):
            test = self.value(expr.test)
            if test is not UNKNOWN:
                return self.value(expr.body if test else expr.orelse)
            body, orelse = self.value(expr.body), self.value(expr.orelse)
            return body if _same(body, orelse) else UNKNOWN
        if isinstance(expr, (cst.Tuple, cst.List)):
            if any(isinstance(element, cst.StarredElement) for element in expr.elements):
                return UNKNOWN
            return tuple(self.value(element.value) for element in expr.elements)
        if isinstance(expr, cst.Dict):
            return self._dict_literal(expr)
        if isinstance(expr, cst.Subscript):
            return self._subscript(expr)
        if isinstance(expr, cst.Call):
            return self._call(expr)
        if isinstance(expr, cst.Attribute):
            return self._attribute(expr)
        return UNKNOWN

    def _comparison(self, expr: cst.Comparison) -> Any:
        left = self.value(expr.left)
        for target in expr.comparisons:
            right = self.value(target.comparator)
            if not (_fully_known(left) and _fully_known(right)):
                return UNKNOWN
            compare = _COMPARISONS.get(type(target.operator))
            if compare is None or not compare(left, right):
                return UNKNOWN if compare is None else False
            left = right
        return True

    def _dict_literal(self, expr: cst.Dict) -> Any:
        result = {}
        for element in expr.elements:
            if not isinstance(element, cst.DictElement):
                return UNKNOWN  # `{**base, ...}`
            key = self.value(element.key)
            if key is UNKNOWN:
                return UNKNOWN
            result[key] = self.value(element.value)
        return result

    def _subscript(self, expr: cst.Subscript) -> Any:
        if len(expr.slice) != 1 or not isinstance(expr.slice[0].slice, cst.Index):
            return UNKNOWN
        container = self._container(expr.value)
        key = self.value(expr.slice[0].slice.value)
        if container is UNKNOWN or key is UNKNOWN:
            return UNKNOWN
        try:
            return container[key]
        except (KeyError, IndexError, TypeError):
            return UNKNOWN

    def _container(self, expr: cst.BaseExpression) -> Any:
        """A dict, list or tuple value, provided nothing in the file may mutate it."""
        container = self.value(expr)
        if isinstance(expr, (cst.Name, cst.Attribute)) and self._maybe_mutated(expr):
            return UNKNOWN
        return container if isinstance(container, (dict, tuple)) else UNKNOWN

    def _call(self, expr: cst.Call) -> Any:
        func = expr.func
        if isinstance(func, cst.Attribute) and func.attr.value == "get" and len(expr.args) in (1, 2):
            container = self._container(func.value)
            if not isinstance(container, dict) or any(arg.keyword or arg.star for arg in expr.args):
                return UNKNOWN
            key = self.value(expr.args[0].value)
            if key is UNKNOWN:
                return UNKNOWN
            if key in container:
                return container[key]
            return self.value(expr.args[1].value) if len(expr.args) == 2 else None
        if not isinstance(func, cst.Name) or self.model.bindings_of(func):
            return UNKNOWN  # a call of anything but an unshadowed builtin
        if any(arg.star for arg in expr.args):
            return UNKNOWN
        name = func.value
        if name == "dict" and all(arg.keyword is not None for arg in expr.args):
            return {arg.keyword.value: self.value(arg.value) for arg in expr.args}
        positional = [self.value(arg.value) for arg in expr.args if arg.keyword is None]
        if len(positional) != len(expr.args) or UNKNOWN in positional or not positional:
            return UNKNOWN
        if name in _PASSTHROUGH_CONVERSIONS and len(positional) == 1:
            if not isinstance(positional[0], (int, float, str)) or isinstance(positional[0], bool):
                return UNKNOWN
            return _PASSTHROUGH_CONVERSIONS[name](positional[0])
        if name in ("min", "max") and all(is_number(v) for v in positional) and len(positional) > 1:
            return min(positional) if name == "min" else max(positional)
        return UNKNOWN

    # -- names and attributes ----------------------------------------------------------------
    def _name(self, expr: cst.Name) -> Any:
        bindings = self.model.bindings_of(expr)
        if not bindings:
            return UNKNOWN
        if isinstance(bindings[0].scope, cst.Module) and self.module_rewritten():
            return UNKNOWN
        return agree(self._binding_value(binding) for binding in bindings)

    def _attribute(self, expr: cst.Attribute) -> Any:
        """`args.lr`, `cfg.lr`, `Config.lr`, `self.lr`: explicit assignments to the chain, plus
        what its base supplies (an argparse default, a class attribute default)."""
        candidates = [self._binding_value(binding) for binding in self.model.bindings_of(expr)]
        supplied = self._supplied_by_base(expr)
        if supplied is not None:
            candidates.append(supplied)
        if not candidates:
            return UNKNOWN
        return agree(candidates)

    def _supplied_by_base(self, expr: cst.Attribute) -> Any:
        """The value the base object gives the attribute, UNKNOWN when the base is a known kind
        of object that does not say, or None when the base is nothing the evaluator knows."""
        attr = expr.attr.value
        base = expr.value
        if self.argparse.is_namespace(base):
            return self.argparse.default(attr)
        if not isinstance(base, (cst.Name, cst.Attribute)):
            return None
        bindings = self.model.bindings_of(base)
        if not bindings:
            return None
        if all(binding.how == "class" for binding in bindings):
            return self._class_attribute(bindings[0].statement, attr, None)
        calls = [binding.value for binding in bindings]
        if all(isinstance(call, cst.Call) and self._same_file_class(call) is not None for call in calls):
            return agree(self._class_attribute(self._same_file_class(call), attr, call) for call in calls)
        return None

    def _same_file_class(self, call: cst.Call) -> cst.ClassDef | None:
        if not isinstance(call.func, cst.Name):
            return None
        bindings = self.model.bindings_of(call.func)
        if len(bindings) == 1 and bindings[0].how == "class":
            return bindings[0].statement
        return None

    def _class_attribute(self, cls: cst.ClassDef, attr: str, call: cst.Call | None) -> Any:
        """A class's default for ``attr``, overridden by the constructor's keyword. Only for
        classes whose attributes are their constructor's fields (dataclasses) or are never set by
        a constructor (plain config classes with no base and no __init__)."""
        is_dataclass = any(_decorator_name(d).endswith("dataclass") for d in cls.decorators)
        if not is_dataclass and (cls.bases or self._defines(cls, "__init__")):
            return UNKNOWN
        if call is not None:
            if any(arg.star for arg in call.args) or any(arg.keyword is None for arg in call.args):
                return UNKNOWN
            for arg in call.args:
                if arg.keyword.value == attr:
                    return self.value(arg.value)
        bindings = self.model.bindings(cls, attr)
        if len(bindings) != 1 or bindings[0].how not in ("assign", "annassign") or bindings[0].value is None:
            return UNKNOWN
        default = bindings[0].value
        if is_dataclass and isinstance(default, cst.Call) and _decorator_name(default.func).endswith("field"):
            for arg in default.args:
                if arg.keyword is not None and arg.keyword.value == "default":
                    return self.value(arg.value)
            return UNKNOWN
        return self.value(default)

    def _defines(self, cls: cst.ClassDef, name: str) -> bool:
        return any(binding.how == "def" for binding in self.model.bindings(cls, name))

    def _binding_value(self, binding: Binding) -> Any:
        if binding.how == "param":
            return self._parameter(binding)
        if binding.how not in ("assign", "annassign", "walrus"):
            return UNKNOWN  # loop targets, `+=`, imports, `with`
        bound = binding.value
        return UNKNOWN if bound is None else self.value(bound)

    def _parameter(self, binding: Binding) -> Any:
        """A parameter's value when every call of its function in the file passes the same one
        (a call that leaves it out passes the default). A function that may be called from
        elsewhere (handed on, decorated, a method Python calls itself) has no known arguments."""
        function = binding.scope
        if not isinstance(function, cst.FunctionDef):
            return UNKNOWN
        summaries = self.model.summaries
        sites = summaries.call_sites(function)
        if not sites:
            return UNKNOWN
        return agree(
            UNKNOWN if argument is None else self.value(argument)
            for argument in (summaries.argument(function, call, offset, binding.name) for call, offset in sites)
        )

    # -- what may change values behind the code's back ---------------------------------------
    def module_rewritten(self) -> bool:
        """`exec(open("configurator.py").read())` and `globals().update(...)` rewrite module
        globals: nanoGPT-style scripts override every module constant this way."""
        if self._module_rewritten is None:
            self._module_rewritten = any(
                isinstance(call.func, cst.Name)
                and call.func.value in ("exec", "globals")
                and not self.model.bindings_of(call.func)
                for call in self.model.calls
            )
        return self._module_rewritten

    def _maybe_mutated(self, expr: cst.Name | cst.Attribute) -> bool:
        """Whether the dict or list a name holds may be changed: item assignment, a mutating method, or
        being handed to a call that is not known to only read it."""
        for binding in self.model.bindings_of(expr):
            for read in self.model.reads_of(binding):
                parent = self.model.parent(read)
                if isinstance(parent, cst.Subscript) and parent.value is read:
                    if is_store_target(self.model, parent):
                        return True
                elif isinstance(parent, cst.Attribute) and parent.value is read:
                    if parent.attr.value in _MUTATING_METHODS:
                        return True
                elif isinstance(parent, cst.Arg) and parent.value is read and parent.star != "**":
                    call = self.model.parent(parent)
                    if isinstance(call, cst.Call) and not _read_only_call(call):
                        return True
        return False


evaluator = per_model(Evaluator)


def runs_with_defaults(model, node: cst.CSTNode) -> bool:
    """False when ``node`` sits in a branch that the script's defaults provably skip
    (`if args.use_optimizer:` with a `store_true` flag, `if args.resume:` with `default=""`),
    else True."""
    return skipped_by_defaults(model, node) is None


def skipped_by_defaults(model, node: cst.CSTNode) -> cst.BaseExpression | None:
    """The test of the innermost branch around ``node`` that the script's defaults provably
    skip, or None when the defaults run it."""
    return next(_skipping_tests(model, node), None)


def _skipping_tests(model, node: cst.CSTNode) -> Iterator[cst.BaseExpression]:
    """The tests of the branches around ``node``, innermost first, that the script's defaults
    provably steer away from it."""
    child = node
    for ancestor in model.ancestors(node):
        if type(ancestor) in (cst.If, cst.IfExp, cst.While) and child is not ancestor.test:
            test = value(model, ancestor.test)
            if test is not UNKNOWN and bool(test) != (child is ancestor.body):
                yield ancestor.test
        child = ancestor


def never_runs(model, node: cst.CSTNode) -> bool:
    """Whether ``node`` sits in a branch that constants written in the code itself switch off
    (`if False:`, `classify = False` ... `if classify:`, `world_size = 1` ... `if world_size > 1:`):
    every name the test reads is bound only to literals, so no flag from the command line or a
    config can turn it on."""
    return any(
        all(_literal_bindings(model, read) for read in _names_in(test)) for test in _skipping_tests(model, node)
    )


def _names_in(expr: cst.CSTNode) -> list[cst.BaseExpression]:
    """The names and attribute chains a test reads."""
    found, pending = [], [expr]
    while pending:
        node = pending.pop()
        if isinstance(node, (cst.Name, cst.Attribute)):
            found.append(node)  # `args.flag` is never a literal binding of the code
        else:
            pending.extend(children(node))
    return found


def _literal_bindings(model, read: cst.BaseExpression) -> bool:
    if not isinstance(read, cst.Name):
        return False
    if _is_literal(read):
        return True
    bindings = model.bindings_of(read)
    return bool(bindings) and all(
        binding.how in ("assign", "annassign") and _is_literal(binding.value) for binding in bindings
    )


def _is_literal(node: cst.CSTNode | None) -> bool:
    if isinstance(node, cst.Name):
        return node.value in ("True", "False", "None")
    return isinstance(node, (cst.Integer, cst.Float, cst.SimpleString))


# -- helpers -----------------------------------------------------------------------------------
def _decorator_name(node: cst.CSTNode) -> str:
    if isinstance(node, cst.Decorator):
        node = node.decorator
    if isinstance(node, cst.Call):
        node = node.func
    return dotted(node) or ""


def is_store_target(model, node: cst.CSTNode) -> bool:
    """Whether ``node`` is assigned to (`x[k] = v`, `x[k] += v`, `a, x[k] = ...`) or deleted."""
    parent = model.parent(node)
    if isinstance(parent, cst.AssignTarget):
        return True
    if isinstance(parent, (cst.AugAssign, cst.AnnAssign)) and parent.target is node:
        return True
    if isinstance(parent, cst.Del):
        return True
    if isinstance(parent, (cst.Element, cst.StarredElement)):
        return is_store_target(model, model.parent(parent))
    if isinstance(parent, (cst.Tuple, cst.List)):
        return is_store_target(model, parent)
    return False


def _read_only_call(call: cst.Call) -> bool:
    func = call.func
    if isinstance(func, cst.Name):
        return func.value in _READ_ONLY_CALLS
    return isinstance(func, cst.Attribute) and func.attr.value in _READ_ONLY_CALL_TAILS


def agree(values) -> Any:
    """The one value every candidate has, or UNKNOWN (also for no candidates)."""
    result: Any = None
    first = True
    for candidate in values:
        if candidate is UNKNOWN:
            return UNKNOWN
        if first:
            result, first = candidate, False
        elif not _same(result, candidate):
            return UNKNOWN
    return UNKNOWN if first else result


def _fully_known(candidate: Any) -> bool:
    """Known, and so is everything in it (`("sgd", UNKNOWN)` cannot answer `in` or `==`)."""
    if candidate is UNKNOWN:
        return False
    if isinstance(candidate, tuple):
        return all(_fully_known(item) for item in candidate)
    if isinstance(candidate, dict):
        return all(_fully_known(item) for item in candidate.values())
    return True


def is_number(candidate: Any) -> bool:
    return isinstance(candidate, (int, float)) and not isinstance(candidate, bool)


def _same(left: Any, right: Any) -> bool:
    return type(left) is type(right) and left == right or (is_number(left) and is_number(right) and left == right)


_COMPARISONS = {
    cst.Equal: lambda a, b: a == b,
    cst.NotEqual: lambda a, b: a != b,
    cst.LessThan: lambda a, b: a < b,
    cst.LessThanEqual: lambda a, b: a <= b,
    cst.GreaterThan: lambda a, b: a > b,
    cst.GreaterThanEqual: lambda a, b: a >= b,
    cst.In: lambda a, b: a in b,
    cst.NotIn: lambda a, b: a not in b,
    cst.Is: lambda a, b: a is b if a is None or b is None else a == b,
    cst.IsNot: lambda a, b: a is not b if a is None or b is None else a != b,
}


def _unary(operator: cst.BaseUnaryOp, operand: Any) -> Any:
    if isinstance(operator, cst.Not):
        return operand if operand is UNKNOWN else not operand
    if not is_number(operand):
        return UNKNOWN
    if isinstance(operator, cst.Minus):
        return -operand
    if isinstance(operator, cst.Plus):
        return operand
    return UNKNOWN


def _binary(operator: cst.BaseBinaryOp, left: Any, right: Any) -> Any:
    if not (is_number(left) and is_number(right)):
        return UNKNOWN
    if isinstance(operator, cst.Add):
        return left + right
    if isinstance(operator, cst.Subtract):
        return left - right
    if isinstance(operator, cst.Multiply):
        return left * right
    if isinstance(operator, cst.Divide):
        return left / right
    if isinstance(operator, cst.FloorDivide):
        return left // right
    if isinstance(operator, cst.Modulo):
        return left % right
    if isinstance(operator, cst.Power):
        if abs(right) > 64 or abs(left) > 1e6:
            return UNKNOWN  # keep the evaluator from building huge integers
        result = left**right
        return UNKNOWN if isinstance(result, complex) or (isinstance(result, float) and math.isinf(result)) else result
    return UNKNOWN
