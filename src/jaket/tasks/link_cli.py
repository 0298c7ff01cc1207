"""``jaket link``: link the entity mentions of texts to a KG and write the corpus format.

Without ``--model`` the gazetteer links them (:mod:`jaket.kg.linking`: the KG's names and aliases,
longest match, a shared name resolved by the overlap of the context with the descriptions). With
``--model DIR`` (a pre-trained jaket folder) the gazetteer only proposes the candidates, and
the model ranks them from the context (:mod:`jaket.senses.linker`), on any KG with
descriptions, one the model never saw included. The default scorer, ``text+kg``, is the best measured
one (docs/results.md: WordNet WSD): the mention as the encoder reads it against each candidate's
names, aliases, description and usage examples read as a sentence, plus the mean of its KG
neighbours'; ``--scorer head`` is pre-training's masked-entity head against the descriptions
(task 4 against E^context, Eq. 7). Each mention then records its probability (``score``), its
``margin`` over the runner-up and its ``candidates``; ``--min-confidence P`` leaves mentions under
P unlinked (listed under ``unlinked``, counted in the summary). A ``.jsonl`` input may give the
spans to link, with their lemma and part of speech (``"targets"``; read with ``--model``).
``--precision`` sets the model's passes as every command's does (default fp32; ``auto``: bf16 where the
device computes it natively, :func:`jaket.model.device.choose_precision`); the summary records it.

**Usage examples** (:func:`kg_usage_examples`): a KG's usage examples are the texts of its own corpus
(``DIR/corpus.jsonl``; a WordNet KG's corpus is WordNet's usage examples, each linked to its synset):
an entity's are the corpus texts that mention it. The ``text+kg`` scorer reads them with each
candidate's text, as word-sense disambiguation does; a corpus text that is one of the texts being
linked is left out (counted: ``usage_examples_dropped``), so no text is evidence for itself.
``--no-usage-examples`` reads names, aliases and descriptions only.

The command lives in the tasks layer because ``--model`` needs the model (loaded when asked for,
so ``jaket --help`` stays light).
"""

from __future__ import annotations

import argparse
import logging
import sys
from dataclasses import asdict
from pathlib import Path

from jaket.errors import InputError, UsageError
from jaket.flags import (add_device_argument, add_precision_argument, deprecated_alias, non_negative_float,
                         positive_int, probability)
from jaket.kg.io import load_kg
from jaket.kg.linking import EntityLinker, LinkStats, read_texts, write_corpus
from jaket.kg.parsing import CORPUS
from jaket.kg.readers import refuse_empty
from jaket.output import check_output_file, print_json

log = logging.getLogger(__name__)

#: the flags that only mean something with --model, with their defaults (argparse's default is None,
#: so that a flag given without --model is refused even when it names the default)
_MODEL_FLAGS = {"min_confidence": 0.0, "max_length": 128, "batch_size": 64, "device": None, "precision": "fp32",
                "scorer": None, "neighbour_weight": 1.0, "usage_examples": True}
#: the scorers of --scorer; the default (None above) is ContextLinker's, DEFAULT_SCORER (loaded with the model)
_SCORERS = ("text+kg", "head")
#: of those, the flags of the text+kg scorer alone
_TEXT_KG_FLAGS = ("neighbour_weight", "usage_examples")


def _flag(key: str) -> str:
    return "--no-usage-examples" if key == "usage_examples" else f"--{key.replace('_', '-')}"


def _model_options(args: argparse.Namespace) -> None:
    """Refuse the --model flags given without --model (and text+kg's given with --scorer head); then
    fill in the defaults of those not given."""
    given = [key for key in _MODEL_FLAGS if getattr(args, key) is not None]
    if args.model is None:
        if given:
            raise UsageError(f"{', '.join(map(_flag, given))}: only with --model (the gazetteer alone has no "
                             f"probabilities)")
    elif args.scorer == "head" and any(key in given for key in _TEXT_KG_FLAGS):
        flags = ", ".join(_flag(k) for k in _TEXT_KG_FLAGS if k in given)
        raise UsageError(f"{flags}: only with --scorer text+kg (the head reads no neighbours or usage examples)")
    for key, default in _MODEL_FLAGS.items():
        if getattr(args, key) is None:
            setattr(args, key, default)


def _link_command(args: argparse.Namespace) -> int:
    if Path(args.out).is_dir():
        raise UsageError(f"--out {args.out}: is a folder; name the corpus file to write, e.g. "
                         f"{Path(args.out) / 'corpus.jsonl'}")
    # the output rule of every command; a KG's corpus.jsonl is what `jaket link` is for
    check_output_file(args.out, args.overwrite, inputs=[args.texts, args.kg, args.model],
                      replaceable=[Path(args.kg) / CORPUS])
    refuse_empty(Path(args.texts), "--texts", "link")
    _model_options(args)
    if args.model is not None and not Path(args.model).is_dir():
        raise InputError(f"--model {args.model}: no such folder (a pre-trained jaket model: config.json, "
                         f"jaket.safetensors, encoder/; `jaket pretrain` writes one under OUT/model)")
    kg = load_kg(args.kg)  # errors (KGFormatError: path:line) are reported by jaket.cli
    inputs = read_texts(args.texts, targets=args.model is not None)
    if inputs.ignored_targets:
        log.warning("--texts %s: %d record(s) give 'targets', which only --model reads; the gazetteer finds "
                    "its own mentions in them", args.texts, inputs.ignored_targets)
    linker = EntityLinker.from_kg(kg, min_length=args.min_length, case_sensitive=args.case_sensitive,
                                  ignore_case=args.ignore_case, max_ambiguity=args.max_ambiguity,
                                  inflections=not args.exact_forms,
                                  context_window=args.context_window, short_forms=args.short_forms)
    if args.model is not None:
        return _link_with_model(args, kg, inputs, linker)
    stats = LinkStats()
    corpus = linker.link_texts(inputs.texts, stats, progress=True)
    out = write_corpus(corpus, args.out, kg)
    summary = {"kg": str(args.kg), "input": str(args.texts), "output": str(out),
               **asdict(stats), "blank_lines_skipped": inputs.blank_lines,
               "rules": asdict(linker.rules), "gazetteer": asdict(linker.gazetteer_stats)}
    print_json(summary)
    print(f"{out}: {stats.mentions:,} mentions in {stats.linked_texts:,} of {stats.texts:,} texts "
          f"({stats.unlinked_texts:,} without a mention, {stats.ambiguous_resolved:,} ambiguous "
          f"mentions resolved, {stats.too_ambiguous:,} too ambiguous to link, "
          f"{inputs.blank_lines:,} blank lines skipped)", file=sys.stderr)
    return 0


def kg_usage_examples(kg_dir: str | Path, kg, linked_texts: list[str], limit: int
                      ) -> tuple[dict[int, tuple[str, ...]], dict]:
    """The usage examples of ``kg_dir``'s entities (module docstring): entity -> the texts of its
    corpus that mention it, in corpus order, without those that are one of ``linked_texts`` (as
    :func:`jaket.kg.exclusion.normalise_text` compares them); none when the KG has no corpus.
    At most ``limit`` per entity: each example is at least one token, so a sense text read to
    ``limit`` tokens never reaches a later one (the rows are the same as with all of them).
    Returns them and the counts ``usage_examples`` (kept), ``usage_examples_dropped`` (a linked text)."""
    from jaket.kg.exclusion import normalise_text
    from jaket.kg.io import load_corpus

    counts = {"usage_examples": 0, "usage_examples_dropped": 0}
    if not (Path(kg_dir) / CORPUS).exists():  # a folder in its place is an error, as for the loaders
        return {}, counts
    corpus = load_corpus(kg_dir, kg)  # a bad line: KGFormatError (path:line), reported by jaket.cli
    banned = {normalise_text(text) for text in linked_texts}
    found: dict[int, list[str]] = {}
    for text, mentions in zip(corpus.texts, corpus.mentions):
        entities = list(dict.fromkeys(m.entity for m in mentions))
        if not entities:
            continue
        if normalise_text(text) in banned:
            counts["usage_examples_dropped"] += len(entities)
            continue
        for entity in entities:
            if len(found.get(int(entity), ())) < limit:
                found.setdefault(int(entity), []).append(text)
    counts["usage_examples"] = sum(map(len, found.values()))
    return {e: tuple(texts) for e, texts in found.items()}, counts


def _link_with_model(args: argparse.Namespace, kg, inputs, gazetteer: EntityLinker) -> int:
    """``jaket link --model``: the gazetteer's candidates (or the input's targets) ranked by the
    pre-trained model (:class:`jaket.senses.linker.ContextLinker`: ``--scorer``, by default
    the linker's own, text+kg), its passes at ``--precision``."""
    from jaket.senses.linker import DEFAULT_SCORER, ContextLinker, write_linked_corpus
    from jaket.senses.texts import SenseTexts

    args.scorer = args.scorer or DEFAULT_SCORER  # the class's default, in one place
    usage, usage_counts = {}, {}
    if args.scorer == "text+kg" and args.usage_examples:
        usage, usage_counts = kg_usage_examples(args.kg, kg, inputs.texts, limit=SenseTexts({}).max_length)
    scorer = ContextLinker.from_pretrained(args.model, kg, device=args.device, gazetteer=gazetteer,
                                           batch_size=args.batch_size, max_length=args.max_length,
                                           scorer=args.scorer, texts=SenseTexts(usage, args.neighbour_weight),
                                           precision=args.precision)
    targets = inputs.targets if any(t is not None for t in inputs.targets) else None
    linked = scorer.link(inputs.texts, targets=targets, min_confidence=args.min_confidence, progress=True)
    out = write_linked_corpus(linked, args.out, kg)
    counts = scorer.stats
    stats = counts.gazetteer
    summary = {"kg": str(args.kg), "input": str(args.texts), "output": str(out),
               **asdict(stats), "blank_lines_skipped": inputs.blank_lines,
               "rules": asdict(gazetteer.rules), "gazetteer": asdict(gazetteer.gazetteer_stats),
               "model": {"path": str(args.model), "device": str(scorer.device), "precision": scorer.precision,
                         "min_confidence": args.min_confidence,
                         "max_length": args.max_length, "scorer": args.scorer,
                         **({"neighbour_weight": args.neighbour_weight, **usage_counts}
                            if args.scorer == "text+kg" else {}),
                         **{k: v for k, v in counts.as_dict().items() if k != "gazetteer"}}}
    print_json(summary)
    print(f"{out}: {stats.mentions:,} mentions in {stats.linked_texts:,} of {stats.texts:,} texts "
          f"({stats.unlinked_texts:,} without a mention; {counts.scored:,} ambiguous mentions ranked by the "
          f"model, {counts.below_confidence:,} left unlinked below --min-confidence {args.min_confidence:g}, "
          f"{counts.unreadable:,} past --max-length {args.max_length} tokens left unlinked, "
          f"{stats.too_ambiguous:,} too ambiguous to link, {inputs.blank_lines:,} blank lines skipped)",
          file=sys.stderr)
    if counts.scored == 0:  # the model ranked nothing: the file is what the gazetteer alone writes
        log.warning("--model %s ranked no mention: no mention of %s had more than one candidate entity (every "
                    "name or alias found names one entity of %s), so %s is what `jaket link` without --model "
                    "writes; --model matters on a KG whose names are shared by several entities", args.model,
                    args.texts, args.kg, out)
    return 0


def _forms(value: str) -> tuple[str, ...]:
    """``--short-forms Go,C,JS``: the names / aliases, spaces around each removed."""
    return tuple(form.strip() for form in value.split(",") if form.strip())



def _add_model_arguments(link: argparse.ArgumentParser) -> None:
    """The flags of ``jaket link --model``."""
    model = link.add_argument_group("ranking by a pre-trained model (--model)")
    model.add_argument("--model", metavar="DIR", default=None,
                       help="a pre-trained jaket model folder (`jaket pretrain`'s OUT/model): it ranks each "
                            "mention's candidates from the context (--scorer; works on a KG the model never "
                            "saw); each link records score, margin and candidates")
    model.add_argument("--scorer", choices=_SCORERS, default=None,
                       help="how the candidates are ranked: 'text+kg' (default, the best measured: "
                            "docs/results.md), the mention as the encoder reads it against each candidate's "
                            "names, aliases, description and usage examples read as a sentence plus the mean of "
                            "its KG neighbours'; 'head', pre-training's masked-entity head against E^context "
                            "(the descriptions)")
    model.add_argument("--neighbour-weight", type=non_negative_float, default=None, metavar="BETA",
                       help="with --scorer text+kg: the weight of the KG neighbours' mean (default 1; "
                            "0: the candidate's own text only)")
    model.add_argument("--no-usage-examples", dest="usage_examples", action="store_const", const=False,
                       default=None,
                       help="with --scorer text+kg: read no usage examples (default: an entity's text holds "
                            "the texts of the KG's corpus.jsonl that mention it, as word-sense disambiguation "
                            "reads WordNet's; none that is one of --texts)")
    model.add_argument("--min-confidence", type=probability, default=None, metavar="P",
                       help="leave mentions whose probability is below P unlinked (listed under 'unlinked', "
                            "counted in the summary; default 0: link every mention)")
    model.add_argument("--max-length", type=positive_int, default=None, metavar="TOKENS",
                       help="tokens of a text the model reads (default 128); mentions past them are left "
                            "unlinked and counted")
    model.add_argument("--batch-size", type=positive_int, default=None, metavar="N",
                       help="texts (and descriptions) per forward pass (default 64)")
    add_device_argument(model)
    add_precision_argument(model)  # the encoder's passes; with --model only, as --device


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``jaket link``."""
    link = subparsers.add_parser(
        "link", help="link entity mentions in texts with the KG's names and aliases (--model: ranked in context)",
        description="Find the KG's entity names and aliases in texts (longest match first, "
                    "disjoint spans, word boundaries; see jaket.kg.linking) and write the corpus "
                    "format (JSONL). With --model, a pre-trained jaket model ranks each mention's "
                    "candidates from its context (by default the text+kg scorer, which also reads the "
                    "KG's usage examples: the texts of its corpus.jsonl). A JSON summary goes to stdout.")
    link.add_argument("--kg", required=True, metavar="DIR", help="a KG directory")
    texts = link.add_mutually_exclusive_group(required=True)  # required, and its old name counts
    texts.add_argument("--texts", metavar="FILE",
                       help="plain text, one text per line, or .jsonl with a 'text' field (with --model, "
                            "also 'targets': [{start, end, lemma?, pos?}], the spans to link)")
    deprecated_alias(texts, "--text", "--texts")
    link.add_argument("--out", required=True, metavar="FILE", help="the corpus JSONL to write")
    link.add_argument("--overwrite", action="store_true", help="replace an existing --out (refused otherwise)")
    link.add_argument("--min-length", dest="min_length", type=int, default=3, metavar="N",
                      help="do not link names/aliases shorter than N characters (default 3; those left "
                           "out are listed in the summary and a warning)")
    deprecated_alias(link, "--min-name-length", "--min-length")
    link.add_argument("--json", action="store_true", help="print the summary as JSON on stdout, alone (everything else goes to stderr)")
    link.add_argument("--short-forms", type=_forms, default=(), metavar="LIST",
                      help="comma list of names/aliases to link although shorter than --min-length, "
                           "e.g. Go,C,JS")
    case = link.add_mutually_exclusive_group()
    case.add_argument("--case-sensitive", action="store_true",
                      help="match every name and alias with its letter case exactly (default: in any case, "
                           "except that a short or all-capital form keeps its capitals: 'Sat' and 'NASA' "
                           "do not match 'sat' and 'nasa')")
    case.add_argument("--ignore-case", action="store_true",
                      help="match every name and alias in any case, short and all-capital ones too")
    link.add_argument("--max-ambiguity", type=positive_int, default=None, metavar="K",
                      help="leave surface forms naming more than K entities unlinked "
                           "(default: no limit)")
    link.add_argument("--exact-forms", action="store_true",
                      help="match forms only as written: no inflections of a form's last word "
                           "(plurals, -ed, -ing, irregular forms such as sat -> sit)")
    link.add_argument("--context-window", type=int, default=50, metavar="TOKENS",
                      help="tokens on each side of a mention used to disambiguate it (default 50; "
                           "the gazetteer's rule, not --model's)")
    _add_model_arguments(link)
    link.set_defaults(func=_link_command)
