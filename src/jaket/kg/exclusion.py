"""Keeping a benchmark's sentences out of a pre-training corpus (``data.exclude_texts``).

A model evaluated on a text benchmark must not have pre-trained on that benchmark's sentences.
WiC is the case in point: about 70% of its sentences are verbatim WordNet usage examples, the
very texts of the WordNet corpus, each linked to the right synset. :func:`exclude_texts` drops
every corpus text whose normalised form (:func:`normalise_text`: case folded, every character
that is not a letter or a digit removed, so punctuation, spacing and tokenisation differences
such as ``man 's`` / ``man's`` vanish) equals the normalised form of a sentence of the given files.

Files (:func:`read_exclusion_texts`), recognised by their shape:

* WiC's ``*.data.txt``: ``word<TAB>POS<TAB>i-j<TAB>sentence1<TAB>sentence2`` (both sentences);
* the unified word-sense-disambiguation framework's ``*.xml`` (Raganato et al., 2017): every
  ``<sentence>``, its tokens joined by spaces (:func:`jaket.kg.wsd_xml.read_wsd_xml`);
* JSONL: every string under ``text``, ``text1``, ``text2``, ``sentence``, ``sentence1``, ``sentence2``
  or ``question`` of each object (our own word-in-context format among them);
* anything else: one sentence per non-empty line.

A file with a tab on any line is read as WiC's, and then every line must have WiC's five columns:
a malformed line is an error naming it, never a reason to read the whole file another way (its
sentences, read as whole lines with their tabs, would match nothing and exclude nothing).
"""

from __future__ import annotations

import re
from pathlib import Path

from jaket.kg.corpus import MentionCorpus
from jaket.kg.errors import KGFormatError, Problem
from jaket.kg.readers import json_objects, read_text_file
from jaket.kg.wsd_xml import read_wsd_xml

#: JSONL fields whose strings are sentences to exclude
TEXT_FIELDS = ("text", "text1", "text2", "sentence", "sentence1", "sentence2", "question")
_NOT_ALNUM = re.compile(r"[\W_]+", re.UNICODE)


def normalise_text(text: str) -> str:
    """The comparison key of a sentence: case folded, only letters and digits kept."""
    return _NOT_ALNUM.sub("", text.casefold())


def _wic_columns(line: str) -> bool:
    parts = line.split("\t")
    return len(parts) == 5 and re.fullmatch(r"\d+-\d+", parts[2].strip()) is not None


def read_exclusion_texts(path: str | Path) -> list[str]:
    """The sentences of one file (module docstring); a missing file, a malformed JSONL line or
    malformed XML raises :class:`KGFormatError` naming ``path:line``."""
    path = Path(path)
    if path.suffix.lower() == ".xml":
        if not path.is_file():
            raise KGFormatError([Problem(str(path), None, "no such file (data.exclude_texts)")])
        return [sentence.text for sentence in read_wsd_xml(path)]
    content = read_text_file(path, "data.exclude_texts")
    if not content:
        return []
    if path.suffix == ".jsonl" or content[0][1].lstrip().startswith("{"):
        texts, problems = [], []
        for n, row in json_objects(path, content, problems):
            found = [row[k] for k in TEXT_FIELDS if isinstance(row.get(k), str)]
            if not found:
                problems.append(Problem(str(path), n, f"no text field (one of {', '.join(TEXT_FIELDS)})"))
            texts.extend(found)
        if problems:
            raise KGFormatError(problems)
        return texts
    if any("\t" in line for _, line in content):  # WiC's columns: every line must have them
        problems = [Problem(str(path), n, f"expected WiC's 5 tab-separated fields (lemma, POS, i-j, sentence1, "
                                          f"sentence2), got {len(line.split(chr(9)))}"
                            + ("" if len(line.split("\t")) != 5 else " with a third field that is not i-j"))
                    for n, line in content if not _wic_columns(line)]
        if problems:
            raise KGFormatError(problems)
        return [s for _, line in content for s in line.split("\t")[3:5]]
    return [line.strip() for _, line in content]


def exclude_texts(corpus: MentionCorpus, files: list[str | Path]) -> tuple[MentionCorpus, dict]:
    """``(kept, report)``: ``corpus`` without every text matching a sentence of ``files`` (module
    docstring). The report counts, per file, the sentences read and those found in the corpus,
    and overall the texts and mentions dropped and the matches left after dropping (0 by
    construction, recomputed from the kept corpus as a check)."""
    keys: set[str] = set()
    per_file = []
    corpus_keys = [normalise_text(t) for t in corpus.texts]
    present = set(corpus_keys)
    for file in files:
        sentences = read_exclusion_texts(file)
        file_keys = {normalise_text(s) for s in sentences} - {""}
        per_file.append({"file": str(file), "sentences": len(sentences), "distinct": len(file_keys),
                         "found_in_corpus": len(file_keys & present)})
        keys |= file_keys
    keep = [i for i, k in enumerate(corpus_keys) if k not in keys]
    kept = corpus.subset(keep)
    dropped = len(corpus) - len(kept)
    report = {"files": per_file, "distinct_sentences": len(keys), "corpus_texts": len(corpus),
              "texts_dropped": dropped, "mentions_dropped": corpus.num_mentions - kept.num_mentions,
              "matches_remaining": sum(normalise_text(t) in keys for t in kept.texts)}
    return kept, report
