"""Entity classification on an unseen KG (the paper's Table 3).

Split as every task package (docs/contributing.md, "Adding a task"): ``job`` (the typed config and
its data section), ``data``, ``model``, ``finetuned``, ``run`` (the runner) and ``cli``. This file
imports none of them, so ``jaket --help`` loads only the light ones.
"""
