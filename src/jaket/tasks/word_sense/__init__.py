"""Word senses: sense linking and all-words word-sense disambiguation.

It trains nothing, so it has no ``model`` or ``finetuned`` module: its scorers are
:mod:`jaket.senses.scorers`, the linker of ``jaket link --model`` :mod:`jaket.senses.linker`. Its
public names, for code outside it (:mod:`jaket.tasks.exports`):
"""

from jaket.tasks.exports import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "job": ("SenseLinkingJob", "WordSenseConfig", "WordSenseJob"),
    "data": ("WsdInstance", "key_path_of", "load_wsd"),
    "run": ("f1_statistic", "run_job", "run_wsd", "sense_examples", "wsd_examples"),
})
