"""The XML of the unified word-sense-disambiguation framework (Raganato, Camacho-Collados and
Navigli, EACL 2017): its sentences, their tokens and the tokens to disambiguate.

The format::

    <corpus lang="en" source="semeval2007">
      <text id="d000">
        <sentence id="d000.s000">
          <wf lemma="you" pos="PRON">Your</wf>
          <instance id="d000.s000.t000" lemma="refer" pos="VERB">referred</instance>
          ...

A ``wf`` is a plain word, an ``instance`` a word to disambiguate (its ``id`` names it in the key
file; ``pos`` is one of NOUN, VERB, ADJ, ADV). A sentence's text is its tokens joined by single
spaces (a token may itself hold spaces: ``pointed out``), so each token has a character span.

Read here, in the KG layer, because two readers need it: the word-sense task
(:mod:`jaket.tasks.word_sense.data`, which adds the key file and the senses) and the exclusion of a
benchmark's sentences from pre-training (:mod:`jaket.kg.exclusion`). Every problem is one
``path:line: message`` (:class:`jaket.kg.errors.KGFormatError`): malformed XML, an element out of
place, an instance without its id, lemma or part of speech, an id given twice.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from xml.parsers import expat

from jaket.jsonio import quote
from jaket.kg.errors import KGFormatError, Problem

#: the parts of speech of the framework's instances
INSTANCE_POS = ("NOUN", "VERB", "ADJ", "ADV")
_TOKENS = ("wf", "instance")
#: where each element may appear (its parent)
_PARENT = {"corpus": None, "text": "corpus", "sentence": "text", "wf": "sentence", "instance": "sentence"}


@dataclass(frozen=True)
class XmlToken:
    """One ``wf`` or ``instance``: its text, lemma, part of speech, the instance id (None for a
    ``wf``) and the line it starts on."""

    text: str
    lemma: str
    pos: str
    instance: str | None
    line: int


@dataclass
class XmlSentence:
    """A ``sentence``: its id, the line it starts on and its tokens."""

    id: str
    line: int
    tokens: list[XmlToken] = field(default_factory=list)

    @property
    def text(self) -> str:
        """The tokens joined by single spaces."""
        return " ".join(t.text for t in self.tokens)

    def spans(self) -> list[tuple[int, int]]:
        """The ``[start, end)`` character span of each token in :attr:`text`."""
        out, start = [], 0
        for token in self.tokens:
            out.append((start, start + len(token.text)))
            start += len(token.text) + 1
        return out


class _Reader:
    """An expat handler building the sentences (expat knows the line of every element)."""

    def __init__(self, path: Path):
        self.path = path
        self.parser = expat.ParserCreate()
        self.parser.StartElementHandler = self.start
        self.parser.EndElementHandler = self.end
        self.parser.CharacterDataHandler = self.characters
        self.sentences: list[XmlSentence] = []
        self.problems: list[Problem] = []
        self.stack: list[str] = []
        self.sentence: XmlSentence | None = None  # the sentence open now (None outside one, or a misplaced one)
        self.token: dict | None = None
        self.instance_lines: dict[str, int] = {}

    def problem(self, message: str, line: int | None = None) -> None:
        self.problems.append(Problem(str(self.path), line or self.parser.CurrentLineNumber, message))

    def start(self, name: str, attributes: dict[str, str]) -> None:
        parent = self.stack[-1] if self.stack else None
        self.stack.append(name)
        if parent in _TOKENS:
            self.problem(f"<{name}> inside <{parent}>: a token holds text only")
        elif parent is None and name != "corpus":
            self.problem(f"the root element is <{name}>, expected <corpus>")
        elif name not in _PARENT:
            return  # an element the framework does not use: ignored
        elif _PARENT[name] != parent:
            self.problem(f"<{name}> inside <{parent}>, expected inside <{_PARENT[name]}>")
        elif name == "sentence":
            self.sentence = XmlSentence(attributes.get("id", f"line {self.parser.CurrentLineNumber}"),
                                        self.parser.CurrentLineNumber)
            self.sentences.append(self.sentence)
        elif name in _TOKENS and self.sentence is not None:
            self.token = {"name": name, "attributes": attributes, "text": [], "line": self.parser.CurrentLineNumber}

    def characters(self, data: str) -> None:
        if self.token is not None:
            self.token["text"].append(data)

    def end(self, name: str) -> None:
        self.stack.pop()
        if name in _TOKENS and self.token is not None and self.token["name"] == name:
            token, self.token = self.token, None
            self._add(token)
        elif name == "sentence":
            self.sentence = None

    def _add(self, token: dict) -> None:
        attributes, line = token["attributes"], token["line"]
        text = " ".join("".join(token["text"]).split())
        if not text:
            self.problem(f"empty <{token['name']}>", line)
            return
        instance = None
        if token["name"] == "instance":
            missing = [k for k in ("id", "lemma", "pos") if not attributes.get(k, "").strip()]
            if missing:
                self.problem(f"<instance> without {', '.join(missing)}", line)
                return
            instance = attributes["id"].strip()
            if attributes["pos"] not in INSTANCE_POS:
                self.problem(f"<instance> {instance}: part of speech {quote(attributes['pos'])} is not one of "
                             f"{', '.join(INSTANCE_POS)}", line)
                return
            if instance in self.instance_lines:
                self.problem(f"instance id {instance} given twice (first at line {self.instance_lines[instance]})",
                             line)
                return
            self.instance_lines[instance] = line
        self.sentence.tokens.append(XmlToken(text, attributes.get("lemma", ""), attributes.get("pos", ""),
                                             instance, line))


def read_wsd_xml(path: str | Path) -> list[XmlSentence]:
    """The sentences of a framework ``*.data.xml`` (module docstring); :class:`KGFormatError` with
    one ``path:line: message`` per problem (a malformed document stops at its first error)."""
    path = Path(path)
    reader = _Reader(path)
    try:
        with path.open("rb") as handle:
            reader.parser.ParseFile(handle)
    except FileNotFoundError:
        raise KGFormatError([Problem(str(path), None, "no such file")]) from None
    except OSError as error:
        raise KGFormatError([Problem(str(path), None, f"cannot read: {error.strerror or error}")]) from None
    except expat.ExpatError as error:
        reader.problems.append(Problem(str(path), error.lineno, f"malformed XML: {expat.ErrorString(error.code)} "
                                                                f"(column {error.offset + 1})"))
    if reader.problems:
        raise KGFormatError(reader.problems)
    return reader.sentences

