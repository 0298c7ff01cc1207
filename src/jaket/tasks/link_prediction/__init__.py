"""Link prediction over descriptions + KM (filtered MRR / Hits@k).

Its public names, for code outside it (:mod:`jaket.tasks.exports`):
"""

from jaket.tasks.exports import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "job": ("LinkPredictionConfig", "LinkPredictionJob", "TRAIN_ENCODER_DEFAULTS"),
    "model": ("LinkScorer", "train_view", "train_with_encoder"),
    "run": ("filtered_ranks", "realistic_ranks", "run_job", "run_link_prediction"),
})
