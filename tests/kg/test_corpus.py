"""MentionCorpus: character spans -> inclusive token spans, truncation, overlaps, batching."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from jaket.kg.corpus import (DescriptionTokens, Mention, MentionCorpus, MentionError, _token_spans,
                             collate_texts, encode_descriptions, tokenize_descriptions)


def _covered_text(tokenizer, text: str, max_length: int, s: int, o: int) -> str:
    offsets = tokenizer(text, truncation=True, max_length=max_length,
                        return_offsets_mapping=True)["offset_mapping"]
    return text[offsets[s][0]:offsets[o][1]]


@pytest.mark.parametrize("which", ["bert_tokenizer", "roberta_tokenizer"])
def test_token_spans_cover_exactly_the_mention(which, request, toy):
    tokenizer = request.getfixturevalue(which)
    _, corpus = toy
    texts = corpus.texts + ["Snowboarding dogs, unbelievably, barked at the catamaran."]
    extra = [Mention(0, 12, 1), Mention(13, 17, 4), Mention(33, 39, 5), Mention(47, 56, 6)]
    corpus = MentionCorpus(texts, corpus.mentions + [extra])
    encoded = corpus.encode(tokenizer, max_length=64)
    assert encoded.dropped_mentions == 0 and encoded.unaligned_mentions == 0
    assert encoded.num_mentions == corpus.num_mentions
    for text, mentions, ids, spans in zip(corpus.texts, corpus.mentions, encoded.input_ids,
                                          encoded.mentions):
        assert ids.dtype == np.int32 and ids[0] == tokenizer.cls_token_id
        assert spans.dtype == np.int64 and spans.shape == (len(mentions), 3)
        assert np.all(spans[:, 0] <= spans[:, 1]) and np.all(spans[:, 0] >= 1)
        assert np.all(spans[:, 1] < len(ids) - 1)  # never the final special token
        expected = sorted((m.start, m.end, m.entity) for m in mentions)
        for (s, o, entity), (start, end, e) in zip(spans.tolist(), expected):
            assert entity == e
            assert _covered_text(tokenizer, text, 64, s, o) == text[start:end]


def test_truncation_drops_and_counts(bert_tokenizer):
    text = "the dog barked at the cat while the sun set over the solar system"
    mentions = [Mention(4, 7, 0), Mention(22, 25, 1), Mention(36, 39, 2), Mention(53, 58, 3)]
    corpus = MentionCorpus([text, "a dog"], [mentions, [Mention(2, 5, 0)]])
    encoded = corpus.encode(bert_tokenizer, max_length=8)  # [CLS] + 6 words + [SEP]
    assert len(encoded.input_ids[0]) == 8
    kept = encoded.mentions[0]
    assert kept[:, 2].tolist() == [0, 1]  # "dog" (token 2) and "cat" (token 6) survive
    assert kept[:, :2].tolist() == [[2, 2], [6, 6]]
    assert encoded.dropped_mentions == 2
    assert encoded.mentions[1].tolist() == [[2, 2, 0]]


def test_mention_cut_in_the_middle_is_dropped(bert_tokenizer):
    text = "one two three four five six"
    corpus = MentionCorpus([text], [[Mention(8, 18, 0)]])  # "three four"
    encoded = corpus.encode(bert_tokenizer, max_length=5)  # [CLS] one two three [SEP]
    assert encoded.mentions[0].shape == (0, 3) and encoded.dropped_mentions == 1
    assert MentionCorpus([text], [[Mention(8, 18, 0)]]).encode(
        bert_tokenizer, max_length=6).mentions[0].tolist() == [[3, 4, 0]]


def test_text_exactly_at_the_limit_is_not_truncated(bert_tokenizer):
    corpus = MentionCorpus(["one two three"], [[Mention(8, 13, 0)]])
    encoded = corpus.encode(bert_tokenizer, max_length=5)
    assert encoded.dropped_mentions == 0 and encoded.mentions[0].tolist() == [[3, 3, 0]]


def test_bad_mentions_raise():
    with pytest.raises(MentionError, match="overlap"):
        MentionCorpus(["the hot dog"], [[Mention(4, 11, 0), Mention(8, 11, 1)]])
    with pytest.raises(MentionError, match="outside"):
        MentionCorpus(["dog"], [[Mention(0, 4, 0)]])
    with pytest.raises(MentionError, match="outside"):
        MentionCorpus(["dog"], [[Mention(2, 2, 0)]])
    MentionCorpus(["hot dog"], [[Mention(0, 3, 0), Mention(4, 7, 1)]])  # adjacent is fine


def test_whitespace_mention_is_counted_not_kept(bert_tokenizer):
    encoded = MentionCorpus(["a  dog"], [[Mention(1, 3, 0), Mention(3, 6, 1)]]).encode(bert_tokenizer)
    assert encoded.unaligned_mentions == 1 and encoded.mentions[0][:, 2].tolist() == [1]


def test_collate(bert_tokenizer, toy):
    _, corpus = toy
    encoded = corpus.encode(bert_tokenizer, max_length=32)
    batch = collate_texts(encoded, [3, 0, 7], bert_tokenizer.pad_token_id)
    lengths = [len(encoded.input_ids[i]) for i in (3, 0, 7)]
    assert batch.input_ids.shape == (3, max(lengths))
    assert batch.attention_mask.sum(1).tolist() == lengths
    assert torch.all(batch.input_ids[batch.attention_mask == 0] == bert_tokenizer.pad_token_id)
    assert batch.mention_batch.tolist() == [0, 0, 1, 1, 2, 2]
    for b, i in enumerate((3, 0, 7)):
        rows = batch.mention_batch == b
        assert batch.mention_start[rows].tolist() == encoded.mentions[i][:, 0].tolist()
        assert batch.mention_end[rows].tolist() == encoded.mentions[i][:, 1].tolist()
        assert batch.mention_entity[rows].tolist() == encoded.mentions[i][:, 2].tolist()
    assert all(t.dtype == torch.long for t in vars(batch).values())


def test_encode_descriptions(bert_tokenizer):
    texts = ["The Sun is the star at the center of the Solar System",
             "a member of the genus Canis", "dogs and more DOGS", ""]
    names = ["sun", "dog", "Dogs", "x"]
    ids, mask, start, end = encode_descriptions(texts, names, bert_tokenizer, max_length=64)
    assert ids.shape == mask.shape and ids.dtype == torch.long
    assert (start[0].item(), end[0].item()) == (2, 2)  # the paper's example: [CLS] The Sun ...
    assert (start[1].item(), end[1].item()) == (1, 1)  # name absent -> s = o = 1
    assert (start[2].item(), end[2].item()) == (1, 1) and bert_tokenizer.decode(ids[2, 1:2]) == "dogs"
    assert (start[3].item(), end[3].item()) == (1, 1) and start[3] < mask[3].sum()
    # truncated away: falls back to (1, 1)
    ids, mask, start, end = encode_descriptions(["one two three four five sun"], ["sun"],
                                                bert_tokenizer, max_length=4)
    assert (start.item(), end.item()) == (1, 1)


DESCRIPTIONS = ["The Sun is the star at the center of the Solar System", "", "a [SEP] inside a text",
                "Ωmega and the KELVIN sign", "dog " * 80, "caf\u00e9 na\u00efve r\u00e9sum\u00e9 " * 3, "short"]


@pytest.mark.parametrize("which", ["bert_tokenizer", "roberta_tokenizer"])
@pytest.mark.parametrize("window", [4, 8, 64])
def test_tokenize_descriptions_is_the_tokenizers_own_call(which, window, request):
    """The Rust pass (no conversion to Python lists) gives what ``tokenizer(...)`` gives: the same
    ids, mask, offsets and specials (hence spans), and ``cut`` is "one more token would be kept"."""
    tokenizer = request.getfixturevalue(which)
    names = ["sun", "x", "inside", "kelvin", "dog", "résumé", "short"]
    encoded = tokenize_descriptions(DESCRIPTIONS, names, tokenizer, max_length=window)
    reference = tokenizer(DESCRIPTIONS, truncation=True, max_length=window, padding=True, return_tensors="np",
                          return_token_type_ids=False)
    assert np.array_equal(encoded.input_ids, reference["input_ids"])
    assert np.array_equal(encoded.attention_mask, reference["attention_mask"])
    longer = tokenizer(DESCRIPTIONS, truncation=True, max_length=window + 1)["input_ids"]
    assert encoded.cut.tolist() == [len(ids) > window for ids in longer]
    assert encoded.cut.any() and not encoded.cut.all()
    ids, mask, start, end = encode_descriptions(DESCRIPTIONS, names, tokenizer, max_length=window)
    assert ids.tolist() == encoded.input_ids.tolist() and start.tolist() == encoded.start.tolist()
    assert list(zip(start.tolist(), end.tolist())) == _row_by_row_spans(DESCRIPTIONS, names, tokenizer, window)
    # a transformers call afterwards is not changed by the backend's configuration
    assert tokenizer(["dog " * 80])["input_ids"][0] == tokenizer("dog " * 80)["input_ids"]
    assert len(tokenizer("dog " * 80)["input_ids"]) > window


def test_description_tokens_keep_which_descriptions_the_window_cut(bert_tokenizer):
    names = ["sun", "x", "inside", "kelvin", "dog", "résumé", "short"]
    table = DescriptionTokens(DESCRIPTIONS, names, bert_tokenizer, max_length=8, chunk=3)
    table.ensure([4, 0])
    assert table.done.tolist() == [True, False, False, False, True, False, False]
    table.ensure()
    whole = tokenize_descriptions(DESCRIPTIONS, names, bert_tokenizer, max_length=8)
    assert table.cut.tolist() == whole.cut.tolist() and table.lengths.tolist() == whole.attention_mask.sum(1).tolist()
    assert table.ids[:, :whole.input_ids.shape[1]].tolist() == whole.input_ids.tolist()


def _row_by_row_spans(texts, names, tokenizer, max_length):
    """The span rule of encode_descriptions, one text at a time with ``re`` (the reference)."""
    import re

    spans = []
    for text, name in zip(texts, names):
        encoded = tokenizer(text, truncation=True, max_length=max_length, return_offsets_mapping=True,
                            return_special_tokens_mask=True)
        offsets = np.array(encoded["offset_mapping"], dtype=np.int64).reshape(-1, 2)
        special = np.array(encoded["special_tokens_mask"], dtype=bool)
        found = re.search(re.escape(name), text, flags=re.IGNORECASE) if name else None
        span = (1, 1)
        if found is not None:
            s, o = _token_spans(offsets, special, np.array([found.start()]), np.array([found.end()]))
            if s[0] <= o[0] and 0 <= o[0] < len(offsets) and offsets[o[0], 1] >= found.end():
                span = (int(s[0]), int(o[0]))
        spans.append((min(span[0], len(offsets) - 1), min(span[1], len(offsets) - 1)))
    return spans


@pytest.mark.parametrize("which", ["bert_tokenizer", "roberta_tokenizer"])
def test_the_batched_span_search_gives_what_each_text_alone_gives(which, request):
    """encode_descriptions finds every name over the whole batch at once (str.find on ASCII, arrays
    for the token spans); each row must equal the one-text-at-a-time rule, including the non-ASCII
    case folding that only ``re`` does (the Kelvin sign matches k), truncation and absent names."""
    tokenizer = request.getfixturevalue(which)
    rng = np.random.default_rng(0)
    words = ["sun", "Star", "dog", "DOGS", "canis", "the", "of", "a", "genus", "Ångström", "straße", "İstanbul",
             "\u212aelvin", "kelvin", "naïve", "x", "center", "solar-system", "(bank)", "bank's"]
    texts, names = [], []
    for _ in range(300):
        text = " ".join(rng.choice(words, size=int(rng.integers(0, 14))))
        texts.append(text)
        names.append(str(rng.choice(words + ["", "solar system", "Kelvin", "STRASSE", "ångström", "zebra"])))
    for max_length in (6, 12, 64):
        _, _, start, end = encode_descriptions(texts, names, tokenizer, max_length=max_length)
        batched = list(zip(start.tolist(), end.tolist()))
        assert batched == _row_by_row_spans(texts, names, tokenizer, max_length)
    assert any(span != (1, 1) for span in batched)


def test_split_partitions(toy):
    _, corpus = toy
    a, b = corpus.split(0.25, seed=1)
    assert len(a) == round(0.25 * len(corpus)) and len(a) + len(b) == len(corpus)
    assert sorted(a.texts + b.texts) == sorted(corpus.texts)
    assert corpus.split(0.25, seed=1)[0] == a and corpus.split(0.25, seed=2)[0] != a
