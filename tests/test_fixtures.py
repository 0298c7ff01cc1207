from transformers import AutoModelForMaskedLM, AutoTokenizer


def test_tiny_encoders_load_from_their_folders(tiny_bert_dir, tiny_roberta_dir):
    for path in (tiny_bert_dir, tiny_roberta_dir):
        tokenizer = AutoTokenizer.from_pretrained(path)
        model = AutoModelForMaskedLM.from_pretrained(path)
        ids = tokenizer("the dog barked", return_tensors="pt")
        out = model(**ids)
        assert out.logits.shape[-1] == model.config.vocab_size
        assert tokenizer.is_fast


def test_tiny_tokenizers_really_tokenise(tiny_bert_dir, tiny_roberta_dir):
    for path in (tiny_bert_dir, tiny_roberta_dir):
        tokenizer = AutoTokenizer.from_pretrained(path)
        ids = tokenizer("the dog barked at the cat")["input_ids"]
        assert len(ids) > 4 and tokenizer.unk_token_id not in ids
        assert ids[0] == tokenizer.cls_token_id and ids[-1] == tokenizer.sep_token_id
