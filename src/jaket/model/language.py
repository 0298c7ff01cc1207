"""The language module split in two: LM1 (Eq. 6) and LM2 (Eq. 10).

The paper resolves the cyclic dependency between the language and knowledge modules by cutting a
pre-trained encoder in two: LM1 = the embeddings and the first ``k`` transformer layers (RoBERTa-base:
6 of 12), LM2 = the remaining layers. LM1 reads the input text (``Z = LM1(X^embed)``, Eq. 6) and
the entity / relation descriptions (the initial KG embeddings, Eq. 7); the knowledge module's
output is merged into ``Z`` at the mentions (Eq. 8-9) and LM2 finishes (``Z^LM = LM2(Z')``, Eq. 10).

:class:`SplitLanguageModel` wraps any Transformers masked-LM checkpoint of the BERT family (BERT,
RoBERTa, XLM-R, ELECTRA, CamemBERT, ... whose base model exposes ``embeddings`` and
``encoder.layer``) or MPNet (whose layers also take the encoder's relative position bias) loaded
from a local folder. With no fusion, ``lm2(lm1(x))`` is exactly the unsplit encoder, and every
construction checks it on a probe batch: an encoder whose layers need inputs the split does not
pass (DeBERTa's relative embeddings, ...) is refused by name instead of being run wrongly.
"""

from __future__ import annotations

import copy
import logging
import math
from pathlib import Path

import torch
from torch import nn

log = logging.getLogger(__name__)


class EncoderLoadError(ValueError):
    """A Hugging Face folder whose tokenizer, config or (safetensors) weights cannot be loaded."""


class UnsupportedArchitectureError(ValueError):
    """The checkpoint's architecture cannot be split into LM1 / LM2."""


def _split_points(model: nn.Module) -> tuple[nn.Module, nn.Module, nn.ModuleList, nn.Module]:
    """(base model, embeddings, transformer layers, MLM head) of a masked-LM model."""
    base = getattr(model, "base_model", None)
    embeddings = getattr(base, "embeddings", None)
    layers = getattr(getattr(base, "encoder", None), "layer", None)
    heads = [child for name, child in model.named_children()
             if name != getattr(model, "base_model_prefix", None)]
    if base is None or embeddings is None or not isinstance(layers, nn.ModuleList) or len(heads) != 1:
        arch = ", ".join(getattr(model.config, "architectures", None) or [type(model).__name__])
        raise UnsupportedArchitectureError(
            f"cannot split a {model.config.model_type!r} encoder ({arch}) into LM1/LM2: jaket needs "
            f"a BERT-family masked LM whose base model has `embeddings` and `encoder.layer` "
            f"(BERT, RoBERTa, XLM-RoBERTa, ELECTRA, CamemBERT, ...)")
    return base, embeddings, layers, heads[0]


def _check_tokenizer_size(path: Path, tokenizer, config) -> None:
    """Refuse a tokenizer with fewer than half the tokens of the encoder's vocabulary.

    The two may differ a little (an embedding matrix padded to a multiple of 8 or 64, a few added
    tokens), never by half: a folder without its vocabulary (no ``tokenizer.json`` nor ``vocab.txt``)
    still loads, as a tokenizer of the special tokens alone that reads every word as the unknown token.
    """
    vocab_size = getattr(config, "vocab_size", None)
    if isinstance(vocab_size, int) and len(tokenizer) * 2 < vocab_size:
        raise EncoderLoadError(f"{path}: the tokenizer has {len(tokenizer)} tokens but the encoder's "
                               f"vocabulary has {vocab_size} (is tokenizer.json / vocab.txt missing?)")


def _mpnet_self_attention() -> type:
    from transformers.models.mpnet.modeling_mpnet import MPNetSelfAttention

    return MPNetSelfAttention


class ReadingSelfAttention(nn.Module):
    """MPNet's self-attention for reading (no dropout, no attention weights returned): the same
    function as Transformers' ``MPNetSelfAttention`` in eval mode -- ``softmax(q k^T / sqrt(d) +
    position bias + mask) v`` through ``o`` -- with q, k and v made by one product of their stacked
    weights and the attention by ``scaled_dot_product_attention`` (no transposed copies of q, k, v
    and the probabilities). Built from a trained module by :meth:`SplitLanguageModel.reading_copy`."""

    def __init__(self, attention: nn.Module):
        super().__init__()
        self.heads, self.head_size = attention.num_attention_heads, attention.attention_head_size
        self.qkv = nn.Linear(attention.q.in_features, 3 * attention.all_head_size, dtype=attention.q.weight.dtype,
                             device=attention.q.weight.device)
        with torch.no_grad():
            self.qkv.weight.copy_(torch.cat([attention.q.weight, attention.k.weight, attention.v.weight]))
            self.qkv.bias.copy_(torch.cat([attention.q.bias, attention.k.bias, attention.v.bias]))
        self.o = attention.o

    def forward(self, hidden_states, attention_mask=None, position_bias=None, output_attentions=False, **kwargs):
        if output_attentions:
            raise ValueError("a reading copy does not return attention weights")
        batch, length, _ = hidden_states.shape
        q, k, v = self.qkv(hidden_states).view(batch, length, 3, self.heads, self.head_size).permute(2, 0, 3, 1, 4)
        bias = position_bias
        if attention_mask is not None:
            bias = attention_mask if bias is None else bias + attention_mask
        context = nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=bias,
                                                             scale=1.0 / math.sqrt(self.head_size))
        return (self.o(context.transpose(1, 2).reshape(batch, length, self.heads * self.head_size)),)


class SplitLanguageModel(nn.Module):
    """A Transformers masked LM cut into LM1 (embeddings + first ``lm1_layers`` layers) and LM2.

    Attributes: ``tokenizer`` (a fast tokenizer), ``hidden_size`` (F), ``lm1_layers`` (k),
    ``encoder`` (the wrapped ``*ForMaskedLM`` model, saved and loaded with Transformers).
    """

    def __init__(self, encoder: nn.Module, tokenizer, lm1_layers: int | None = None, *, check: bool = True):
        super().__init__()
        self.encoder = encoder
        self.tokenizer = tokenizer
        base, embeddings, layers, head = _split_points(encoder)
        total = len(layers)
        k = total // 2 if lm1_layers is None else int(lm1_layers)
        if not 0 <= k <= total:
            raise ValueError(f"lm1_layers={k} outside [0, {total}] for this {total}-layer encoder")
        self.lm1_layers = k
        self.num_layers = total
        self.hidden_size = int(encoder.config.hidden_size)
        self._embeddings = [embeddings]  # kept out of the module tree (already under `encoder`)
        self._layers = [layers]
        self._head = [head]
        self._base = [base]
        if check:
            self._check_split()

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_pretrained(cls, path: str | Path, lm1_layers: int | None = None) -> "SplitLanguageModel":
        """Load a masked LM and its fast tokenizer from a local folder (never from the network).

        A checkpoint without an MLM head (the bundled MiniLM is a plain ``BertModel``) gets a new
        head whose decoder is tied to the word embeddings; this is logged.
        """
        from transformers import AutoModelForMaskedLM, AutoTokenizer

        path = Path(path)
        if not (path / "config.json").is_file():
            raise FileNotFoundError(f"{path}: not a Hugging Face model folder (no config.json)")
        from transformers.utils import logging as hf_logging

        # Transformers prints a load report for the missing head; we log one line of our own instead
        verbosity = hf_logging.get_verbosity()
        hf_logging.set_verbosity_error()
        try:
            tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
            # safetensors only: a pickle weight file (pytorch_model.bin) is never opened
            encoder, info = AutoModelForMaskedLM.from_pretrained(path, output_loading_info=True,
                                                                 local_files_only=True,
                                                                 use_safetensors=True)
        except Exception as error:  # OSError, ValueError, SafetensorError, a config field's type
            first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            raise EncoderLoadError(f"{path}: cannot load the encoder ({first}); it must be a local "
                                   f"Hugging Face masked-LM folder with safetensors weights") from error
        finally:
            hf_logging.set_verbosity(verbosity)
        if not getattr(tokenizer, "is_fast", False):
            raise EncoderLoadError(f"{path}: jaket needs a fast tokenizer (tokenizer.json) for mention "
                                   f"offsets")
        _check_tokenizer_size(path, tokenizer, encoder.config)
        missing = sorted(info.get("missing_keys") or [])
        if missing:
            base_prefix = encoder.base_model_prefix + "."
            in_base = [k for k in missing if k.startswith(base_prefix)]
            if in_base:
                raise EncoderLoadError(f"{path}: encoder weights missing from the checkpoint: {in_base[:5]}")
            tied = encoder.get_output_embeddings() is not None and (
                encoder.get_output_embeddings().weight is encoder.get_input_embeddings().weight)
            log.info("%s has no MLM head (%d tensors): a new one is initialised%s", path, len(missing),
                     ", its decoder tied to the word embeddings" if tied else "")
        return cls(encoder, tokenizer, lm1_layers=lm1_layers)

    @property
    def config(self):
        return self.encoder.config

    # ------------------------------------------------------------------ the two halves
    def _mask(self, hidden: torch.Tensor, attention_mask: torch.Tensor | None):
        from transformers.masking_utils import create_bidirectional_mask

        return create_bidirectional_mask(config=self.encoder.config, inputs_embeds=hidden,
                                         attention_mask=attention_mask)

    def _layer_inputs(self, hidden: torch.Tensor) -> dict:
        """What every layer takes besides the states and the mask: MPNet's relative position bias
        (computed once by its encoder from the sequence length, shared by all layers); nothing for
        the BERT family."""
        encoder = self._base[0].encoder
        if hasattr(encoder, "compute_position_bias"):
            return {"position_bias": encoder.compute_position_bias(hidden)}
        return {}

    def _states(self, hidden: torch.Tensor, attention_mask, layers):
        """The output states of each of ``layers`` in turn, from ``hidden``."""
        mask, extra = self._mask(hidden, attention_mask), self._layer_inputs(hidden)
        for layer in layers:
            out = layer(hidden, mask, **extra)
            hidden = out[0] if isinstance(out, tuple) else out
            yield hidden

    def _run_layers(self, hidden: torch.Tensor, attention_mask, layers) -> torch.Tensor:
        for hidden in self._states(hidden, attention_mask, layers):
            pass
        return hidden

    def hidden_states(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None
                      ) -> list[torch.Tensor]:
        """Every layer's output states without fusion (``[-1]`` is :meth:`forward`'s), (B, L, F) each."""
        return list(self._states(self._embeddings[0](input_ids=input_ids), attention_mask, self._layers[0]))

    @torch.no_grad()
    def _check_split(self) -> None:
        """Refuse an encoder whose layers, run one by one as LM1 and LM2 run them, do not give the
        model's own output on a padded probe batch (its layers need inputs the split does not pass)."""
        base = self._base[0]
        parameter = next(base.parameters())
        vocab, pad = int(base.config.vocab_size), getattr(base.config, "pad_token_id", None)
        pad = 0 if pad is None else int(pad)
        ids = (torch.arange(7, device=parameter.device).repeat(2, 1) * 7 + 5) % vocab
        ids[ids == pad] = (pad + 1) % vocab
        mask = torch.ones_like(ids)
        ids[1, 4:], mask[1, 4:] = pad, 0
        training = self.encoder.training
        self.encoder.eval()
        try:
            expected = base(input_ids=ids, attention_mask=mask).last_hidden_state
            got = self.forward(ids, mask)
        except Exception as error:  # a layer signature the split does not meet (TypeError, shapes, ...)
            first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            problem = f"its layers cannot be run one by one ({type(error).__name__}: {first})"
        else:
            valid = mask.bool()
            gap = float((got[valid].float() - expected[valid].float()).abs().max())
            scale = max(1.0, float(expected[valid].float().abs().max()))
            problem = None if gap <= 1e-3 * scale else (
                f"run layer by layer it does not give the model's own output (max |difference| {gap:.3g})")
        finally:
            self.encoder.train(training)
        if problem is not None:
            arch = ", ".join(getattr(base.config, "architectures", None) or [type(self.encoder).__name__])
            raise UnsupportedArchitectureError(
                f"cannot split a {base.config.model_type!r} encoder ({arch}) into LM1/LM2: {problem}; its "
                f"layers need inputs jaket does not pass. Supported: the BERT family (BERT, RoBERTa, "
                f"XLM-RoBERTa, ELECTRA, CamemBERT, ...) and MPNet")

    def lm1(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        """``Z = LM1(X^embed)`` (Eq. 6): token embeddings through the first ``k`` layers, (B, L, F)."""
        hidden = self._embeddings[0](input_ids=input_ids)
        return self._run_layers(hidden, attention_mask, self._layers[0][:self.lm1_layers])

    def lm2(self, z: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        """``Z^LM = LM2(Z')`` (Eq. 10): the remaining layers over the fused states, (B, L, F)."""
        return self._run_layers(z, attention_mask, self._layers[0][self.lm1_layers:])

    def mlm_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """The masked-token prediction head over ``Z^LM`` rows: (..., V)."""
        return self._head[0](hidden)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        """LM2(LM1(x)) without fusion: the unsplit encoder's last hidden states."""
        return self.lm2(self.lm1(input_ids, attention_mask), attention_mask)

    def compile_layers(self, **options) -> None:
        """``torch.compile`` every transformer layer in place (``nn.Module.compile``: the parameters
        and the state dict stay as they are, so checkpoints do not change). ``options`` go to
        ``torch.compile`` (e.g. ``dynamic=True`` for batches of varying length). Measured on a
        2-core AVX-512 CPU it is not faster (docs/performance.md); on a GPU, ``make gpu-check``
        measures it."""
        for layer in self._layers[0]:
            layer.compile(**options)

    def reading_copy(self, dtype: torch.dtype) -> "SplitLanguageModel":
        """A copy of this model for passes without gradients, its weights cast to ``dtype``, in eval
        mode and sharing the tokenizer (so a description's tokens are not made again); this model's
        parameters are untouched. MPNet's attention is read by :class:`ReadingSelfAttention`
        (one product for q, k and v, PyTorch's fused attention), the same function. The bf16
        memory refresh reads descriptions through it: on a CPU the pass runs faster with the
        weights in bf16 than under autocast, which keeps fp32 weights and casts between the
        products and the layer norms (docs/performance.md, "The refresh in bf16"). The rows
        agree with autocast's to bf16's precision (all-mpnet-base-v2: a cosine of 0.99995 with
        fp32's rows, autocast's 0.99998)."""
        encoder = copy.deepcopy(self.encoder).to(dtype).eval()
        for layer in _split_points(encoder)[2]:
            attention = getattr(layer, "attention", None)
            if isinstance(getattr(attention, "attn", None), _mpnet_self_attention()):
                attention.attn = ReadingSelfAttention(attention.attn)
        encoder.requires_grad_(False)
        return SplitLanguageModel(encoder, self.tokenizer, self.lm1_layers, check=False).eval()

    def lm1_parameters(self):
        """Parameters LM1 uses (embeddings + first k layers): what a memory refresh depends on."""
        yield from self._embeddings[0].parameters()
        for layer in self._layers[0][:self.lm1_layers]:
            yield from layer.parameters()
        in_layers = {id(p) for p in self._layers[0].parameters()}
        # what the encoder shares across its layers (MPNet's position bias; nothing in the BERT family)
        yield from (p for p in self._base[0].encoder.parameters() if id(p) not in in_layers)

    def encoder_parameters(self):
        """Parameters ``LM2(LM1(x))`` uses (LM1's and the remaining layers'; not the MLM head nor a
        pooler, which a checkpoint without them gets freshly initialised): what a text's vector
        depends on."""
        yield from self.lm1_parameters()
        for layer in self._layers[0][self.lm1_layers:]:
            yield from layer.parameters()

    def save_pretrained(self, directory: str | Path) -> None:
        """The encoder and tokenizer as a plain Transformers folder."""
        self.encoder.save_pretrained(directory)
        self.tokenizer.save_pretrained(directory)
