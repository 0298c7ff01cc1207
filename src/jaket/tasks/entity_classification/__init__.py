"""Entity classification on an unseen KG (the paper's Table 3).

Its public names, for code outside it (:mod:`jaket.tasks.exports`):
"""

from jaket.tasks.exports import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "job": ("EntityClassificationConfig", "EntityClassificationData", "EntityClassificationJob"),
    "run": ("paired_table", "results_table", "run_entity_classification", "run_job"),
})
