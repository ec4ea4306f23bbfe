"""How costly a LaTeX answer is to compare, read from the expression itself (no clock).

In full: ``docs/benchmarks.md``, section "How costly an answer is to compare
(benchmarks/problems/expression_cost.py)".
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, fields

_INF = math.inf


@dataclass(frozen=True)
class Cost:
    """The cost-driving properties of one expression (see the module docstring)."""

    digits: float = 0.0
    depth: int = 0
    symbolic_sum_power: float = 0.0
    numeric_sum_power: float = 0.0
    terms: float = 0.0


# What an answer may reach and still be compared (each far below the runaway costs above).
LIMITS = Cost(
    digits=1_000_000, depth=10, symbolic_sum_power=300, numeric_sum_power=2500, terms=5000
)

_TOKEN = re.compile(r"\\[A-Za-z]+|\\.|\d+(?:\.\d*)?|\.\d+|\S")
_OPEN = {"{": "}", "(": ")", "[": "]"}
_CLOSE = frozenset("})]")
_SEPARATORS = frozenset(
    [",", ";", "=", "<", ">", "|", ":", "&", "\\le", "\\leq", "\\ge", "\\geq", "\\ne", "\\neq",
     "\\in", "\\cup", "\\cap", "\\setminus", "\\to", "\\approx", "\\pm", "\\mp", "\\quad",
     "\\qquad", "\\text", "\\mid", "\\lt", "\\gt", "\\subset", "\\subseteq", "\\iff",
     "\\implies", "\\Rightarrow", "\\rightarrow", "\\cdots", "\\ldots", "\\dots", "\\infty"]
)  # fmt: skip
_IGNORED = frozenset(
    ["\\,", "\\;", "\\:", "\\!", "\\ ", "\\left", "\\right", "\\displaystyle", "\\big", "\\Big",
     "\\bigg", "\\Bigg", "$", "\\limits"]
)  # fmt: skip
_FRACTIONS = frozenset(["\\frac", "\\dfrac", "\\tfrac", "\\cfrac"])
_BINOMIALS = frozenset(["\\binom", "\\dbinom", "\\tbinom"])
_CONSTANTS = frozenset(["\\pi", "e", "\\e"])
_SUMS = frozenset(["\\sum", "\\prod"])
_SKIPPED_ARGUMENT = frozenset(["\\text", "\\mathrm", "\\textbf", "\\operatorname", "\\mathbf"])


@dataclass(frozen=True)
class _Value:
    """A scanned sub-expression: ``size`` bounds |log10 |value|| of a number (None: symbolic)."""

    size: float | None
    is_sum: bool = False


_SYMBOL = _Value(None)


def _magnitude(size: float) -> float:
    """10**size without overflow (an upper bound on a number of that size)."""
    return _INF if size > 300 else 10.0**size


def _number_size(token: str) -> float:
    value = float(token)
    return 0.0 if value == 0 else abs(math.log10(value))


class _Scan:
    """One left-to-right pass over the tokens, recording the largest cost figures seen."""

    def __init__(self, tokens: list[str]) -> None:
        self.tokens = [t for t in tokens if t not in _IGNORED]
        self.i = 0
        self.digits = 0.0
        self.symbolic_sum_power = 0.0
        self.numeric_sum_power = 0.0
        self.terms = 0.0

    def peek(self) -> str | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self) -> str | None:
        token = self.peek()
        self.i += token is not None
        return token

    def number(self, size: float) -> _Value:
        self.digits = max(self.digits, size)
        return _Value(size)

    def expression(self) -> _Value:
        """Terms joined by + and -, up to a closing bracket (separators split expressions)."""
        terms: list[_Value] = []
        while True:
            token = self.peek()
            if token is None or token in _CLOSE:
                break
            if token in _SEPARATORS:
                self.take()
                terms = []  # "a, b": independent expressions
                if token in _SKIPPED_ARGUMENT:
                    self.argument()
                continue
            if token in ("+", "-"):
                self.take()
                continue
            terms.append(self.term())
        if not terms:
            return _SYMBOL
        if len(terms) == 1:
            return terms[0]
        sizes = [t.size for t in terms]
        if any(s is None for s in sizes):
            return _Value(None, is_sum=True)
        return _Value(max(sizes) + math.log10(len(terms)), is_sum=True)

    def term(self) -> _Value:
        """Factors multiplied (juxtaposed, ``\\cdot``, ``\\times``, ``*``) or divided."""
        factors: list[_Value] = []
        while True:
            token = self.peek()
            if token is None or token in _CLOSE or token in _SEPARATORS or token in ("+", "-"):
                break
            if token in ("\\cdot", "\\times", "*", "/", "\\div"):
                self.take()
                continue
            factors.append(self.factor())
        if len(factors) == 1:
            return factors[0]
        sizes = [f.size for f in factors]
        if not sizes or any(s is None for s in sizes):
            return _SYMBOL
        return self.number(sum(sizes))  # type: ignore[arg-type]

    def factor(self) -> _Value:
        value = self.atom()
        while True:
            token = self.peek()
            if token == "!":
                self.take()
                value = self.factorial(value)
            elif token == "^":
                self.take()
                value = self.power(value, self.argument())
            elif token == "_":
                self.take()
                self.argument()
                value = _SYMBOL
            elif token in ("'", "\\prime"):
                self.take()
                value = _SYMBOL
            else:
                break
        return value

    def factorial(self, value: _Value) -> _Value:
        if value.size is None:
            return _SYMBOL
        n = _magnitude(value.size)
        return self.number(n * math.log10(n) if n > 1 else 0.0)

    def power(self, base: _Value, exponent: _Value) -> _Value:
        if exponent.size is None:
            return _SYMBOL
        times = _magnitude(exponent.size)
        if base.is_sum:
            if base.size is None:
                self.symbolic_sum_power = max(self.symbolic_sum_power, times)
            else:
                self.numeric_sum_power = max(self.numeric_sum_power, times)
        if base.size is None:
            return _SYMBOL
        return self.number(times * base.size if base.size else 0.0)

    def argument(self) -> _Value:
        """A ``{...}`` group, or the single token after ``^`` / ``_``."""
        return self.atom()

    def group(self) -> _Value:
        """The contents of a group whose opening token was just taken."""
        inner = self.expression()
        if self.peek() in _CLOSE:
            self.take()
        return inner

    def atom(self) -> _Value:
        token = self.take()
        if token is None:
            return _SYMBOL
        if token in _OPEN:
            return self.group()
        if token[0].isdigit() or (token[0] == "." and token[1:2].isdigit()):
            return self.number(_number_size(token))
        if token in _CONSTANTS:
            return self.number(0.5)
        if token in _FRACTIONS:
            numerator, denominator = self.argument(), self.argument()
            if numerator.size is None or denominator.size is None:
                return _SYMBOL
            return self.number(numerator.size + denominator.size)
        if token == "\\sqrt":
            if self.peek() == "[":
                self.take()
                self.group()
            return self.argument()
        if token in _BINOMIALS:
            top, _ = self.argument(), self.argument()
            if top.size is None:
                return _SYMBOL
            return self.number(_magnitude(top.size) * math.log10(2))
        if token in _SUMS:
            return self.sum()
        if token == "\\Gamma":  # Gamma(n) = (n-1)!
            return self.factorial(self.argument())
        if token == "\\exp":
            exponent = self.argument()
            return self.power(_Value(0.5), exponent)
        if token in _SKIPPED_ARGUMENT:
            self.argument()
        return _SYMBOL

    def sum(self) -> _Value:
        """``\\sum_{k=a}^{b}``: with numeric bounds, b - a terms are added one by one."""
        low = high = None
        for _ in range(2):
            marker = self.peek()
            if marker not in ("_", "^"):
                break
            self.take()
            if marker == "_":
                start = self.i
                self.argument()
                bound = [t for t in self.tokens[start : self.i] if re.fullmatch(r"\d+", t)]
                low = float(bound[-1]) if bound else None
            else:
                high = self.argument().size
        if low is not None and high is not None:
            self.terms = max(self.terms, _magnitude(high) - low)
        self.factor()
        return _SYMBOL


def _depth(tokens: list[str]) -> int:
    depth = deepest = 0
    for token in tokens:
        if token in _OPEN:
            depth += 1
            deepest = max(deepest, depth)
        elif token in _CLOSE:
            depth = max(0, depth - 1)
    return deepest


def cost(latex: str) -> Cost:
    """The cost figures of an expression (an upper bound; see the module docstring)."""
    tokens = _TOKEN.findall(latex)
    depth = _depth(tokens)
    if depth > LIMITS.depth:  # deeper than any admitted answer: not scanned further
        return Cost(depth=depth)
    scan = _Scan(tokens)
    try:
        while scan.peek() is not None:
            scan.expression()
            scan.take()  # an unmatched closing bracket
    except RecursionError:  # commands nested without braces ("\\frac\\frac\\frac..."): deep
        return Cost(depth=len(tokens))
    return Cost(
        digits=scan.digits,
        depth=depth,
        symbolic_sum_power=scan.symbolic_sum_power,
        numeric_sum_power=scan.numeric_sum_power,
        terms=scan.terms,
    )


_DESCRIPTIONS = {
    "digits": "a number of {value:.3g} digits",
    "depth": "{value:g} levels of nesting",
    "symbolic_sum_power": "a sum of symbols to the power {value:.3g}",
    "numeric_sum_power": "a sum to the power {value:.3g}",
    "terms": "a sum or product of {value:.3g} terms",
}


def too_costly(latex: str, allowance: Cost | None = None) -> str | None:
    """Why comparing ``latex`` would cost too much (None when it may be compared).

    ``allowance`` raises each limit to at least that figure: pass the gold's :func:`cost` so a
    reply no costlier than the item's own gold is always compared (the golds are trusted and
    their comparisons tested).
    """
    found = cost(latex)
    for field in fields(Cost):
        limit = getattr(LIMITS, field.name)
        if allowance is not None:
            limit = max(limit, getattr(allowance, field.name))
        value = getattr(found, field.name)
        if value > limit:
            what = _DESCRIPTIONS[field.name].format(value=value)
            return f"{what} (limit {limit:.3g})"
    return None
