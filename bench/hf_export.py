# An HF transformers text model exported to ONNX as users export one, for bench/hf_text.sh: the
# architecture of a public checkpoint with random weights (seed 0; no download), token ids and an
# attention mask as inputs (batch and sequence dynamic in the file), opset 14, the TorchScript exporter;
# output "output" (the logits). Also writes BATCH x SEQ random ids and an all-ones mask as .npy beside it.
#   usage: PY bench/hf_export.py NAME OUT.onnx BATCH SEQ   (PY with torch and transformers)
#   NAME: bert_base (bert-base-uncased, a 2-class head), distilbert (distilbert-base-uncased, 2 classes),
#         gpt2 (gpt2, the LM head)
import sys

import numpy as np
import torch
import transformers as tf


class Logits(torch.nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, ids, mask):
        return self.m(input_ids=ids, attention_mask=mask).logits


def build(name):
    if name == "bert_base":
        return tf.BertForSequenceClassification(tf.BertConfig(num_labels=2))
    if name == "distilbert":
        return tf.DistilBertForSequenceClassification(tf.DistilBertConfig(num_labels=2))
    if name == "gpt2":
        return tf.GPT2LMHeadModel(tf.GPT2Config())
    raise SystemExit(f"unknown model {name}")


if __name__ == "__main__":
    name, path, batch, seq = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    torch.manual_seed(0)
    model = Logits(build(name)).eval()
    ids = torch.randint(0, 1000, (batch, seq))
    mask = torch.ones(batch, seq, dtype=torch.long)
    axes = {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"}, "output": {0: "batch"}}
    torch.onnx.export(model, (ids, mask), path, opset_version=14, input_names=["input_ids", "attention_mask"],
                      output_names=["output"], dynamic_axes=axes, dynamo=False)
    np.save(path + ".input_ids.npy", ids.numpy())
    np.save(path + ".attention_mask.npy", mask.numpy())
