"""Helpers rules call to make their NodeFixes.

Each returns None when the code does not have the shape the fix needs: a rule then reports its
finding without a fix rather than offering a guess. New code is given as text and parsed here,
so it takes the file's indentation and line endings when it is rendered.
"""

from __future__ import annotations

import libcst as cst

from torchlint.diagnostics import Applicability
from torchlint.registry import NodeFix

SAFE, UNSAFE = Applicability.SAFE, Applicability.UNSAFE

# Expressions that can take `.method()` directly; anything else (a conditional, a binary
# operation, a lambda...) needs parentheses first.
_PRIMARY = (
    cst.Name,
    cst.Attribute,
    cst.Call,
    cst.Subscript,
    cst.List,
    cst.Dict,
    cst.Set,
    cst.ListComp,
    cst.DictComp,
    cst.SetComp,
    cst.SimpleString,
    cst.ConcatenatedString,
    cst.FormattedString,
)


def reassign(statement: cst.Expr, target: cst.BaseExpression, message: str, applicability: Applicability = SAFE) -> NodeFix | None:
    """`t.to(d)` as a statement -> `t = t.to(d)`: assign the call's result back to ``target``.

    ``statement`` is the expression statement; ``target`` the tensor the call converts (a
    name, an attribute such as `self.x`, or a subscript such as `batch["x"]`). A trailing `;`
    and comments stay where they were. Assigning to an attribute or an item runs the owner's
    `__setattr__`/`__setitem__` (an nn.Module refuses a plain tensor for a registered
    parameter), so only a plain name keeps ``applicability``; the others are unsafe."""
    if not assignable(target):
        return None
    if not isinstance(target, cst.Name):
        applicability = UNSAFE
    assign = cst.Assign(
        targets=[cst.AssignTarget(target=_bare(target.deep_clone()))],
        value=statement.value,
        semicolon=statement.semicolon,
    )
    return NodeFix(message, applicability, {statement: assign})


def prepend_to_body(owner: cst.CSTNode, code: str, message: str, applicability: Applicability) -> NodeFix | None:
    """Insert the statement ``code`` (simple or compound, written unindented) as the first
    statement of the body of ``owner`` (a loop, `with`, `if`, function...), before any comment
    above the current first statement.

    The current first statement is kept as the same node, so a fix inside it that is applied in
    the same pass is kept too."""
    body = getattr(owner, "body", None)
    new = _statement(code)
    if new is None:
        return None
    if isinstance(body, cst.IndentedBlock) and body.body:
        first = body.body[0]
        return NodeFix(message, applicability, {first: cst.FlattenSentinel([new, first])})
    # A one-line body (`for e in r: step()`) takes one more simple statement before a `;`.
    if not isinstance(new, cst.SimpleStatementLine) or len(new.body) != 1:
        return None
    if isinstance(body, cst.SimpleStatementSuite) and body.body:
        first = body.body[0]
        small = new.body[0].with_changes(semicolon=cst.Semicolon(whitespace_after=cst.SimpleWhitespace(" ")))
        return NodeFix(message, applicability, {first: cst.FlattenSentinel([small, first])})
    return None


def chain_call(expr: cst.BaseExpression, call: str, message: str, applicability: Applicability) -> NodeFix | None:
    """``expr`` -> ``expr.<call>``, e.g. `Net()` -> `Net().to(device)` with call="to(device)";
    parenthesised first where the expression needs it (`(A() if c else B()).to(device)`)."""
    suffix = _expression(f"_.{call}")
    if not isinstance(suffix, cst.Call) or not isinstance(suffix.func, cst.Attribute):
        return None
    receiver = expr
    if not isinstance(expr, _PRIMARY) and not expr.lpar:
        receiver = expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    new = suffix.with_changes(func=suffix.func.with_changes(value=receiver))
    return NodeFix(message, applicability, {expr: new})


def moved_assignment(names: list[str], call: str) -> str:
    """`x, y = x.<call>, y.<call>` (or `x = x.<call>` for one name), the statement that moves a
    batch's tensors at the top of the batch loop."""
    targets = ", ".join(names)
    values = ", ".join(f"{name}.{call}" for name in names)
    return f"{targets} = {values}"


def loop_counter(loop: cst.For) -> str | None:
    """The loop's own integer counter when it has one: the name bound by
    `for epoch in range(...)` (also `trange(...)`, `tqdm(range(...))`); None for `_`-names,
    tuple targets and loops over anything else, whose variable is not an epoch number."""
    target = loop.target
    if not isinstance(target, cst.Name) or target.value.startswith("_"):
        return None
    return target.value if _counts(loop.iter) else None


def _counts(iterable: cst.BaseExpression) -> bool:
    if not isinstance(iterable, cst.Call):
        return False
    func = iterable.func
    name = func.value if isinstance(func, cst.Name) else func.attr.value if isinstance(func, cst.Attribute) else ""
    if name in ("range", "trange"):
        return True
    positional = [arg.value for arg in iterable.args if arg.keyword is None and not arg.star]
    return name == "tqdm" and bool(positional) and _counts(positional[0])


def assignable(target: cst.BaseExpression) -> bool:
    """Whether ``target`` can be assigned to: a name, or an attribute or item of one."""
    if isinstance(target, cst.Name):
        return True
    if isinstance(target, (cst.Attribute, cst.Subscript)):
        return assignable(target.value)
    return False


def _bare(expr: cst.BaseExpression) -> cst.BaseExpression:
    return expr.with_changes(lpar=[], rpar=[]) if expr.lpar else expr


def _statement(code: str) -> cst.BaseStatement | None:
    try:
        return cst.parse_statement(code.strip() + "\n")
    except cst.ParserSyntaxError:
        return None


def _expression(code: str) -> cst.BaseExpression | None:
    try:
        return cst.parse_expression(code)
    except cst.ParserSyntaxError:
        return None


def with_keywords(
    replaced: cst.BaseExpression, call: cst.Call, keywords: dict[str, str], then: str | None, message: str,
    applicability: Applicability,
) -> NodeFix | None:
    """Replace ``replaced`` by ``call`` with ``keywords`` (name -> code) given, replacing any it
    already passes, and followed by `.<then>` when ``then`` is given: `torch.zeros(n).to(d)` ->
    `torch.zeros(n, device=d)`."""
    new_args = {name: _expression(code) for name, code in keywords.items()}
    if any(value is None for value in new_args.values()):
        return None
    kept = [arg for arg in call.args if arg.keyword is None or arg.keyword.value not in new_args]
    no_space = cst.SimpleWhitespace("")
    added = [
        cst.Arg(value=value, keyword=cst.Name(name), equal=cst.AssignEqual(whitespace_before=no_space, whitespace_after=no_space))
        for name, value in new_args.items()
    ]
    if kept and isinstance(kept[-1].comma, cst.Comma):
        # one argument a line, with a trailing comma: the new ones follow the same layout
        between = kept[-2].comma if len(kept) > 1 and isinstance(kept[-2].comma, cst.Comma) else cst.Comma(
            whitespace_after=cst.SimpleWhitespace(" "))
        added[-1] = added[-1].with_changes(comma=kept[-1].comma)
        added[:-1] = [arg.with_changes(comma=between) for arg in added[:-1]]
        kept[-1] = kept[-1].with_changes(comma=between)
    new: cst.BaseExpression = call.with_changes(args=[*kept, *added])
    if then is not None:
        suffix = _expression(f"_.{then}")
        if not isinstance(suffix, cst.Call) or not isinstance(suffix.func, cst.Attribute):
            return None
        new = suffix.with_changes(func=suffix.func.with_changes(value=new))
    new = new.with_changes(lpar=replaced.lpar, rpar=replaced.rpar)
    return NodeFix(message, applicability, {replaced: new})
