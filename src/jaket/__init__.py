"""jaket: joint pre-training of a knowledge graph and a language model (JAKET, Yu et al. 2022)."""

__version__ = "0.1.0"


def _register_auto_classes() -> None:
    """``AutoConfig`` / ``AutoModel.from_pretrained(folder)`` know jaket folders after ``import jaket``
    (registered when Transformers loads, so this import stays light: :mod:`jaket.model.auto`)."""
    from jaket.model.auto import register_when_imported  # --help: no Transformers here, a hook only

    register_when_imported()


_register_auto_classes()
