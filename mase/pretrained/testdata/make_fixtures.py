#!/usr/bin/python3
"""Writes the small BERT checkpoints the pretrained tests load.

Run once with Debian's PyTorch (apt-get install python3-torch), from this
directory:  /usr/bin/python3 make_fixtures.py
The files it writes are committed; the tests never need PyTorch.

Each folder is laid out like a HuggingFace repository. expected.json holds
the inputs and what PyTorch computes for them: the logits of a BERT forward
written here from the transformers definition (eval mode, GELU with erf,
extended attention mask of the dtype's minimum), with the weights exactly as
stored (fp16/bf16 weights are rounded first), or for the base checkpoint a
few parameter values.
"""
import collections
import json
import math
import os
import struct

import torch

torch.manual_seed(7)
HERE = os.path.dirname(os.path.abspath(__file__))

CONFIG = {
    "architectures": ["BertForSequenceClassification"],
    "model_type": "bert",
    "vocab_size": 40,
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 64,
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1,
    "attention_probs_dropout_prob": 0.1,
    "max_position_embeddings": 64,
    "type_vocab_size": 2,
    "initializer_range": 0.02,
    "layer_norm_eps": 1e-12,
    "pad_token_id": 0,
    "position_embedding_type": "absolute",
    "id2label": {"0": "negative", "1": "neutral", "2": "positive"},
    "label2id": {"negative": 0, "neutral": 1, "positive": 2},
    "transformers_version": "4.46.0",
}

VOCAB = ["[PAD]", "[unused0]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "a", "movie", "film", "was", "is", "good",
         "bad", "great", "awful", "not", "very", "i", "it", ",", ".", "!", "##s", "##ly", "plot", "acting", "and",
         "but", "love", "hate", "boring", "fun", "story", "end", "##ing", "best", "worst", "ever", "really"]
assert len(VOCAB) == CONFIG["vocab_size"]

INPUT_IDS = [[3, 6, 8, 10, 17, 12, 21, 4], [3, 18, 30, 19, 21, 4, 0, 0]]
ATTENTION_MASK = [[1, 1, 1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1, 0, 0]]


def bert_state(cfg, prefix="bert.", head=True):
    """A random state dict with transformers' names (weights N(0, 0.2) so logits differ)."""
    h, inter, s = cfg["hidden_size"], cfg["intermediate_size"], collections.OrderedDict()

    def lin(name, i, o):
        s[name + ".weight"] = torch.randn(o, i) * 0.2
        s[name + ".bias"] = torch.randn(o) * 0.1

    def ln(name):
        s[name + ".weight"] = 1 + torch.randn(h) * 0.1
        s[name + ".bias"] = torch.randn(h) * 0.1

    p = prefix
    s[p + "embeddings.word_embeddings.weight"] = torch.randn(cfg["vocab_size"], h) * 0.5
    s[p + "embeddings.position_embeddings.weight"] = torch.randn(cfg["max_position_embeddings"], h) * 0.5
    s[p + "embeddings.token_type_embeddings.weight"] = torch.randn(cfg["type_vocab_size"], h) * 0.5
    ln(p + "embeddings.LayerNorm")
    for i in range(cfg["num_hidden_layers"]):
        l = f"{p}encoder.layer.{i}."
        for n in ("query", "key", "value"):
            lin(l + "attention.self." + n, h, h)
        lin(l + "attention.output.dense", h, h)
        ln(l + "attention.output.LayerNorm")
        lin(l + "intermediate.dense", h, inter)
        lin(l + "output.dense", inter, h)
        ln(l + "output.LayerNorm")
    lin(p + "pooler.dense", h, h)
    if head:
        lin("classifier", h, len(cfg["id2label"]))
    return s


def forward(s, cfg, ids, mask):
    """transformers' BertForSequenceClassification forward in eval mode, float32."""
    p = "bert."
    ids, mask = torch.tensor(ids), torch.tensor(mask)
    b, L = ids.shape
    h, nh = cfg["hidden_size"], cfg["num_attention_heads"]
    d = h // nh
    eps = cfg["layer_norm_eps"]

    def linear(x, n):
        return x @ s[n + ".weight"].t() + s[n + ".bias"]

    def layer_norm(x, n):
        return torch.nn.functional.layer_norm(x, (h,), s[n + ".weight"], s[n + ".bias"], eps)

    x = (s[p + "embeddings.word_embeddings.weight"][ids] + s[p + "embeddings.position_embeddings.weight"][torch.arange(L)]
         + s[p + "embeddings.token_type_embeddings.weight"][torch.zeros_like(ids)])
    x = layer_norm(x, p + "embeddings.LayerNorm")
    ext = (1.0 - mask[:, None, None, :].float()) * torch.finfo(torch.float32).min
    for i in range(cfg["num_hidden_layers"]):
        l = f"{p}encoder.layer.{i}."

        def heads(t):
            return t.view(b, L, nh, d).permute(0, 2, 1, 3)

        q, k, v = (heads(linear(x, l + "attention.self." + n)) for n in ("query", "key", "value"))
        scores = q @ k.transpose(-1, -2) / math.sqrt(d) + ext
        ctx = (torch.softmax(scores, dim=-1) @ v).permute(0, 2, 1, 3).reshape(b, L, h)
        x = layer_norm(linear(ctx, l + "attention.output.dense") + x, l + "attention.output.LayerNorm")
        inter = torch.nn.functional.gelu(linear(x, l + "intermediate.dense"))
        x = layer_norm(linear(inter, l + "output.dense") + x, l + "output.LayerNorm")
    pooled = torch.tanh(linear(x[:, 0], p + "pooler.dense"))
    return linear(pooled, "classifier")


def write_safetensors(path, state):
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    dtypes = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16"}
    for name, t in state.items():
        t = t.contiguous()
        raw = t.view(torch.int16).numpy().tobytes() if t.dtype == torch.bfloat16 else t.numpy().tobytes()
        header[name] = {"dtype": dtypes[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=1, sort_keys=True)
        f.write("\n")


def folder(name):
    d = os.path.join(HERE, name)
    os.makedirs(d, exist_ok=True)
    return d


def expected(d, state, cfg):
    logits = forward(state, cfg, INPUT_IDS, ATTENTION_MASK)
    write_json(os.path.join(d, "expected.json"), {
        "input_ids": INPUT_IDS, "attention_mask": ATTENTION_MASK, "logits": logits.tolist(), "torch": torch.__version__})


def as_float(state):
    return collections.OrderedDict((k, v.float()) for k, v in state.items())


# cls: a fine-tuned classifier in both formats, with vocab.txt.
state = bert_state(CONFIG)
d = folder("cls")
write_json(os.path.join(d, "config.json"), CONFIG)
with open(os.path.join(d, "vocab.txt"), "w") as f:
    f.write("\n".join(VOCAB) + "\n")
write_json(os.path.join(d, "tokenizer_config.json"), {"do_lower_case": True, "model_max_length": 64})
write_safetensors(os.path.join(d, "model.safetensors"), state)
torch.save(state, os.path.join(d, "pytorch_model.bin"))
expected(d, state, CONFIG)

# cls-fp16: the same architecture saved in half precision, pytorch_model.bin only.
half = collections.OrderedDict((k, (v * 0.9).half()) for k, v in state.items())
d = folder("cls-fp16")
write_json(os.path.join(d, "config.json"), CONFIG)
torch.save(half, os.path.join(d, "pytorch_model.bin"))
expected(d, as_float(half), CONFIG)

# cls-bf16-sharded: bfloat16, two .bin shards and their index.
bf = collections.OrderedDict((k, (v * 1.1).bfloat16()) for k, v in state.items())
d = folder("cls-bf16-sharded")
write_json(os.path.join(d, "config.json"), CONFIG)
names = list(bf)
shards = {"pytorch_model-00001-of-00002.bin": names[: len(names) // 2], "pytorch_model-00002-of-00002.bin": names[len(names) // 2:]}
weight_map = {}
for shard, keys in shards.items():
    torch.save(collections.OrderedDict((k, bf[k]) for k in keys), os.path.join(d, shard))
    weight_map.update({k: shard for k in keys})
write_json(os.path.join(d, "pytorch_model.bin.index.json"), {"metadata": {"total_size": sum(v.numel() * 2 for v in bf.values())}, "weight_map": weight_map})
expected(d, as_float(bf), CONFIG)

# base: a BertForMaskedLM-style checkpoint (BertModel names, no classifier, an MLM head whose decoder shares the word
# embeddings' storage, a pooler weight stored as a transposed view), with tokenizer.json instead of vocab.txt.
base_cfg = {k: v for k, v in CONFIG.items() if k not in ("id2label", "label2id")}
base_cfg["architectures"] = ["BertForMaskedLM"]
base = bert_state(CONFIG, prefix="", head=False)
base["pooler.dense.weight"] = base["pooler.dense.weight"].t().contiguous().t()  # same values, column-major storage
assert not base["pooler.dense.weight"].is_contiguous()
base["cls.predictions.bias"] = torch.zeros(CONFIG["vocab_size"])
base["cls.predictions.decoder.weight"] = base["embeddings.word_embeddings.weight"]  # tied: one storage
d = folder("base")
write_json(os.path.join(d, "config.json"), base_cfg)
torch.save(base, os.path.join(d, "pytorch_model.bin"))
write_json(os.path.join(d, "tokenizer.json"), {"version": "1.0", "model": {"type": "WordPiece", "unk_token": "[UNK]",
           "continuing_subword_prefix": "##", "vocab": {t: i for i, t in enumerate(VOCAB)}}})
pw = base["pooler.dense.weight"]
write_json(os.path.join(d, "expected.json"), {
    "pooler.dense.weight[0][:4]": pw[0, :4].tolist(), "pooler.dense.weight[:4][0]": pw[:4, 0].tolist(),
    "word_embeddings_sum": float(base["embeddings.word_embeddings.weight"].double().sum()), "torch": torch.__version__})
print("fixtures written with torch", torch.__version__)
