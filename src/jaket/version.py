"""jaket's version, the one place it is written besides ``pyproject.toml`` (tested equal): imported by
the package (``jaket.__version__``) and by what records it (a model folder's ``config.json``, a
fine-tuned folder's ``task.json``) without importing the package above them."""

__version__ = "0.1.0"
