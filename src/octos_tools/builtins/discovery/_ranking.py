"""Ranking a task sentence against the tool catalog: BM25F over stemmed words.

Each tool is a document of five fields, :data:`FIELD_WEIGHTS`: its name (split into words:
``exec_command`` → ``exec``, ``command``; ``createIssue`` → ``create``, ``issue``), its
``search_hints`` (a small curated vocabulary a tool declares for the words tasks use for
it: :attr:`octos_tools.tool_types.Tool.search_hints`), its tags, its title and description, and
the words of its input schema (argument names, descriptions, enum values).
Words are lower-cased, stop words dropped and stemmed with the Snowball English stemmer
(the ``snowballstemmer`` package, imported on first use), so "tests", "testing" and
"tested" meet. A query word also matches, at :data:`SYNONYM_WEIGHT`, the words of its
group in :data:`SYNONYMS` (a short list of general verbs and nouns of software work such
as remove/delete or folder/directory, for tools whose authors chose the other word).

The score is BM25F (Robertson and Zaragoza, "The Probabilistic Relevance Framework: BM25
and Beyond", 2009): per query word ``idf · tf·(k1+1) / (tf + k1·(1 − b + b·len/avg_len))``
with the field-weighted term frequency ``tf``, ``k1 = 1.2``, ``b = 0.75``, plus a bonus
when the query is, or contains, a tool's name.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

__all__ = [
    "BM25_B",
    "BM25_K1",
    "EXACT_NAME_BONUS",
    "FIELD_WEIGHTS",
    "NAME_CONTAINS_BONUS",
    "SYNONYMS",
    "SYNONYM_WEIGHT",
    "Document",
    "Scored",
    "rank",
    "stem",
    "tokenize",
]

_CAMEL_RE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_WORD_RE = re.compile(r"[a-z0-9]+")

_STOPWORDS = frozenset(
    "a about all an and any are as at be been by can could do does each every for from get "
    "got have how i if in into is it its just let me my of on one or our please should so "
    "some than that the their them then there these this those to tool tools up us use using "
    "via want we what when which while who will with would you your need needs still also".split()
)

FIELD_WEIGHTS: dict[str, float] = {
    "name": 3.0,
    "hints": 2.0,
    "tags": 1.0,
    "text": 1.0,
    "params": 0.5,
}
"""Weight of a word found in each field (name words count most, then the hints)."""
BM25_K1 = 1.2
BM25_B = 0.75
SYNONYM_WEIGHT = 0.5
"""A synonym of a query word counts this much of the word itself."""
PREFIX_WEIGHT = 0.5
"""A query word of four letters or more that only starts a tool word counts this much."""
EXACT_NAME_BONUS = 10.0
NAME_CONTAINS_BONUS = 3.0

#: Groups of words that name the same thing in requests about software work; a query word
#: of a group also matches the other words of it, at :data:`SYNONYM_WEIGHT`.
SYNONYMS: tuple[tuple[str, ...], ...] = (
    ("find", "search", "locate", "lookup", "seek"),
    ("delete", "remove", "erase", "drop", "discard"),
    ("create", "make", "new", "add", "generate", "produce"),
    ("edit", "modify", "change", "update", "alter", "rewrite", "fix"),
    ("read", "view", "show", "display", "open", "inspect"),
    ("run", "execute", "launch", "invoke"),
    ("list", "enumerate", "show"),
    ("assign", "give", "allocate"),
    ("download", "fetch", "retrieve"),
    ("image", "picture", "photo", "illustration", "drawing"),
    ("folder", "directory", "dir"),
    ("web", "internet", "online"),
    ("page", "website", "site", "url", "link"),
    ("agent", "subagent", "helper", "assistant"),
    ("command", "shell", "terminal"),
    ("stop", "cancel", "kill", "terminate", "abort", "close"),
    ("done", "complete", "finish", "resolve"),
    ("ask", "question", "inquire"),
    ("user", "person", "human"),
    ("rename", "move"),
    ("issue", "ticket", "bug"),
    ("comment", "reply", "discussion"),
    ("label", "tag"),
    ("note", "memo", "notebook"),
    ("save", "store", "record", "persist"),
    ("error", "failure", "fail"),
)


@lru_cache(maxsize=1)
def _stemmer() -> Callable[[str], str]:
    try:
        import snowballstemmer  # type: ignore[import-untyped]
    except ImportError:  # not installed: strip plural endings only
        return _strip_plural
    english = snowballstemmer.stemmer("english")
    return lru_cache(maxsize=4096)(english.stemWord)


def _strip_plural(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def stem(word: str) -> str:
    """The Snowball English stem of a lower-case ``word`` (``running`` → ``run``)."""
    return _stemmer()(word)


def tokenize(text: str) -> list[str]:
    """Stemmed lower-case words of ``text`` for ranking.

    Splits camelCase and anything but ASCII letters and digits (``exec_command`` →
    ``exec``, ``command``), drops one-letter words and English stop words, and stems the
    rest (``files`` → ``file``, ``changed`` → ``chang``).
    """
    words = _WORD_RE.findall(_CAMEL_RE.sub(" ", text).lower())
    return [stem(w) for w in words if len(w) >= 2 and w not in _STOPWORDS]


@lru_cache(maxsize=1)
def _synonym_index() -> dict[str, tuple[str, ...]]:
    index: dict[str, set[str]] = {}
    for group in SYNONYMS:
        stems = {stem(w) for w in group}
        for s in stems:
            index.setdefault(s, set()).update(stems - {s})
    return {k: tuple(sorted(v)) for k, v in index.items()}


@dataclass(frozen=True, slots=True)
class Document:
    """One tool as ranked: its name and the text of each field (``params``: the words of
    its input schema, i.e. argument names, their descriptions and enum values)."""

    name: str
    text: str
    tags: tuple[str, ...] = ()
    hints: tuple[str, ...] = ()
    params: str = ""


@dataclass(frozen=True, slots=True)
class Scored:
    """A document's position in a ranking: its index in the input and its score."""

    index: int
    score: float


@dataclass(frozen=True, slots=True)
class _Fields:
    counts: dict[str, Counter[str]]
    length: float


@lru_cache(maxsize=4096)
def _fields(doc: Document) -> _Fields:
    """The weighted word counts of ``doc`` (cached: the catalog rarely changes)."""
    counts = {
        "name": Counter(tokenize(doc.name)),
        "hints": Counter(t for hint in doc.hints for t in tokenize(hint)),
        "tags": Counter(t for tag in doc.tags for t in tokenize(tag)),
        "text": Counter(tokenize(doc.text)),
        "params": Counter(tokenize(doc.params)),
    }
    length = sum(FIELD_WEIGHTS[f] * sum(c.values()) for f, c in counts.items())
    return _Fields(counts, length)


def _tf(fields: _Fields, term: str) -> float:
    tf = 0.0
    for field, counts in fields.counts.items():
        weight = FIELD_WEIGHTS[field]
        tf += weight * counts.get(term, 0)
        if len(term) >= 4:
            tf += (
                PREFIX_WEIGHT
                * weight
                * sum(c for word, c in counts.items() if word != term and word.startswith(term))
            )
    return tf


def _expanded(terms: Iterable[str]) -> dict[str, float]:
    """Query terms with their weights: each term 1.0, each synonym of one 0.5."""
    weights: dict[str, float] = {}
    synonyms = _synonym_index()
    for term in terms:
        weights[term] = 1.0
    for term in list(weights):
        for other in synonyms.get(term, ()):
            weights.setdefault(other, SYNONYM_WEIGHT)
    return weights


def rank(docs: Sequence[Document], query: str) -> list[Scored]:
    """Rank ``docs`` for ``query``, best first; documents scoring 0 are left out.

    The BM25F score of the module docstring, summed over the query's words and their
    synonyms (each synonym weighted :data:`SYNONYM_WEIGHT`), with ``idf = ln(1 + (N − df +
    0.5) / (df + 0.5))`` over the ``N`` documents given, plus :data:`EXACT_NAME_BONUS` when
    the whole query is a tool's name (spaces read as ``_``) and :data:`NAME_CONTAINS_BONUS`
    when it names the tool within the sentence. A query holding an address (``://``) also
    counts the word "url". Ties keep the input order. An empty query ranks nothing.
    """
    words_of_query = tokenize(query)
    if "://" in query:  # an address in the task: a web page is what it is about
        words_of_query.append(stem("url"))
    terms = _expanded(dict.fromkeys(words_of_query))
    words = query.lower().split()
    phrase = "_".join(words)
    if not terms and not phrase:
        return []
    fields = [_fields(d) for d in docs]
    n_docs = len(fields)
    avg_len = (sum(f.length for f in fields) / n_docs) if n_docs else 1.0
    avg_len = avg_len or 1.0
    tfs = {term: [_tf(f, term) for f in fields] for term in terms}
    idfs = {}
    for term, column in tfs.items():
        df = sum(1 for x in column if x > 0)
        idfs[term] = math.log(1 + (n_docs - df + 0.5) / (df + 0.5))
    mentioned = {w.strip("`'\".,:;()") for w in words}
    out: list[Scored] = []
    for index, (doc, f) in enumerate(zip(docs, fields, strict=True)):
        score = 0.0
        norm = BM25_K1 * (1 - BM25_B + BM25_B * f.length / avg_len)
        for term, weight in terms.items():
            tf = tfs[term][index]
            if tf > 0:
                score += weight * idfs[term] * tf * (BM25_K1 + 1) / (tf + norm)
        name = doc.name.lower()
        if phrase and name == phrase:
            score += EXACT_NAME_BONUS
        elif name in mentioned or (len(phrase) >= 3 and phrase in name):
            score += NAME_CONTAINS_BONUS
        if score > 0:
            out.append(Scored(index, round(score, 4)))
    out.sort(key=lambda s: -s.score)
    return out
