"""Which cases a run selects: ``--run REGEX``, ``-m TAGS`` and ``-k WORDS``, one predicate on a case.

``-m`` and ``-k`` take pytest's match-expression grammar (``_pytest/mark/expression.py``), so
what works after ``pytest -m`` works after ``specrun -m``::

    expression: expr? EOF
    expr:       and_expr ('or' and_expr)*
    and_expr:   not_expr ('and' not_expr)*
    not_expr:   'not' not_expr | '(' expr ')' | ident
    ident:      (\\w|:|\\+|-|\\.|\\[|\\]|\\\\|/)+

As in pytest, a ``-m`` name is true when the case has that tag (exactly), and a ``-k`` name is
true when it is a substring of the case's id or name, ignoring case. Tags take no arguments,
so pytest's ``marker(key=value)`` form is not part of it. An empty expression selects all.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import NoReturn

from .._core.data import Case
from .._core.errors import UsageError
from .._load.patterns import PatternError, compile_pattern

_IDENT = re.compile(r"(?:\w|[:+.\[\]\\/-])+")
_KEYWORDS = {"and", "or", "not"}

Matcher = Callable[[str], bool]
Node = Callable[[Matcher], bool]


class ExpressionError(ValueError):
    """An expression that does not parse; the message says where (a 1-based column) and why."""

    def __init__(self, column: int, message: str):
        super().__init__(f"at column {column}: {message}")


@dataclass(frozen=True)
class _Token:
    kind: str  # "(", ")", "and", "or", "not", "name" or "end"
    text: str
    column: int


_NAMES = {"(": "left parenthesis", ")": "right parenthesis", "name": "a name", "end": "end of input"}


def _tokens(text: str) -> Iterator[_Token]:
    """The tokens of ``text``, lexed as the parser asks, so a mistake is reported where it reads."""
    pos = 0
    while pos < len(text):
        char = text[pos]
        if char in " \t":
            pos += 1
        elif char in "()":
            yield _Token(char, char, pos + 1)
            pos += 1
        elif match := _IDENT.match(text, pos):
            word = match.group(0)
            yield _Token(word if word in _KEYWORDS else "name", word, pos + 1)
            pos = match.end()
        else:
            raise ExpressionError(pos + 1, f"unexpected character {char!r}")
    yield _Token("end", "", len(text) + 1)


class _Parser:
    """Recursive descent over the grammar above; each rule returns a function of the matcher."""

    def __init__(self, text: str):
        self.tokens = _tokens(text)
        self.current = next(self.tokens)
        self.names: list[str] = []

    def accept(self, kind: str) -> _Token | None:
        token = self.current
        if token.kind != kind:
            return None
        if kind != "end":
            self.current = next(self.tokens)
        return token

    def expect(self, *kinds: str) -> NoReturn:
        token = self.current
        wanted = " or ".join(_NAMES.get(k, repr(k)) for k in kinds)
        got = _NAMES.get(token.kind, repr(token.text))
        raise ExpressionError(token.column, f"expected {wanted}; got {got}")

    def expression(self) -> Node:
        if self.accept("end"):
            return lambda matcher: True  # nothing to select by: everything
        node = self.expr()
        if not self.accept("end"):
            self.expect("end")
        return node

    def expr(self) -> Node:
        node = self.and_expr()
        while self.accept("or"):
            node = _or(node, self.and_expr())
        return node

    def and_expr(self) -> Node:
        node = self.not_expr()
        while self.accept("and"):
            node = _and(node, self.not_expr())
        return node

    def not_expr(self) -> Node:
        if self.accept("not"):
            inner = self.not_expr()
            return lambda matcher: not inner(matcher)
        if self.accept("("):
            node = self.expr()
            if not self.accept(")"):
                self.expect(")")
            return node
        token = self.accept("name")
        if token is None:
            self.expect("not", "(", "name")
        if self.current.kind == "(":
            raise ExpressionError(self.current.column, f"{token.text!r} takes no arguments (tags are plain names)")
        name = token.text
        self.names.append(name)
        return lambda matcher: matcher(name)


def _or(left: Node, right: Node) -> Node:
    return lambda matcher: left(matcher) or right(matcher)


def _and(left: Node, right: Node) -> Node:
    return lambda matcher: left(matcher) and right(matcher)


class Expression:
    """A compiled ``-m``/``-k`` expression: ``evaluate(matcher)`` with ``matcher(name) -> bool``."""

    def __init__(self, text: str):
        parser = _Parser(text)
        self._node = parser.expression()
        self.names = tuple(parser.names)  # the names it mentions, in order

    def evaluate(self, matcher: Matcher) -> bool:
        return self._node(matcher)


def _compile(flag: str, text: str) -> Expression:
    try:
        return Expression(text)
    except ExpressionError as exc:
        raise UsageError(
            f"{flag} {text!r}: {exc} (names joined by 'and', 'or', 'not' and parentheses, e.g. 'smoke and not slow')"
        ) from None


@dataclass
class CaseFilter:
    """``--run``, ``-m`` and ``-k`` as given (None: not given); ``matches(case)`` applies all three."""

    run: str | None = None
    tags: str | None = None
    keywords: str | None = None

    def __post_init__(self) -> None:
        try:
            self._pattern = compile_pattern(self.run) if self.run else None
        except PatternError as exc:
            raise UsageError(f"--run: {exc}") from None
        self._tags = _compile("-m", self.tags) if self.tags else None
        self._keywords = _compile("-k", self.keywords) if self.keywords else None

    def __bool__(self) -> bool:
        return bool(self._pattern or self._tags or self._keywords)

    def matches(self, case: Case) -> bool:
        """True when the case passes every filter given."""
        if self._pattern and not (self._pattern.search(case.id) or (case.name and self._pattern.search(case.name))):
            return False
        if self._tags and not self._tags.evaluate(set(case.tags).__contains__):
            return False
        if self._keywords:
            haystacks = [case.id.lower(), (case.name or "").lower()]
            return self._keywords.evaluate(lambda word: any(word.lower() in h for h in haystacks))
        return True

    def unknown_tags(self, tags: Iterable[str]) -> str | None:
        """A warning when ``-m`` names a tag no loaded case has (``tags``: those of every loaded
        case), listing the tags there are."""
        if self._tags is None:
            return None
        known = sorted(set(tags))
        unknown = [name for name in dict.fromkeys(self._tags.names) if name not in known]
        if not unknown:
            return None
        names = ", ".join(repr(n) for n in unknown)
        listed = f"known tags: {', '.join(known)}" if known else "no case has tags"
        return f"-m: unknown tag{'s' * (len(unknown) > 1)} {names} ({listed})"

    def describe(self) -> str:
        """The filters given, as typed: for the message when nothing matches."""
        given = [("--run", self.run), ("-m", self.tags), ("-k", self.keywords)]
        return " ".join(f"{flag} {value!r}" for flag, value in given if value)
