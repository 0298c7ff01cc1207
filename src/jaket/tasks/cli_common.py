"""What every ``jaket finetune|evaluate TASK`` run shares below the registry: the job a run's
settings describe (:func:`task_job`: defaults < file < ``--set`` < the given values, completed by
:func:`resolve_job`), the variants it compares (:func:`chosen_variants`) and the way a command ends
(:func:`finish`: the table, where the report is, ``--json``'s summary, the fine-tuned model's folder).

Shared base: nothing here imports the registry, a task package or the command line (a layering test
holds it); a task's defaults (its spec's ``default_variants`` / ``finetune_variant``) are passed in.
A bad job is a ``ValueError`` naming the key where it was given; nothing here exits.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable, Mapping
from pathlib import Path

from jaket.errors import UsageError
from jaket.model.config import ModelFolderError, encoder_shape
from jaket.output import human_stream, print_json
from jaket.paths import default_model_path
from jaket.tasks.config import load_task_config
from jaket.tasks.settings import variant as variant_spec
from jaket.tasks.spec import ALL_VARIANTS

NEEDS_MODEL = "variant 'jaket' needs --model DIR (a jointly pre-trained model folder; model= in Python)"


def csv_list(text: str) -> tuple[str, ...]:
    """A comma list flag: ``"a, b,"`` -> ``("a", "b")``."""
    return tuple(x.strip() for x in text.split(",") if x.strip())


def float_list(text: str) -> tuple[float, ...]:
    """A comma list of numbers (``argparse``'s error names the flag when one is not a number)."""
    try:
        return tuple(float(x) for x in csv_list(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a comma list of numbers, got {text!r}") from None


def add_sense_kg_argument(parser: argparse.ArgumentParser) -> None:
    """``--kg DIR``: the KG whose entities are word senses (``jaket predict word-in-context``)."""
    parser.add_argument("--kg", type=Path, metavar="DIR", help="the sense KG (default: WordNet 3.0)")


def chosen_variants(evaluate: bool, pretrained: Path | None, variants: tuple[str, ...] | None = None,
                    variant: str | None = None, *, default_variants: tuple[str, ...] = ALL_VARIANTS,
                    finetune_variant: str = "lm+g+m") -> tuple[str, ...]:
    """The variants a run compares: ``evaluate``'s ``variants`` (default: the task's
    ``default_variants`` that apply: ``jaket`` only with a pre-trained model), ``finetune``'s one
    ``variant`` (default: ``jaket`` with a pre-trained model, else the task's ``finetune_variant``).
    ``jaket`` asked for without a pre-trained model is a ``UsageError`` (a ``ValueError``)."""
    if evaluate:
        chosen = variants or default_variants
        if pretrained is None:
            if variants and "jaket" in variants:
                raise UsageError(NEEDS_MODEL)
            chosen = tuple(v for v in chosen if v != "jaket")
        return tuple(chosen)
    variant = variant or ("jaket" if pretrained is not None else finetune_variant)
    if variant_spec(variant).pretrained and pretrained is None:
        raise UsageError(NEEDS_MODEL)
    return (variant,)


def resolve_job(job, evaluate: bool, *, default_variants: tuple[str, ...] = ALL_VARIANTS,
                finetune_variant: str = "lm+g+m"):
    """A typed job with what it left empty filled: the variants of :func:`chosen_variants`, seeds
    0-4 to evaluate and 0 to fine-tune. ``ValueError``: ``jaket`` without a pre-trained model, or
    several variants to fine-tune. A job class with a ``resolved()`` method is returned as that method
    makes it (the defaults it left None set). A job that compares no variants (sense linking's) is
    complete as it is."""
    if not hasattr(job, "variants"):
        return job
    if "jaket" in job.variants and job.pretrained is None:
        raise UsageError(NEEDS_MODEL)
    if not evaluate and len(job.variants) > 1:
        raise UsageError(f"finetune runs one variant, got variants {list(job.variants)}; use jaket evaluate "
                         "to compare several")
    variants = chosen_variants(evaluate, job.pretrained, tuple(job.variants) or None,
                               job.variants[0] if job.variants and not evaluate else None,
                               default_variants=default_variants, finetune_variant=finetune_variant)
    seeds = job.seeds or ((0, 1, 2, 3, 4) if evaluate else (0,))
    job = dataclasses.replace(job, variants=tuple(variants), seeds=tuple(seeds))
    _check_lm1_layers(job)
    resolved = getattr(job, "resolved", None)  # defaults that depend on other keys (link prediction's mode)
    return resolved() if callable(resolved) else job


def _check_lm1_layers(job) -> None:
    """``lm1_layers`` past the base encoder's depth, refused before any data is read: the encoder's
    ``config.json`` gives its layers (:func:`~jaket.model.config.encoder_shape`; a folder it cannot read is
    left to the encoder's loading)."""
    k = getattr(job, "lm1_layers", None)
    splits = [v for v in job.variants if variant_spec(v).has_km and variant_spec(v).reads_text
              and not variant_spec(v).pretrained]  # lm+g, lm+g+m: LM1 of the base encoder
    if k is None or not splits:
        return
    encoder = Path(job.encoder) if getattr(job, "encoder", None) is not None else default_model_path()
    try:
        _, layers = encoder_shape(encoder)
    except ModelFolderError:
        return  # the encoder's own loading names what is wrong with it
    if k > layers:
        raise UsageError(f"lm1_layers={k} outside [0, {layers}] for the {layers}-layer encoder {encoder} "
                         f"(LM1 of {', '.join(splits)})")


def task_job(job_type: type, evaluate: bool, config: Path | str | None = None, overrides: list[str] | None = None,
             values: dict | None = None, *, what: str = "task", origin: Callable[[str, object], str] | None = None,
             default_variants: tuple[str, ...] = ALL_VARIANTS, finetune_variant: str = "lm+g+m"):
    """A task's typed job from its defaults < the YAML file ``config`` < ``overrides``
    (``"a.b=value"``) < ``values`` (``{"a.b": value}``, used as given; ``origin(key, value)`` says
    where each was given, as the caller wrote it: ``--epochs 0`` or ``epochs=0``), checked and
    completed (:func:`resolve_job`): the command line's and :func:`jaket.pipelines.pipeline`'s."""
    job = load_task_config(job_type, config, overrides, values, what=what, origin=origin)
    return resolve_job(job, evaluate, default_variants=default_variants, finetune_variant=finetune_variant)


def finish(json_output: bool, results: Mapping, table: str, out: Path, task: str | None = None,
           usage: str | None = None, json_summary: dict | None = None) -> int:
    """Print the results table and where the report is (and, when the run saved one, where the
    fine-tuned model is and how to use it: ``jaket predict TASK --finetuned DIR USAGE``); with
    ``--json`` those go to stderr and stdout holds only metrics.json's summary (or the task's
    ``json_summary``) as strict JSON (:func:`jaket.output.print_json`)."""
    human = human_stream(json_output)
    print(table, file=human)
    print(f"report: {out / 'report.md'}  metrics: {out / 'metrics.json'}", file=human)
    if json_output:
        print_json(json_summary if json_summary is not None else results.get("summary", {}))
    if task is not None and "saved_model" in results:
        inputs = f" {usage}" if usage else ""
        print(f"fine-tuned model: {results['saved_model']}  (jaket predict {task} --finetuned "
              f"{results['saved_model']}{inputs})", file=human_stream(json_output))
    return 0
