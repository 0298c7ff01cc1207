"""jaket: joint pre-training of a knowledge graph and a language model (JAKET, Yu et al. 2022)."""

__version__ = "0.1.0"
