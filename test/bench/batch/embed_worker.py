"""Sentence embeddings of all-MiniLM-L6-v2 in /opt/hf-venv, for test/bench/run_batch.py.

usage: embed_worker.py BACKEND MODEL_DIR SENTENCES.txt OUT.npy --threads T --batch B --runs R

BACKEND st:  sentence-transformers' SentenceTransformer(MODEL_DIR).encode(sentences,
             batch_size=B, normalize_embeddings=True) in PyTorch fp32 (it sorts the inputs
             by length and pads each batch to its longest).
BACKEND ort: ONNX Runtime on BertModel exported with torch.onnx.export (dynamic batch and
             length), the same length-sorted batches of B padded to their longest,
             attention-masked mean pooling and L2 normalization in numpy (what the model's
             modules.json asks of sentence-transformers).
Prints one JSON line: {"seconds": [per run], "n": N}; every run embeds all sentences,
tokenization included, after one warm-up run. OUT.npy gets the last run's embeddings.
"""
import argparse
import json
import os
import sys
import tempfile
import time

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("backend", choices=["st", "ort"])
    ap.add_argument("model_dir")
    ap.add_argument("sentences")
    ap.add_argument("out")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    with open(a.sentences, encoding="utf-8") as f:
        sentences = [line.rstrip("\n") for line in f if line.strip()]
    import torch
    torch.set_num_threads(a.threads)
    if a.backend == "st":
        from sentence_transformers import SentenceTransformer
        model = SentenceTransformer(a.model_dir, device="cpu")

        def embed():
            return model.encode(sentences, batch_size=a.batch, normalize_embeddings=True,
                                convert_to_numpy=True, show_progress_bar=False)
    else:
        import onnxruntime as ort
        from tokenizers import Tokenizer
        from transformers import BertModel
        tok = Tokenizer.from_file(os.path.join(a.model_dir, "tokenizer.json"))
        tok.no_padding()
        tok.no_truncation()
        bert = BertModel.from_pretrained(a.model_dir).eval()
        path = os.path.join(tempfile.mkdtemp(prefix="xf-ort-"), "minilm.onnx")
        ids = torch.ones(2, 8, dtype=torch.int64)
        with torch.inference_mode():
            torch.onnx.export(bert, (ids, torch.ones_like(ids), torch.zeros_like(ids)), path,
                              input_names=["input_ids", "attention_mask", "token_type_ids"],
                              output_names=["last_hidden_state"], opset_version=18,
                              dynamic_shapes=({0: "batch", 1: "length"},) * 3, dynamo=True)
        so = ort.SessionOptions()
        so.intra_op_num_threads = a.threads
        so.inter_op_num_threads = 1
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        session = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])

        def embed():
            encoded = [e.ids for e in tok.encode_batch(sentences)]
            order = np.argsort([-len(e) for e in encoded], kind="stable")
            out = np.zeros((len(sentences), 384), dtype=np.float32)
            for begin in range(0, len(order), a.batch):
                rows = order[begin:begin + a.batch]
                width = max(len(encoded[r]) for r in rows)
                input_ids = np.zeros((len(rows), width), dtype=np.int64)
                mask = np.zeros((len(rows), width), dtype=np.int64)
                for k, r in enumerate(rows):
                    input_ids[k, :len(encoded[r])] = encoded[r]
                    mask[k, :len(encoded[r])] = 1
                hidden = session.run(None, {"input_ids": input_ids, "attention_mask": mask,
                                            "token_type_ids": np.zeros_like(input_ids)})[0]
                m = mask[:, :, None].astype(np.float32)
                pooled = (hidden * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)
                pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
                out[rows] = pooled
            return out
    embed()  # warm-up
    seconds = []
    for _ in range(a.runs):
        start = time.perf_counter()
        e = embed()
        seconds.append(time.perf_counter() - start)
    np.save(a.out, np.asarray(e, dtype=np.float32))
    sys.stdout.write(json.dumps({"seconds": seconds, "n": len(sentences)}) + "\n")


if __name__ == "__main__":
    main()
