"""JAKET pre-training: the loop, the memory schedule, checkpoints; on Hugging Face Accelerate.

One optimisation step (paper, "Pre-training"; docs/pretraining.md walks through it):

1. if the schedule says so (Eq. 11, :func:`jaket.model.memory.refresh_steps`), refresh the entity
   context memory with momentum (Eq. 12); the ranks split the entities and the changes are
   all-reduced (:func:`jaket.train.engine.all_reduce_delta`);
2. the micro-step's batch (:mod:`jaket.train.batching`), built ahead by ``data.workers`` worker
   processes or in this one;
3. :class:`jaket.train.objective.PretrainingObjective` (prepared by the engine: placed, under
   DistributedDataParallel when several processes run, autocast for mixed precision) runs the
   model once and computes the four losses; gradients accumulate over
   ``optim.accumulation_steps`` micro-steps through the engine;
4. AdamW step with gradient clipping; the language module's rate warms up then decays linearly,
   the rest decays linearly from its own rate.

Every random draw of micro-step ``p`` (sampling, masking, dropout) comes from generators seeded
with ``(seed, p, rank)``, so a resumed run repeats the uninterrupted one exactly. Losses are read
back from the device only at the logging interval (``log_every``).
"""

from __future__ import annotations

import contextlib
import copy
import functools
import logging
import time
import uuid
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from jaket.atomic import write_json, write_text
from jaket.model.device import machine_description, resolve_device
from jaket.model.jaket import WEIGHTS_FILE, JaketModel
from jaket.model.memory import refresh_steps
from jaket.model.memory_cache import cached_rows
from jaket.output import check_folder_to_replace
from jaket.train.batching import BatchBuilder, StepBatch, batch_loader
from jaket.train.build import PretrainData, build_model, load_kg_and_corpus, prepare_data, tasks_run
from jaket.train.checkpoint import (check_compatible, corpus_signature, kg_signature, load_checkpoint, read_state,
                                   restore_newest, save_checkpoint)
from jaket.train.config import PretrainConfig, dump_config, upgrade_keys
from jaket.train.engine import (all_reduce_delta, all_reduce_sum, any_rank_max, dist_info, finish,
                                make_accelerator)
from jaket.train.evaluation import masked_entity_accuracy
from jaket.train.metrics import LossTally, first_last_tenth, plot_losses, read_metrics, truncate_metrics
from jaket.train.objective import PretrainingObjective, freeze_lm1, freeze_text_side
from jaket.train.optim import build_optimizer, build_scheduler
from jaket.train.recording import RunRecord, SessionClock, flatten
from jaket.train.rundir import (StopSignals, TrainingInterrupted, output_lock, prepare_output,
                                resume_mode)

log = logging.getLogger(__name__)


class Pretrainer:
    """Holds the model, optimiser, schedule and data order; ``run()`` trains and writes outputs.

    ``accelerator``: the run's engine (:func:`jaket.train.engine.make_accelerator`; default: one
    on ``device``). Only rank 0 writes (``out_dir``); every rank trains on its own share of each
    step's data.
    """

    def __init__(self, config: PretrainConfig, model: JaketModel, data: PretrainData, out_dir: str | Path,
                 device: str | torch.device | None = "cpu", accelerator=None):
        self.config = config
        self.accelerator = accelerator or make_accelerator(config, resolve_device(device), out_dir)
        self.device = self.accelerator.device
        self.info = dist_info(self.accelerator)
        self.model = model.to(self.device)
        model.memory.place(self.device)
        self.data = data
        self.out = Path(out_dir)
        #: the tasks with examples (summary.json); without texts the KG tasks only
        self.tasks = tasks_run(data.kg, data.has_texts, config)
        if not data.has_texts:
            frozen = freeze_text_side(model, keep_lm1=config.tasks.description_rows > 0)
            log.info("no texts: %s frozen", ", ".join(frozen))
        if config.optim.freeze_lm1:
            log.info("optim.freeze_lm1: LM1's %d tensors are not trained", freeze_lm1(model))
        self.objective = PretrainingObjective(self.model, config.tasks)
        self.engine = self.accelerator.prepare_model(self.objective)
        o = config.optim
        self.optimizer = build_optimizer(self.model, o.lm_lr, o.km_lr, o.weight_decay, o.betas, o.eps)
        self._stepper = self.accelerator.prepare_optimizer(self.optimizer, device_placement=False)
        warmup = int(round(o.warmup_fraction * config.steps))
        self.scheduler = build_scheduler(self.optimizer, config.steps, warmup)
        m = config.memory
        self.refresh_at = set(refresh_steps(config.steps, m.initial, m.growth, m.every, m.maximum))
        tokens = None
        if config.tasks.description_rows > 0:
            tokens, _ = model.memory.description_tokens(model.language, data.kg,
                                                        model.config.description_max_length)
        self.builder = BatchBuilder(config, data, model.config.fanouts, self.info.rank,
                                    self.info.world_size, tokens)
        self._batches = None  # the loader of a running loop (None: built here, on demand)
        self.step = 0
        self.refresh_count = 0
        self.refresh_seconds = 0.0
        self.train_seconds = 0.0
        #: seconds the loop waited for batches (built here, or not yet ready from the workers)
        self.batch_seconds = 0.0
        self.memory_filled = bool(model.memory.filled)  # True when a filled memory file was given
        self.evaluation_start: dict | None = None
        self.progress = False
        #: called with each micro-step's batch before its forward (a benchmark's hook:
        #: :class:`jaket.bench.pretrain.OnTheFlyDescriptions`); None in training
        self.before_forward: Callable[[StepBatch], None] | None = None
        #: checkpoints of this run carry its id; pruning deletes no other run's (a resume adopts it)
        self.run_id = uuid.uuid4().hex
        self.saved_step: int | None = None
        self.resumed_from: Path | None = None
        self._kg_signature: dict | None = None
        self._corpus_signature: dict | None = None

    # ---------------------------------------------------------------- memory
    @property
    def memory(self):
        return self.model.memory

    def refresh_memory(self) -> dict:
        """Eq. 7, 11-12 with momentum (the first fill replaces); ranks split the rows."""
        start = time.perf_counter()
        memory = self.memory
        before_e = memory.entities.detach().clone() if self.info.active else None
        before_r = memory.relations.detach().clone() if self.info.active else None
        momentum = self.model.config.memory_momentum if self.memory_filled else 0.0

        def refresh() -> dict:
            reader, precision = self.memory_reader()
            with precision:
                return memory.refresh(reader, self.data.kg, batch_size=self.config.memory.batch_size,
                                      max_length=self.model.config.description_max_length,
                                      rank=self.info.rank, world_size=self.info.world_size,
                                      momentum=momentum, progress=self.progress and self.info.is_main)

        if self.memory_filled or self.info.active or not self.config.memory.cache:
            stats = refresh()
        else:  # the first fill depends on LM1's weights, the KG and the window only: made once (#68)
            stats = self._first_fill_from_cache(refresh)
        if self.info.active:
            all_reduce_delta(self.accelerator, memory.entities, before_e)
            all_reduce_delta(self.accelerator, memory.relations, before_r)
        memory.filled = True
        self.refresh_count += 1
        self.memory_filled = True
        seconds = time.perf_counter() - start
        self.refresh_seconds += seconds
        log.log(logging.INFO if self.info.is_main else logging.DEBUG,
                "memory refresh %d before step %d: %d entity rows%s, momentum %.2f, %.1f s",
                self.refresh_count, self.step, stats.get("entities", 0),
                f" on each of {self.info.world_size} ranks" if self.info.active else "", momentum,
                seconds)
        return stats

    def memory_reader(self):
        """``(LM1's reader, the context it runs in)`` for a refresh in the run's precision: under
        bf16, a bf16 copy of the language module (:meth:`SplitLanguageModel.reading_copy`, made
        from the current weights at each refresh), faster than autocast over the fp32 weights;
        otherwise the language module itself under the run's autocast (fp16, or none in fp32)."""
        language = self.model.language
        if self.accelerator.mixed_precision == "bf16":
            return language.reading_copy(torch.bfloat16), contextlib.nullcontext()
        return language, self.accelerator.autocast()

    @property
    def memory_precision(self) -> str:
        """The precision of the refresh's pass (:meth:`memory_reader`), a part of the first fill's
        cache key: ``bf16-weights``, ``fp16`` (autocast) or ``fp32``."""
        return {"bf16": "bf16-weights", "fp16": "fp16"}.get(self.accelerator.mixed_precision, "fp32")

    def _first_fill_from_cache(self, refresh) -> dict:
        """The first fill (momentum 0) through the description-row cache
        (:func:`jaket.model.memory_cache.cached_rows`), keyed by LM1's weights, the KG, the window
        and the pass's precision: a second seed, a resumed run or another command that reads the
        same descriptions through the same weights reads the rows instead of LM1."""
        memory, stats = self.memory, {}

        def compute():
            stats.update(refresh())
            return memory.entities.float(), memory.relations.float()

        entities, relations = cached_rows(self.model.language, self.data.kg, self.model.config.description_max_length,
                                          compute, precision=self.memory_precision)
        if not stats:  # read from the cache
            memory.entities[:] = entities.to(memory.entities.device, memory.entities.dtype)
            memory.relations[:] = relations.to(memory.relations.device, memory.relations.dtype)
            memory.refreshes += 1  # the saved memory.json counts the fill, computed or read
            stats = {"entities": int(entities.shape[0]), "relations": int(relations.shape[0]), "cached": True}
        return stats

    # ---------------------------------------------------------------- data
    def text_indices(self, position: int) -> np.ndarray:
        """This rank's texts for micro-step ``position`` (:func:`text_batch_indices`)."""
        return self.builder.text_indices(position)

    def sample_batch(self, position: int) -> StepBatch:
        """The batch of micro-step ``position`` on this rank (:class:`BatchBuilder`)."""
        return self.builder.sample_batch(position)

    def _next_batch(self, position: int) -> StepBatch:
        began = time.perf_counter()
        batch = next(self._batches) if self._batches is not None else self.sample_batch(position)
        if batch.position != position:
            raise RuntimeError(f"batch of micro-step {batch.position} arrived for {position}")
        self.batch_seconds += time.perf_counter() - began
        return batch

    def data_workers(self) -> int:
        """``data.workers``; by default 2 next to an accelerator, none next to a CPU model (the
        CPU that would build the batches is the one that steps the model)."""
        workers = self.config.data.workers
        return workers if workers is not None else (2 if self.device.type != "cpu" else 0)

    # ---------------------------------------------------------------- one step
    def logged(self, step: int) -> bool:
        """Whether the values of ``step`` (counted from 1) are logged: every ``log_every``-th
        step and the last."""
        return step % self.config.log_every == 0 or step == self.config.steps

    def train_step(self) -> dict[str, float] | None:
        """One optimisation step (``accumulation_steps`` micro-batches) at ``self.step``; the
        values to log, or None when the step is not logged (:meth:`logged`): then nothing is
        read back from the device."""
        cfg = self.config
        if not self.memory_filled or self.step in self.refresh_at:
            self.refresh_memory()
        start = time.perf_counter()
        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        accum = cfg.optim.accumulation_steps
        tally = LossTally(self.device)
        for micro in range(accum):
            position = self.step * accum + micro
            batch = self._next_batch(position)
            if self.before_forward is not None:
                self.before_forward(batch)
            # dropout of this micro-step: its own seed, so resuming needs no RNG history
            torch.manual_seed(int(np.random.default_rng([cfg.seed, position, self.info.rank, 1])
                                  .integers(2**62)))
            with self.accelerator.accumulate(self.engine):
                total, losses, extra = self.engine(batch.to(self.device, non_blocking=True))
                self.accelerator.backward(total)
            tally.add(losses, extra, batch.counts)
        norm = self.accelerator.clip_grad_norm_(
            [p for g in self.optimizer.param_groups for p in g["params"]], cfg.optim.max_grad_norm)
        self._stepper.step()
        self.scheduler.step()
        self.step += 1
        self.train_seconds += time.perf_counter() - start
        if not self.logged(self.step):
            return None
        values = tally.values(functools.partial(all_reduce_sum, self.accelerator))
        values["grad_norm"] = float(norm)
        values["lr_lm"] = self.optimizer.param_groups[0]["lr"]
        values["lr_km"] = self.optimizer.param_groups[2]["lr"]
        return values

    # ---------------------------------------------------------------- checkpoints
    @property
    def kg_signature(self) -> dict:
        if self._kg_signature is None:
            self._kg_signature = kg_signature(self.data.kg)
        return self._kg_signature

    @property
    def corpus_signature(self) -> dict:
        if self._corpus_signature is None:
            self._corpus_signature = corpus_signature(self.data.train, self.data.heldout)
        return self._corpus_signature

    def save(self) -> Path | None:
        """Checkpoint the current step (rank 0; once per step)."""
        if not self.info.is_main:
            return None
        root = self.out / "checkpoints"
        if self.saved_step == self.step:
            return root / f"step-{self.step:07d}"
        memory = {"entities": self.memory.entities, "relations": self.memory.relations}
        state = {"refresh_count": self.refresh_count, "memory_filled": self.memory_filled,
                 "data_position": {"step": self.step,
                                   "micro_steps": self.step * self.config.optim.accumulation_steps,
                                   "texts_consumed": self.step * self.config.text_batch_size
                                   * self.info.world_size * self.config.optim.accumulation_steps
                                   if self.data.has_texts else 0},
                 "refresh_seconds": self.refresh_seconds, "train_seconds": self.train_seconds,
                 "evaluation_start": self.evaluation_start,
                 "config": self.config.model_dump(mode="json"), "kg": self.kg_signature,
                 "corpus": self.corpus_signature}
        path = save_checkpoint(self.out, self.step, self.model, self.optimizer, self.scheduler,
                               memory, state, keep=self.config.keep_checkpoints, run_id=self.run_id,
                               scaler=self.accelerator.scaler)
        self.saved_step = self.step
        log.debug("checkpoint %s", path)
        return path

    def _config_changes(self, meta: dict) -> list[str]:
        saved = meta.get("config")  # written by this version or an earlier one (upgrade_keys)
        saved = flatten(upgrade_keys(copy.deepcopy(saved), "checkpoint") if isinstance(saved, dict) else {})
        now = flatten(self.config.model_dump(mode="json"))
        default = flatten(PretrainConfig().model_dump(mode="json"))
        # a field added since the checkpoint was written, left at its default, changes nothing
        changed = sorted(k for k in saved.keys() | now.keys() if saved.get(k) != now.get(k)
                         and not (k not in saved and now.get(k) == default.get(k)))
        return [f"{k} ({saved.get(k)!r} -> {now.get(k)!r})" for k in changed]

    def _restore(self, path: Path, manifest: dict) -> None:
        """Check ``path`` against this run's KG and model, then load it (see :meth:`resume`)."""
        meta = read_state(path)
        memory_shapes = {"entities": self.memory.entities.shape,
                         "relations": self.memory.relations.shape}
        changes = self._config_changes(meta)
        check_compatible(path, meta, self.model, self.kg_signature, memory_shapes,
                         [c for c in changes if c.startswith("model.")], self.corpus_signature,
                         [c for c in changes if c.startswith("data.")])
        meta, memory = load_checkpoint(path, self.model, self.optimizer, self.scheduler,
                                       self.accelerator.scaler)
        with torch.no_grad():
            self.memory.entities.copy_(memory["entities"])
            self.memory.relations.copy_(memory["relations"])
        self.memory.filled = meta["memory_filled"]  # fields typed by read_state
        self.step = meta["step"]
        self.refresh_count = meta["refresh_count"]
        self.memory_filled = meta["memory_filled"]
        self.refresh_seconds = meta["refresh_seconds"]
        self.train_seconds = meta["train_seconds"]
        self.evaluation_start = meta["evaluation_start"]
        self.run_id = manifest["run_id"] if isinstance(manifest.get("run_id"), str) else self.run_id
        self.saved_step = self.step
        changes = self._config_changes(meta)
        if changes:
            log.warning("resuming %s with a config that differs from the checkpoint's in: %s",
                        path, ", ".join(changes))

    def resume(self) -> bool:
        """Restore the newest intact checkpoint of ``out_dir`` (a damaged newer one is skipped
        with a warning naming it); False when there is none. A checkpoint made for another KG or
        model shape raises :class:`~jaket.train.checkpoint.IncompatibleCheckpointError`."""
        found = restore_newest(self.out, self._restore)
        if found is None:
            return False
        self.resumed_from = found[0]
        log.info("resumed from %s at step %d", found[0], self.step)
        return True

    def _stop_signal(self, signals: StopSignals) -> int | None:
        """The signal that asks to stop (any rank's), else None."""
        return any_rank_max(self.accelerator, signals.received or 0) or None

    # ---------------------------------------------------------------- evaluation
    def evaluate_masked_entity(self, max_texts: int) -> dict:
        """:func:`jaket.train.evaluation.masked_entity_accuracy` on the held-out texts; without a
        corpus a record of the skip."""
        if not self.data.has_texts:
            return {"skipped": "no corpus: masked entity prediction was not trained"}
        return masked_entity_accuracy(self.model, self.data, max_texts, self.config.text_batch_size)

    # ---------------------------------------------------------------- the loop
    def run(self, resume: bool | str = False, progress: bool = True, overwrite: bool = False) -> dict:
        """Train to ``config.steps`` and write the outputs (rank 0 under the folder's lock).

        ``resume``: False (a fresh start; a folder holding an earlier run is refused unless
        ``overwrite``), True (continue from the newest intact checkpoint; an error when there is
        none) or ``"auto"`` (continue when there is a checkpoint, else start). SIGTERM / SIGINT end
        the run after the current step with a checkpoint (:class:`TrainingInterrupted`)."""
        with output_lock(self.out) if self.info.is_main else contextlib.nullcontext():
            return self._run(resume_mode(resume), progress, overwrite)

    def _run(self, mode: str, progress: bool, overwrite: bool) -> dict:
        clock = SessionClock()
        self.progress = progress
        self._open_folder(mode, overwrite)
        with StopSignals() as signals:
            self._first_fill_and_evaluation()
            with RunRecord(self.out / "metrics.jsonl", self.accelerator, self.config, self.step,
                           progress, write=self.info.is_main) as record:
                stopped = self._train_until_done(record, signals)
            path = self.save()  # a signal during this save waits for it
            stopped = stopped or signals.received
        if stopped:
            raise TrainingInterrupted(stopped, self.step, path)
        summary = self._summary()
        summary["session"] = clock.figures(self.resumed_from)
        if self.info.is_main:
            write_json(self.out / "summary.json", summary)
        return summary

    def _open_folder(self, mode: str, overwrite: bool) -> None:
        """Check the output folder for ``mode`` (:func:`prepare_output`), resume from its newest
        checkpoint when there is one (the metrics rows after that step are removed, as they are
        redone), then write the run's config and data report (rank 0). The checkpoint is checked
        first: a resume refused for another KG or model leaves the folder's ``config.yaml`` and
        ``data_report.json`` as the run wrote them (later commands rebuild the run's held-out texts
        from that ``config.yaml``)."""
        main = self.info.is_main
        if main:
            self.out.mkdir(parents=True, exist_ok=True)
        has_checkpoint = prepare_output(self.out, mode, overwrite, write=main)
        if has_checkpoint and self.resume() and main:
            removed = truncate_metrics(self.out / "metrics.jsonl", self.step)
            if removed:
                log.info("metrics.jsonl: %d rows after step %d removed (they are redone)",
                         removed, self.step)
        if main:
            write_text(self.out / "config.yaml", dump_config(self.config))
            if self.data.report:
                write_json(self.out / "data_report.json", self.data.report)

    def _first_fill_and_evaluation(self) -> None:
        """The memory's first fill (Eq. 7; none after a resume from a filled memory) and, on a
        fresh run, the held-out masked entity prediction before any training (rank 0)."""
        if not self.memory_filled:
            self.refresh_memory()
        cfg = self.config
        if self.info.is_main and self.step == 0 and cfg.eval_texts and self.evaluation_start is None:
            self.evaluation_start = self.evaluate_masked_entity(cfg.eval_texts)
            if self.data.has_texts:
                log.info("held-out masked entity prediction before training: %s", self.evaluation_start)

    def _train_until_done(self, record: RunRecord, signals: StopSignals) -> int | None:
        """Steps until ``config.steps``, each recorded, checkpointed every ``checkpoint_every``;
        the signal that stopped the run early, else None. The batches come from
        ``data_workers()`` processes (or this one), which stop with the loop."""
        cfg = self.config
        self._batches = batch_loader(self.builder, self.step * cfg.optim.accumulation_steps,
                                     self.data_workers(), cfg.data.prefetch, self.device.type == "cuda")
        try:
            while self.step < cfg.steps:
                values = self.train_step()  # None unless logged: nothing read back
                record.step(self.step, values)
                if cfg.checkpoint_every and self.step % cfg.checkpoint_every == 0 and self.step < cfg.steps:
                    self.save()
                stopped = self._stop_signal(signals)
                if stopped:
                    return stopped
        finally:
            self._batches = None  # the workers stop with their loader
        return None

    def _summary(self) -> dict:
        """``summary.json`` but its ``session``: the run's counts and times, and on rank 0 the
        loss trend (:func:`first_last_tenth`), the held-out evaluation and the loss curves."""
        summary = {"steps": self.step, "tasks": self.tasks, "world_size": self.info.world_size,
                   "device": str(self.device), "machine": machine_description(),
                   "mixed_precision": self.accelerator.mixed_precision,
                   "data_workers": self.data_workers(),
                   "train_seconds": round(self.train_seconds, 1),
                   "batch_wait_seconds": round(self.batch_seconds, 1),
                   "refresh_seconds": round(self.refresh_seconds, 1),
                   "refresh_count": self.refresh_count}
        if self.info.is_main:
            rows = read_metrics(self.out / "metrics.jsonl")
            summary["losses"] = first_last_tenth(rows)
            summary["evaluation_start"] = self.evaluation_start
            summary["evaluation"] = (self.evaluate_masked_entity(self.config.eval_texts)
                                     if self.config.eval_texts else None)
            plot_losses(rows, self.out / "loss_curves.png")
        return summary


def model_card_details(config: PretrainConfig, data: PretrainData, summary: dict) -> dict:
    """What the model card of a pre-trained model says of how it was made (``save_pretrained``'s
    ``card``): the run's configuration, its summary and the data report (what was held out or
    excluded, and how: the leakage guarantees)."""
    return {"Pre-training": {k: summary.get(k) for k in ("steps", "tasks", "losses", "evaluation_start",
                                                         "evaluation", "train_seconds", "device",
                                                         "mixed_precision") if k in summary},
            "Data: what pre-training saw, and what it was kept from": data.report,
            "Configuration": config.model_dump(mode="json")}


def pretrain(config: PretrainConfig, out_dir: str | Path, resume: bool | str = False,
             progress: bool = True, model_factory: Callable | None = None,
             overwrite: bool = False, device=None) -> dict:
    """Run (or resume) pre-training as configured; rank 0 writes ``out_dir`` (the trained model
    in ``out_dir/model``, loadable with ``JaketModel.from_pretrained``) under the folder's lock.

    ``resume`` and ``overwrite`` as in :meth:`Pretrainer.run`; the folder is checked before the
    data is loaded, so a wrong flag fails at once. ``device``: ``cpu``, ``cuda`` (each rank's own
    GPU under a launcher), None = ``cuda`` when visible. Launched by ``accelerate launch`` or
    ``torchrun``, every process joins the run (:mod:`jaket.train.engine`)."""
    import torch.distributed as dist

    created = not dist.is_initialized()
    accelerator = make_accelerator(config, resolve_device(device), out_dir)
    info = dist_info(accelerator)
    out_dir = Path(out_dir)
    try:
        with output_lock(out_dir) if info.is_main else contextlib.nullcontext():
            prepare_output(out_dir, resume_mode(resume), overwrite, write=False)
            # OUT/model is replaced at the end: a folder of something else is refused now (every rank, as above)
            check_folder_to_replace(out_dir / "model", WEIGHTS_FILE, "jaket model")
            torch.manual_seed(config.seed)
            np.random.seed(config.seed)
            kg, corpus, report = load_kg_and_corpus(config)
            model = (model_factory or build_model)(config, kg)
            # the window check reads the memory's own table of the descriptions: tokenised once a run
            descriptions, _ = model.memory.description_tokens(model.language, kg, model.config.description_max_length)
            data = prepare_data(kg, corpus, model.language.tokenizer, config, report, descriptions)
            trainer = Pretrainer(config, model, data, out_dir, accelerator=accelerator)
            summary = trainer.run(resume=resume, progress=progress, overwrite=overwrite)
            if info.is_main:
                model.save_pretrained(out_dir / "model", card=model_card_details(config, data, summary))
        return summary
    finally:
        finish(accelerator, created)
