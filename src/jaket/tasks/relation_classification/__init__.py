"""Few-shot relation classification, PAIR (the paper's Table 1).

Its public names, for code outside it (:mod:`jaket.tasks.exports`):
"""

from jaket.tasks.exports import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "job": ("RelationClassificationConfig", "RelationClassificationJob"),
    "run": ("run_job",),
})
