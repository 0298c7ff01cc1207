"""Word in context (WiC): does a target word mean the same in two texts?.

Its public names, for code outside it (:mod:`jaket.tasks.exports`):
"""

from jaket.tasks.exports import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "job": ("WordInContextConfig", "WordInContextJob"),
    "data": ("WordPair", "load_pairs"),
    "model": ("build_model", "encode_pairs"),
    "run": ("run_job", "run_word_in_context"),
})
