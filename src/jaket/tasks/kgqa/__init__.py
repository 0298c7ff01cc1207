"""Question answering over a KG (KGQA, the paper's Table 2).

Its public names, for code outside it (:mod:`jaket.tasks.exports`):
"""

from jaket.tasks.exports import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "job": ("KGQAConfig", "KGQAData", "KGQAJob"),
    "data": ("RELATION_TEMPLATES", "kb_to_kg", "load_data", "load_metaqa_task", "read_kb"),
    "model": ("QAGraph", "QuestionAnswerer", "batch_logits", "drop_triples_mask"),
    "run": ("QuestionAnsweringRuns", "hits_at_1", "relation_phrasing", "run_job", "run_kgqa", "train_qa"),
})
