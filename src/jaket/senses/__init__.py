"""The senses library: which sense of a KG a word in context names, shared by every sense task.

A *sense* is an entity of a sense KG (WordNet's synsets by default, any KG with names and
descriptions). Between :mod:`jaket.model` and :mod:`jaket.tasks`, and importing no task:

* :mod:`~jaket.senses.inventory`: the candidate senses of a lemma (``SenseInventory``, WordNet's
  sense order) and the sense KG (``load_sense_kg``);
* :mod:`~jaket.senses.graph`: the sense KG as the knowledge module reads it around candidates
  (``SenseGraph``, ``km_embeddings``, Eq. 1-5 over the frozen memory of Eq. 7) and a target's
  token span (``target_spans``);
* :mod:`~jaket.senses.texts`: a sense read as a sentence (``sense_text``, ``text_vectors``), its
  ``text + kg`` row, WordNet's usage examples, and their cache;
* :mod:`~jaket.senses.linker`: ``ContextLinker``, the linker of ``jaket link --model`` and
  ``jaket.ContextLinker`` (pre-training's masked-entity head or the text + kg rows over any KG),
  and the linked-corpus writer;
* :mod:`~jaket.senses.scorers`: the scorers of word-sense disambiguation and sense linking side
  by side (first sense, random, Lesk, lm, lm+g+m, jaket, the text scorers, the sense-order prior).

Word in context (:mod:`jaket.tasks.word_in_context`), word-sense disambiguation and sense linking
(:mod:`jaket.tasks.word_sense`), ``jaket link``, ``jaket bench sense-texts``, ``benchmarks/`` and
``results/`` import it. This file imports none of its modules (they load torch).
"""
