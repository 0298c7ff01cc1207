"""jaket model folders among Transformers' tools: the Auto classes, the Hub and a model card.

:func:`register` makes ``transformers.AutoConfig.from_pretrained(folder)`` return a
:class:`JaketTransformersConfig` and ``transformers.AutoModel.from_pretrained(folder)`` a
:class:`~jaket.model.jaket.JaketModel` (the third-party-model way: ``AutoConfig.register`` /
``AutoModel.register``); importing :mod:`jaket.model.jaket` calls it, and ``import jaket`` does
so as soon as Transformers' Auto modules load (:mod:`jaket.model.auto`; this module imports only
Transformers' ``PretrainedConfig`` at the top, so that hook can read it while ``AutoModel`` is
still loading). :func:`resolve_folder` turns a Hub repo id into the folder ``huggingface_hub``
keeps in its cache (a local path is used as it is), :func:`push_folder` uploads a saved folder,
and :func:`model_card_text` is the README.md that ``save_pretrained`` puts beside the weights.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from transformers import PretrainedConfig

from jaket.model.config import ModelFolderError

#: the keyword arguments of ``AutoModel.from_pretrained`` a jaket folder has no use for
IGNORED_HUB_ARGUMENTS = frozenset({"_from_auto", "force_download", "proxies", "trust_remote_code",
                                   "adapter_kwargs", "code_revision", "subfolder"})


class JaketTransformersConfig(PretrainedConfig):
    """The ``config.json`` of a jaket model folder as Transformers reads it (``model_type``
    ``jaket``); :meth:`jaket.model.config.JaketConfig.from_dict` validates the same file for
    :class:`~jaket.model.jaket.JaketModel`."""

    model_type = "jaket"


def register(model_class) -> None:
    """Make the Auto classes know ``model_type: jaket`` (idempotent)."""
    from transformers import AutoConfig, AutoModel  # not at the top: see the module docstring

    AutoConfig.register("jaket", JaketTransformersConfig, exist_ok=True)
    AutoModel.register(JaketTransformersConfig, model_class, exist_ok=True)


def resolve_folder(name: str | Path, revision: str | None = None, cache_dir: str | Path | None = None,
                   local_files_only: bool | None = None, token: str | bool | None = None) -> Path:
    """``name`` itself when it is a local path; else a Hub repo id (``org/model``) downloaded, or
    read from the cache when offline (``HF_HUB_OFFLINE=1`` or ``local_files_only``), through
    ``huggingface_hub.snapshot_download``."""
    path = Path(name)
    if not _is_repo_id(str(name)):
        return path
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HFValidationError, LocalEntryNotFoundError

    offline = os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("1", "true", "yes")
    try:
        return Path(snapshot_download(str(name), revision=revision, cache_dir=cache_dir, token=token,
                                      local_files_only=bool(local_files_only) or offline))
    except LocalEntryNotFoundError:
        raise ModelFolderError(f"{name}: no such folder, and the Hub repo is not in the local cache "
                               f"(offline: HF_HUB_OFFLINE=1 or local_files_only)") from None
    except (HFValidationError, OSError) as error:
        raise ModelFolderError(f"{name}: no such folder, and not a Hub repo that could be fetched "
                               f"({type(error).__name__}: {error})") from None


def push_folder(folder: Path, repo_id: str, private: bool | None = None, token: str | None = None,
                commit_message: str = "Upload jaket model") -> str:
    """Create ``repo_id`` on the Hub when needed and upload ``folder``; returns the commit URL."""
    from huggingface_hub import HfApi

    api = HfApi(token=token)
    api.create_repo(repo_id, private=private, exist_ok=True)
    return str(api.upload_folder(folder_path=str(folder), repo_id=repo_id, commit_message=commit_message))


def _is_repo_id(name: str) -> bool:
    """``org/model`` naming no local folder: what the Hub's ``base_model`` metadata takes."""
    return name.count("/") == 1 and not name.startswith((".", "/", "~")) and not Path(name).exists()


def model_card_text(config: dict, memory_rows: int | None, details: dict | None = None) -> str:
    """A README.md with the Hub's metadata header: the base encoder, the KG the heads and memory
    were built for, and what the caller knows of how the model was made (``details``: e.g.
    pre-training's steps, configuration and data report with its leakage guarantees, results)."""
    details = details or {}
    encoder = details.get("base_encoder") or config.get("base_encoder") or "the bundled MiniLM-L6"
    lines = ["---", "library_name: jaket", "tags:", "- jaket", "- knowledge-graph", "- fill-mask",
             f"base_model: {json.dumps(str(encoder))}" if _is_repo_id(str(encoder)) else None, "---", "", "# A JAKET model (joint knowledge graph and language model pre-training)", "",
             "Load it with `JaketModel.from_pretrained(folder)` or, after `import jaket.model.jaket`, with "
             "`transformers.AutoModel.from_pretrained(folder)`. `encoder/` is the language module alone, a "
             "plain Transformers masked-LM folder: `AutoModelForMaskedLM.from_pretrained(folder + '/encoder')` "
             "loads every weight with none missing or left over; `AutoModel` loads the encoder without "
             "its MLM head (whose keys it reports unused) and starts the pooler, which JAKET never "
             "trains, at random.", "",
             "| | |", "|---|---|",
             f"| base encoder | {encoder} |",
             f"| LM1 layers / knowledge module | {config.get('lm1_layers')} / {config.get('km_layers')} layers, "
             f"{config.get('km_heads')} heads, composition `{config.get('composition')}`, fan-out "
             f"{config.get('fanouts')} |",
             f"| KG of the heads | {config.get('num_categories')} categories, {config.get('num_relations')} relations"
             + (f", memory of {memory_rows} entity descriptions |" if memory_rows else " (no memory saved) |"),
             f"| jaket version | {config.get('jaket_version')} |"]
    lines = [line for line in lines if line is not None]
    for title, value in details.items():
        if title == "base_encoder":
            continue
        lines += ["", f"## {title}", ""]
        lines += ["```json", json.dumps(value, indent=2, default=str), "```"] if isinstance(value, (dict, list)) \
            else [str(value)]
    return "\n".join(lines) + "\n"
