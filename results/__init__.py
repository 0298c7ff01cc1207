"""The results tooling: what turns the runs of docs/results.md into its tables and figures.

Each module is a script run from the repository root (``python -m results.NAME --help``):

- ``seed_tables``: one table out of per-seed task runs (KGQA, relation classification), with
  paired differences against a reference setting;
- ``ec_compare``: one entity-classification table out of several runs on the same KG';
- ``pykeen_baseline``: PyKEEN TransE / RotatE on exactly the split of a link-prediction run;
- ``rank_breakdown``: a link-prediction run's ranks split by whether the reverse triple is a
  training triple;
- ``checkpoint_model``: a pre-training checkpoint as a model folder (the pre-training-length
  ablation);
- ``lp_encoder_probe``: link prediction with ``--train-encoder`` read mid-run;
- ``collect``: the figures of docs/results.md into docs/results.json.

The speed measurements (``jaket bench``, the suite of docs/performance.md) are in ``benchmarks/``.
"""
