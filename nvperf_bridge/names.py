"""Kernel names as profilers print them, parsed into signatures: match keys and display names.

Profilers spell one kernel in several ways. nvprof prints the demangled
signature (``void matrixMulCUDA<int=32>(float*, float*, int, int)``), ncu may
print it with ``(int)4`` template values or without spaces after commas
(``cuda_compute_flux(int,int*,float*)``), and short-name modes print only the
function (``cuda_compute_flux``). This module turns any of these into a
``Signature``:

* ``qualname``: the function name with its namespaces and class scopes
  (``at::native::(anonymous namespace)::fused_dropout_kernel_vec``);
* ``template_args``: the template argument list of the function, each
  normalised (``int=32`` and ``(int)32`` both read ``32``), or None when the
  name does not say (a bare function name);
* ``params``: the parameter list, or None when the name was printed without one.

Joins use ``compatible`` / ``match_names``: two names can stand for the same
kernel only if their function names are equal and every part that both of
them print (template arguments, parameters) is equal; among several
compatible partners the one agreeing on the most printed parts wins, and a tie
is ambiguous (never guessed). ``keys`` gives the same information as strings,
from most to least specific, for code that wants to index on them.

Display: ``display_name`` keeps the function name and collapses template
arguments (``elementwise_kernel<…>``); ``distinct_display_names`` adds the
shortest part that tells kernels with the same display name apart (a template
argument, a parameter, the scope, or an ordinal).

Parsing never raises: a name whose brackets do not balance (or a mangled
``_Z...`` name) is a ``Signature`` with only a ``qualname``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

__all__ = [
    "Signature",
    "parse",
    "normalise",
    "keys",
    "compatible",
    "match_names",
    "NameMatch",
    "display_name",
    "distinct_display_names",
]

_OPEN = {"(": ")", "<": ">", "[": "]", "{": "}"}
_CLOSE = {v: k for k, v in _OPEN.items()}
_SPACES = re.compile(r"\s+")
# a space is only meaningful between two word characters (``unsigned int``); around punctuation it is noise
_PUNCT_SPACE = re.compile(r"\s*([^\w\s])\s*")
_TYPED_VALUE = re.compile(r"^(?:[A-Za-z_][\w:]*(?:\s[A-Za-z_]\w*)*)=(?P<v>.+)$")  # nvprof: ``int=32``, ``unsigned int=4``
_CAST_VALUE = re.compile(r"^\((?:[A-Za-z_]\w*)(?:\s[A-Za-z_]\w*)*\)(?P<v>-?\d+\w*)$")  # ncu: ``(int)4``
_MAX_DISPLAY_SCOPE = 48  # qualified names longer than this show only the function name
_MAX_PART = 40
_MAX_UNPARSED = 64  # a name that could not be parsed (mangled) is shown up to this many characters  # a distinguishing template argument / parameter longer than this is not shown whole


@dataclass(frozen=True)
class Signature:
    """One kernel name, parsed. ``None`` parts were not printed; ``()`` means printed and empty."""

    raw: str
    qualname: str
    template_args: tuple[str, ...] | None
    params: tuple[str, ...] | None

    @property
    def function(self) -> str:
        """The function name without its scope (``elementwise_kernel``)."""
        parts = split_scope(self.qualname)
        return parts[-1] if parts else self.qualname

    def full(self) -> str:
        """The normalised signature: ``qualname<targs>(params)`` with the parts that were printed."""
        text = self.qualname
        if self.template_args:
            text += "<" + ",".join(self.template_args) + ">"
        if self.params is not None:
            text += "(" + ",".join(self.params) + ")"
        return text


def normalise(text: str) -> str:
    """Whitespace made canonical: one space between words, none around punctuation."""
    text = _SPACES.sub(" ", str(text).strip())
    return _PUNCT_SPACE.sub(r"\1", text)


def _matching_open(text: str, end: int, opener: str, closer: str) -> int:
    """Index of the ``opener`` that balances the ``closer`` at ``end``, counting only that pair; -1 if none."""
    depth = 0
    for i in range(end, -1, -1):
        ch = text[i]
        if ch == closer:
            depth += 1
        elif ch == opener:
            depth -= 1
            if depth == 0:
                return i
    return -1


def split_top(text: str, sep: str = ",") -> list[str]:
    """``text`` split on ``sep`` outside every bracket pair; [] for an empty string.

    A ``>`` right after ``-`` (``->``) is not a bracket. Unbalanced text is
    returned whole, as one part.
    """
    if not text:
        return []
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in _OPEN:
            depth += 1
        elif ch in _CLOSE and not (ch == ">" and i > 0 and text[i - 1] == "-"):
            depth -= 1
            if depth < 0:
                return [text]
        elif ch == sep and depth == 0:
            out.append(text[start:i])
            start = i + 1
    if depth != 0:
        return [text]
    out.append(text[start:])
    return out


def split_scope(qualname: str) -> list[str]:
    """``a::b<c::d>::f`` -> ["a", "b<c::d>", "f"]: ``::`` outside brackets."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(qualname):
        ch = qualname[i]
        if ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            depth -= 1
        elif ch == ":" and depth == 0 and qualname.startswith("::", i):
            parts.append(qualname[start:i])
            start = i + 2
            i += 2
            continue
        i += 1
    parts.append(qualname[start:])
    return [p for p in parts if p]


def _template_value(arg: str) -> str:
    """One template argument as both profilers can agree on: ``int=32`` / ``(int)32`` -> ``32``."""
    m = _TYPED_VALUE.match(arg) or _CAST_VALUE.match(arg)
    return m.group("v") if m else arg


@lru_cache(maxsize=65536)
def parse(name: str) -> Signature:
    """Parse a kernel name (nvprof trace correlation suffix already removed).

    >>> parse("void matrixMulCUDA<int=32>(float*, float*, int, int)").full()
    'matrixMulCUDA<32>(float*,float*,int,int)'
    """
    raw = str(name)
    text = _SPACES.sub(" ", raw.strip())
    if text.startswith("void "):  # before spacing is normalised: ``void <unnamed>::f`` must not become ``void<unnamed>``
        text = text[5:]
    text = normalise(text)
    params: tuple[str, ...] | None = None
    body = text[:-5] if text.endswith(")const") else text
    if body.endswith(")"):
        start = _matching_open(body, len(body) - 1, "(", ")")
        # ``ns::(anonymous namespace)`` ends in a bracket that is a scope, not a parameter list
        if start > 0 and not body[:start].endswith("::"):
            inner = body[start + 1:-1]
            params = tuple(split_top(inner)) if inner != "void" else ()
            text = body[:start]
    template_args: tuple[str, ...] | None = () if params is not None else None
    if text.endswith(">") and not text.endswith("->"):
        start = _matching_open(text, len(text) - 1, "<", ">")
        # ``ns::<unnamed>`` is a scope, not a template argument list
        if start > 0 and not text[:start].endswith("::"):
            template_args = tuple(_template_value(a) for a in split_top(text[start + 1:-1]))
            text = text[:start]
    if not text or split_top(text, "\x00") != [text]:  # unbalanced: keep the name whole, claim nothing
        return Signature(raw=raw, qualname=normalise(raw), template_args=None, params=None)
    return Signature(raw=raw, qualname=text, template_args=template_args, params=params)


def keys(name: str) -> dict[str, str | None]:
    """Match keys from most to least specific; a level the name does not print is None.

    ``full`` (function, template arguments, parameters), ``name_params``,
    ``name_targs``, ``name`` (the qualified function name alone).
    """
    sig = parse(name)
    targs = "<" + ",".join(sig.template_args) + ">" if sig.template_args else ""
    params = "(" + ",".join(sig.params) + ")" if sig.params is not None else None
    return {
        "full": sig.qualname + targs + params if params is not None else None,
        "name_params": sig.qualname + params if params is not None else None,
        "name_targs": sig.qualname + targs if sig.template_args is not None else None,
        "name": sig.qualname,
    }


def _agreement(a: Signature, b: Signature) -> int | None:
    """How many printed parts two signatures share (0..2), or None when they cannot be one kernel."""
    if a.qualname != b.qualname:
        return None
    score = 0
    for x, y in ((a.template_args, b.template_args), (a.params, b.params)):
        if x is None or y is None:
            continue
        if x != y:
            return None
        score += 1
    return score


def compatible(a: str, b: str) -> bool:
    """True when the two names can be the same kernel: same function, equal wherever both print a part."""
    return _agreement(parse(a), parse(b)) is not None


@dataclass(frozen=True)
class NameMatch:
    """The outcome for one name of the left side: its partner, or why there is none."""

    left: str
    right: str | None
    key: str | None  # the most specific level both names print ("full", "name_params", "name_targs", "name")
    candidates: tuple[str, ...] = ()  # the right-side names it could not choose between (ambiguous)

    @property
    def ambiguous(self) -> bool:
        return self.right is None and len(self.candidates) > 1


def _level(a: Signature, b: Signature) -> str:
    has_params = a.params is not None and b.params is not None
    has_targs = a.template_args is not None and b.template_args is not None
    if has_params and has_targs:
        return "full"
    if has_params:
        return "name_params"
    if has_targs:
        return "name_targs"
    return "name"


def match_names(left: Iterable[str], right: Iterable[str]) -> dict[str, NameMatch]:
    """Pair each distinct left name with at most one right name, never two different kernels.

    A pair must be ``compatible``. Among a left name's compatible right names
    the one that agrees on the most printed parts is chosen; a tie leaves it
    unpaired and ambiguous. A right name chosen by several left names goes to
    the one that agrees on strictly more parts; on a tie none of them gets it
    (each is reported ambiguous). Exact spellings are preferred over equal
    normalised ones, so two names that normalise alike still pair one to one.
    """
    left_names = list(dict.fromkeys(str(n) for n in left))
    right_names = list(dict.fromkeys(str(n) for n in right))
    by_qual: dict[str, list[tuple[str, Signature]]] = {}
    for name in right_names:
        sig = parse(name)
        by_qual.setdefault(sig.qualname, []).append((name, sig))

    chosen: dict[str, tuple[str, int]] = {}
    out: dict[str, NameMatch] = {}
    for name in left_names:
        sig = parse(name)
        scored = []
        for other, osig in by_qual.get(sig.qualname, []):
            agree = _agreement(sig, osig)
            if agree is not None:
                scored.append((agree + (2 if other == name else 0), other, osig))
        if not scored:
            out[name] = NameMatch(name, None, None)
            continue
        best = max(s for s, _, _ in scored)
        top = [(o, osig) for s, o, osig in scored if s == best]
        if len(top) > 1:
            out[name] = NameMatch(name, None, None, tuple(o for o, _ in top))
            continue
        other, osig = top[0]
        out[name] = NameMatch(name, other, _level(sig, osig))
        chosen[name] = (other, best)

    claims: dict[str, list[tuple[int, str]]] = {}
    for name, (other, score) in chosen.items():
        claims.setdefault(other, []).append((score, name))
    for other, claimants in claims.items():
        if len(claimants) == 1:
            continue
        best = max(s for s, _ in claimants)
        winners = [n for s, n in claimants if s == best]
        for score, name in claimants:
            if len(winners) == 1 and name == winners[0]:
                continue
            # several left kernels could be this one right kernel: none of the losers is paired
            out[name] = NameMatch(name, None, None, (other,) if len(winners) == 1 else (other,) + tuple(
                n for n in winners if n != name))
    return out


# ---- display names -----------------------------------------------------------------

def _collapse_scope_templates(part: str) -> str:
    lt = part.find("<")
    return part[:lt] + "<…>" if lt > 0 and part.endswith(">") else part


def display_name(name: str) -> str:
    """A short name for tables: the function (with its scope when short), template arguments as ``<…>``.

    ``void at::native::legacy::elementwise_kernel<128, 4, ...>(int, ...)`` ->
    ``at::native::legacy::elementwise_kernel<…>``;
    ``matrixMulCUDA<int=32>(float*, ...)`` -> ``matrixMulCUDA<…>``; a name that
    could not be parsed is shown whole.
    """
    sig = parse(name)
    if sig.template_args is None and sig.params is None and len(sig.qualname) > _MAX_UNPARSED:
        return sig.qualname[:_MAX_UNPARSED - 1] + "…"  # a mangled or unparseable name: its start
    scope = [_collapse_scope_templates(p) for p in split_scope(sig.qualname)]
    qual = "::".join(scope) if scope else sig.qualname
    if len(qual) > _MAX_DISPLAY_SCOPE and scope:
        qual = scope[-1]
    return qual + ("<…>" if sig.template_args else "")


def _first_difference(parts: Sequence[tuple[str, ...] | None]) -> int | None:
    """The first position where the given part lists differ, when every list is printed."""
    if any(p is None for p in parts) or len(set(parts)) < len(parts):
        return None
    longest = max(len(p) for p in parts)  # type: ignore[arg-type]
    for i in range(longest):
        values = [p[i] if i < len(p) else "" for p in parts]  # type: ignore[index]
        if len(set(values)) == len(values):
            return i
    return None


def _show(args: tuple[str, ...], i: int) -> str:
    value = args[i] if i < len(args) else ""
    if len(value) > _MAX_PART:
        value = value[:_MAX_PART - 1] + "…"
    return ("…," if i > 0 else "") + value + (",…" if i < len(args) - 1 else "")


def distinct_display_names(names: Sequence[str]) -> list[str]:
    """Display names, one per input, equal only where the full names are equal (normalised).

    Names whose ``display_name`` collides get the shortest part that tells them
    apart, tried in this order: the first template argument that differs
    (``gemm<…,128,…>``), the first parameter that differs (``flux(…,int*,…)``),
    the scope that differs (the full qualified name), else an ordinal ``#2``
    in order of first appearance.
    """
    texts = [str(n) for n in names]
    base = {t: display_name(t) for t in dict.fromkeys(texts)}
    groups: dict[str, list[str]] = {}
    for text in base:
        groups.setdefault(base[text], []).append(text)
    result: dict[str, str] = {}
    for shown, members in groups.items():
        fulls = list(dict.fromkeys(parse(m).full() for m in members))
        if len(fulls) == 1:
            result.update({m: shown for m in members})
            continue
        sig_of = {parse(m).full(): parse(m) for m in members}
        sigs = [sig_of[f] for f in fulls]
        labels = _distinguish(shown, sigs)
        for m in members:
            result[m] = labels[fulls.index(parse(m).full())]
    # a distinguishing label can collide with another group's display name: ordinals settle it
    seen: dict[str, list[str]] = {}
    for text in base:
        seen.setdefault(result[text], []).append(parse(text).full())
    for label, fulls in seen.items():
        distinct = list(dict.fromkeys(fulls))
        if len(distinct) > 1:
            for text in base:
                if result[text] == label:
                    result[text] = f"{label} #{distinct.index(parse(text).full()) + 1}"
    return [result[t] for t in texts]


def _distinguish(shown: str, sigs: list[Signature]) -> list[str]:
    stem = shown[:-3] if shown.endswith("<…>") else shown
    i = _first_difference([s.template_args for s in sigs])
    if i is not None:
        return [f"{stem}<{_show(s.template_args or (), i)}>" for s in sigs]
    i = _first_difference([s.params for s in sigs])
    if i is not None:
        return [f"{shown}({_show(s.params or (), i)})" for s in sigs]
    quals = [s.qualname for s in sigs]
    if len(set(quals)) == len(quals) and all(len(q) <= 2 * _MAX_DISPLAY_SCOPE for q in quals):
        return [q + ("<…>" if s.template_args else "") for q, s in zip(quals, sigs)]
    if all(s.template_args is None or not s.template_args for s in sigs):
        # the same function printed with and without its parameter list (or overloads): show the lists
        shown_params = [shown if s.params is None else f"{shown}({','.join(s.params)})" for s in sigs]
        if len(set(shown_params)) == len(sigs) and all(len(p) <= 2 * _MAX_DISPLAY_SCOPE for p in shown_params):
            return shown_params
    return [f"{shown} #{k + 1}" for k in range(len(sigs))]
