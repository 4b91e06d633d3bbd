#!/opt/xf-venv/bin/python
"""Training throughput and peak memory: an xf trainer beside PyTorch eager and torch.compile.

Usage: test/bench/run_training.py [--build DIR] [--threads N] [--steps N] [--batch B]
                                  [--seq-len L] [--workdir DIR] [--hf-python PY]

The model: GPT-2 (examples/gpt2.xf) shrunk to L = 4, H = 4, d_e = 256, d_mlp = 1024 with the
full 50 257-token vocabulary and 1 024 positions (the issue's "small GPT"). The same random
ids feed both; each run takes --steps AdamW steps of --batch sequences of --seq-len positions
(forward, backward, update; clipping at 1, lr 1e-4), and tokens/s is counted over the steps
after the first two (warm-up). xf: `xfc --train -o` and the trainer's own tokens/s over
--log; PyTorch: GPT2LMHeadModel float32 with torch.optim.AdamW, torch.set_num_threads(N),
eagerly and under torch.compile (in the --hf-python venv, outside xf's dependencies). Peak
memory: each process's VmHWM. Prints a table with the ratios; asserts nothing (one run on a
shared machine: docs/bench.md says how to read it).
"""
import argparse
import csv
import os
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
HP = dict(L=4, H=4, d_e=256, d_mlp=1024)

TORCH = r'''
import resource, sys, time, torch
from transformers import GPT2Config, GPT2LMHeadModel
L, H, D, M, steps, batch, seq, threads, mode, data = sys.argv[1:11]
L, H, D, M, steps, batch, seq, threads = map(int, (L, H, D, M, steps, batch, seq, threads))
torch.set_num_threads(threads)
torch.manual_seed(0)
cfg = GPT2Config(n_layer=L, n_head=H, n_embd=D, n_inner=M, vocab_size=50257, n_positions=1024,
                 resid_pdrop=0, embd_pdrop=0, attn_pdrop=0)
model = GPT2LMHeadModel(cfg)
model.train()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01)
ids = torch.tensor([int(t) for t in open(data).read().split()], dtype=torch.long)
step_fn = model
if mode == "compile":
    step_fn = torch.compile(model)
g = torch.Generator().manual_seed(1)
times = []
for s in range(steps):
    starts = torch.randint(0, len(ids) - seq - 1, (batch,), generator=g)
    x = torch.stack([ids[o:o + seq] for o in starts])
    y = torch.stack([ids[o + 1:o + seq + 1] for o in starts])
    t0 = time.perf_counter()
    logits = step_fn(x).logits
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    times.append(time.perf_counter() - t0)
rate = batch * seq * (steps - 2) / sum(times[2:])
print(rate, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, float(loss))
'''


def vmhwm_of(cmd, env):
    """Runs cmd, returning (stdout, peak resident bytes) from /proc while it runs."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    peak = 0
    status = f"/proc/{p.pid}/status"
    while p.poll() is None:
        try:
            for line in open(status):
                if line.startswith("VmHWM:"):
                    peak = max(peak, int(line.split()[1]) * 1024)
        except OSError:
            pass
        try:
            p.wait(timeout=0.05)
        except subprocess.TimeoutExpired:
            pass
    out, err = p.communicate()
    if p.returncode:
        sys.exit(f"{cmd[0]} failed: {err}")
    return out, peak


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--workdir")
    ap.add_argument("--hf-python", default="/opt/hf-venv/bin/python")
    ap.add_argument("--no-compile", action="store_true")
    a = ap.parse_args()
    work = a.workdir or tempfile.mkdtemp(prefix="xf-bench-training-")
    os.makedirs(work, exist_ok=True)
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads), MKL_NUM_THREADS=str(a.threads),
               HL_NUM_THREADS=str(a.threads))
    exe = os.path.join(work, "trainer")
    defines = [x for k, v in HP.items() for x in ("-D", f"{k}={v}")]
    subprocess.run([os.path.join(a.build, "bin", "xfc"), str(ROOT / "examples" / "gpt2.xf"),
                    "--train", *defines, "-o", exe], check=True)
    import random
    rng = random.Random(0)
    data = os.path.join(work, "data.ids")
    with open(data, "w") as f:
        f.write(" ".join(str(rng.randrange(50257)) for _ in range(100000)))
    log = os.path.join(work, "log.csv")
    _, xf_peak = vmhwm_of([exe, "--data", data, "--steps", str(a.steps), "--batch", str(a.batch),
                           "--seq-len", str(a.seq_len), "--lr", "1e-4", "--threads",
                           str(a.threads), "--log", log, "--quiet"], env)
    with open(log) as f:
        rows = list(csv.DictReader(f))
    # tokens/s over the steps after the first two, from the trainer's cumulative rate.
    n = len(rows)
    t_all = n * a.batch * a.seq_len / float(rows[-1]["tokens_per_s"])
    t_two = 2 * a.batch * a.seq_len / float(rows[1]["tokens_per_s"])
    xf_rate = (n - 2) * a.batch * a.seq_len / (t_all - t_two)
    results = [("xf", xf_rate, xf_peak)]
    script = os.path.join(work, "torch_train.py")
    with open(script, "w") as f:
        f.write(TORCH)
    for mode in ["eager"] + ([] if a.no_compile else ["compile"]):
        out, peak = vmhwm_of([a.hf_python, script, *map(str, HP.values()), str(a.steps),
                              str(a.batch), str(a.seq_len), str(a.threads), mode, data], env)
        rate, _, _ = out.split()
        results.append((f"torch {mode}", float(rate), peak))
    print(f"GPT-2 L=4 d_e=256 (N_V 50257), batch {a.batch} x {a.seq_len}, {a.threads} threads, "
          f"{a.steps} steps")
    print(f"{'':14s} {'tokens/s':>10s} {'xf ×':>6s} {'peak MiB':>9s}")
    for name, rate, peak in results:
        print(f"{name:14s} {rate:10.0f} {xf_rate / rate:6.2f} {peak / 2**20:9.0f}")


if __name__ == "__main__":
    main()
