"""The compiled backward (xf_train_step) against the float64 oracle, through trainer executables.

Run by ctest: gradients_e2e.py XFC REFERENCE_DIR WORK_DIR. For each decoder example, shrunk
with -D, `xfc --train -o` builds a trainer; for a random float32 checkpoint
(test/reference/checkpoints.py) and a random window of ids, `trainer --gradients` writes the
mean gradient of a batch and prints the loss. The trainer's --data is an .ids file holding
exactly that window, so every draw is it (a batch of 2 is the window twice: the mean must be
its gradient). The same float32 weights, widened to float64, go to the oracle:
 - GPT-2 (tiny.xf: attention on column slices of one QKV activation; gpt2.xf: xf.mha over
   parameter slices of c_attn, whose gradients add into one output in place): the oracle's
   backward training.gpt2_loss_and_grads, every entry of every tensor; tiny.xf also built
   with -D ℓ_max=288, so sequences of 288 and 257 positions span two weight-gradient chunks
   of 256 rows, the second partial.
 - gopher.xf (RMSNorm, no biases), compact.xf (ReLU, bidirectional attention, per-head
   weights concatenated and transposed; trained here by next-token, --objective) and llama.xf
   (grouped K/V heads, rotary positions, SwiGLU): central differences (h = 1e-6) of the oracle
   forward's loss at 6 sampled entries of each tensor.
 - transformer.xf (Alg. 11: sinusoidal positions, bidirectional encoder, causal decoder,
   cross-attention, untied unembedding) on a one-pair file (source<TAB>target): the loss of the
   target's next tokens given the source, central differences as above.
 - bert-mlm.xf (Alg. 9 with its head, post-LN, GELU erf, the token-type row, tied
   unembedding) by Alg. 12's masked-token loss: the trainer prints the positions it masked
   in each sequence; the oracle puts the mask token there and takes the mean loss over them
   (training.masked_token_loss), central differences as above. Also: the share of masked
   positions over 200 sequences is --mask-prob within 4 standard deviations, and a batch
   with no masked position has loss 0 and zero gradients.
Error measure, per tensor: max|xf − oracle| / max|oracle| over the compared entries (for
sampled entries divided by the largest |xf| entry of the tensor instead); bound 1e-4 (float32
arithmetic: seen ~1e-6). A tensor whose sampled differences are all zero (≤ 1e-7 of the model's
largest gradient: BERT's key biases, whose gradient is exactly 0 because softmax ignores the
q·b_k added to a whole row of scores) must have max|xf| ≤ 1e-6 of the model's largest
gradient (printed scaled to the 1e-4 bound). The loss: relative error ≤ 1e-5.
"""
import os
import subprocess
import sys

import numpy as np

XFC, REFERENCE, WORK = sys.argv[1:4]
sys.path.insert(0, REFERENCE)
import safetensors_io  # noqa: E402
import training  # noqa: E402
from architectures import forward as oracle_forward  # noqa: E402
from checkpoints import hparams, random_checkpoint  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.makedirs(WORK, exist_ok=True)
failed = False


def build(example, defines):
    exe = os.path.join(WORK, "-".join([example] + [d.replace("=", "") for d in defines]))
    cmd = [XFC, os.path.join(ROOT, "examples", example + ".xf"), "--train", "-o", exe]
    for d in defines:
        cmd += ["-D", d]
    subprocess.run(cmd, check=True, timeout=600)
    return exe


def masked_positions(stdout):
    """The trainer's `masked t1 t2 ...` lines (--gradients with the masked-token loss)."""
    return [np.array([int(t) for t in line.split()[1:]], dtype=int)
            for line in stdout.splitlines() if line.startswith("masked")]


def check(exe, arch, hp, ell, seed, batch=1, extra=(), masked=None, source_len=None):
    """masked: the mask token id for Alg. 12's loss, None for the next-token loss;
    source_len: an encoder-decoder's pair (Alg. 11), the source this long."""
    global failed
    rng = np.random.default_rng(seed)
    W = random_checkpoint(arch, hp, seed)
    wpath = os.path.join(WORK, f"w{seed}.safetensors")
    safetensors_io.save(wpath, W)
    window = rng.integers(0, hp["N_V"], size=ell + 1)
    x, y = window[:-1], window[1:]
    z = rng.integers(0, hp["N_V"], size=source_len) if source_len else None
    data = os.path.join(WORK, f"d{seed}.ids")
    with open(data, "w") as f:
        ids = " ".join(str(int(t)) for t in window)
        f.write((" ".join(str(int(t)) for t in z) + "\t" + ids if source_len else ids) + "\n")
    gpath = os.path.join(WORK, f"g{seed}.safetensors")
    p = subprocess.run([exe, "--data", data, "--weights", wpath,
                        "--seq-len", str(max(ell, source_len or 0)),
                        "--batch", str(batch), "--gradients", gpath, *extra],
                       capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        print(p.stdout, p.stderr)
        failed = True
        return
    loss_xf = float(p.stdout.split()[1])
    got = safetensors_io.load(gpath)
    W64 = {k: v.astype(np.float64) for k, v in W.items()}

    def loss_of(Wd):
        return training.next_token_loss(oracle_forward(arch, Wd, hp, x, source_tokens=z), y)

    if masked is not None:
        positions = masked_positions(p.stdout)
        if len(positions) != batch:
            print(f"FAIL: {batch} sequences but {len(positions)} 'masked' lines")
            failed = True
            return
        sequences = []
        for T in positions:
            xm = x.copy()
            xm[T] = masked
            sequences.append((xm, T))

        def loss_of(Wd):  # noqa: F811 — the batch's mean of Alg. 12's loss
            return float(np.mean([training.masked_token_loss(oracle_forward(arch, Wd, hp, xm), x, T)
                                  for xm, T in sequences]))

    if arch == "gpt2":
        loss, ref = training.gpt2_loss_and_grads(W64, hp, x, y)
    else:
        loss, ref = loss_of(W64), None
    err = abs(loss_xf - loss) / max(abs(loss), 1e-30)
    worst, ok = ("loss", err), err <= 1e-5
    pick = np.random.default_rng(seed + 100)
    if sorted(got) != sorted(W):
        print(f"FAIL: gradient names differ: {sorted(set(got) ^ set(W))}")
        ok = False
    largest = max(np.max(np.abs(g)) for g in got.values())
    for name in sorted(W):
        g, bound = got[name], 1e-4
        if ref is not None:
            e = np.max(np.abs(g - ref[name])) / max(np.max(np.abs(ref[name])), 1e-30)
        else:
            e, numeric = 0.0, []
            for i in pick.choice(g.size, min(g.size, 6), replace=False):
                flat = W64[name].reshape(-1)
                old = flat[i]
                flat[i] = old + 1e-6
                up = loss_of(W64)
                flat[i] = old - 1e-6
                down = loss_of(W64)
                flat[i] = old
                numeric.append((up - down) / 2e-6)
                e = max(e, abs(numeric[-1] - g.reshape(-1)[i]))
            if max(abs(n) for n in numeric) <= 1e-7 * largest:
                # A gradient that is zero exactly: a key bias adds q·b_k to every score of
                # a row, which softmax ignores. Relative to itself it is rounding noise, so
                # it is bounded against the model's largest gradient instead.
                e, bound = np.max(np.abs(g)) / largest, 1e-6
            else:
                e /= max(np.max(np.abs(g)), 1e-30)
        if e / bound > worst[1] / 1e-4:
            worst = (name, e * 1e-4 / bound)
        if not e <= bound:
            print(f"FAIL {os.path.basename(exe)} ℓ={ell}: {name}: relative error {e:.3g} "
                  f"(bound {bound:g})")
            ok = False
    print(f"{os.path.basename(exe)} ℓ={ell} batch={batch}: loss {loss_xf:.6f} (oracle {loss:.6f}), "
          f"{len(got)} gradients, worst {worst[0]} {worst[1]:.2e}")
    failed |= not ok


tiny = hparams("gpt2", "L=2,H=2,d_e=16,d_mlp=64,N_V=64,l_max=32")
exe = build("tiny", [])
for ell, seed in ((1, 1), (7, 2), (32, 3)):
    check(exe, "gpt2", tiny, ell, seed)
check(exe, "gpt2", tiny, 9, 4, batch=2)
longer = hparams("gpt2", dict(tiny, l_max=288))
exe = build("tiny", ["ℓ_max=288"])
for ell, seed in ((288, 5), (257, 6)):
    check(exe, "gpt2", longer, ell, seed)

gpt2 = hparams("gpt2", "L=2,H=2,d_e=16,d_mlp=24,N_V=37,l_max=12")
exe = build("gpt2", ["L=2", "H=2", "d_e=16", "d_mlp=24", "N_V=37", "ℓ_max=12"])
check(exe, "gpt2", gpt2, 11, 7)

others = {
    "gopher": dict(L=2, H=4, d_e=16, d_mlp=24, N_V=37, l_max=12),
    "compact": dict(L=2, H=3, d_e=16, d_qk=5, d_vo=6, d_ff=24, N_V=37, l_max=12),
    "llama": dict(L=2, H=4, H_kv=2, d_e=32, d_mlp=24, N_V=37, l_max=12),
}
for seed, (arch, hp) in enumerate(others.items(), start=8):
    defines = [("ℓ_max" if k == "l_max" else k) + "=" + str(v) for k, v in hp.items()]
    exe = build(arch, defines)
    # compact's attention is bidirectional, so its trainer defaults to masked tokens
    check(exe, arch, hparams(arch, hp), 10, seed, extra=["--objective", "next-token"])

# Alg. 12: BERT with its masked-token head.
bert = dict(L=2, H=4, d_e=16, d_mlp=24, N_V=37, l_max=12)
mlm = build("bert-mlm", [("ℓ_max" if k == "l_max" else k) + "=" + str(v) for k, v in bert.items()])
bert = hparams("bert_mlm", bert)
MASK = 36
check(mlm, "bert_mlm", bert, 11, 11, extra=["--mask-token", str(MASK)], masked=MASK)
check(mlm, "bert_mlm", bert, 9, 12, batch=2, extra=["--mask-token", str(MASK), "--mask-prob", "0.4"],
      masked=MASK)

# Alg. 11: the encoder-decoder (sinusoidal positions, bidirectional encoder, causal decoder
# self-attention, cross-attention to the encoded source, untied unembedding) on one
# source/target pair per line: every draw is the file's one pair.
seq2seq = dict(L_enc=2, L_dec=2, H=2, d_e=16, d_mlp=24, N_V=37)
exe = build("transformer", [f"{k}={v}" for k, v in seq2seq.items()])
seq2seq = hparams("transformer", seq2seq)
check(exe, "transformer", seq2seq, 8, 13, source_len=5)
check(exe, "transformer", seq2seq, 11, 14, source_len=12, batch=2)
check(exe, "transformer", seq2seq, 1, 15, source_len=1)

# The masking rule's rate, and a batch without a masked position.
data = os.path.join(WORK, "rate.ids")
with open(data, "w") as f:
    f.write(" ".join(str(i % 36) for i in range(400)) + "\n")
gpath = os.path.join(WORK, "rate.safetensors")
p = subprocess.run([mlm, "--data", data, "--seq-len", "10", "--batch", "200", "--mask-token",
                    str(MASK), "--mask-prob", "0.3", "--gradients", gpath],
                   capture_output=True, text=True, timeout=300)
share = sum(len(T) for T in masked_positions(p.stdout)) / 2000
sigma = (0.3 * 0.7 / 2000) ** 0.5
print(f"masked share over 200 sequences of 10: {share:.4f} (--mask-prob 0.3, σ {sigma:.4f})")
if p.returncode != 0 or not abs(share - 0.3) <= 4 * sigma:
    print("FAIL: masking rate", p.stderr)
    failed = True
p = subprocess.run([mlm, "--data", data, "--seq-len", "3", "--mask-token", str(MASK),
                    "--mask-prob", "1e-9", "--gradients", gpath],
                   capture_output=True, text=True, timeout=300)
zero = p.returncode == 0 and float(p.stdout.split()[1]) == 0.0 and \
    all(not np.any(g) for g in safetensors_io.load(gpath).values())
print(f"no masked position: loss {p.stdout.split()[1] if p.returncode == 0 else p.stderr}, "
      f"gradients all zero: {zero}")
failed |= not zero
sys.exit(1 if failed else 0)
