"""A trainer executable learns: tiny.xf overfits a tiny corpus, deterministically, and resumes.

Run by ctest: overfit_e2e.py XFC WORK_DIR. The corpus: 200 token ids drawn uniformly from the
64 of tiny.xf's vocabulary (seed 1), so the first loss is ~ln 64 = 4.16 and only memorising the
stream brings it down. 400 AdamW steps (batch 4, 32 positions, lr 1e-2 with 20 warm-up steps
and the cosine): the mean loss of the last 20 steps must be below 0.5 (seen 0.12; it takes
under a second). Then: the same command gives the same losses (a seed fixes the run), and
stopping at step 200 with --save-state and resuming to 400 gives the same final weights and
losses, bit for bit, as the uninterrupted run.
"""
import os
import random
import subprocess
import sys

XFC, WORK = sys.argv[1:3]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.makedirs(WORK, exist_ok=True)
exe = os.path.join(WORK, "tiny-trainer")
subprocess.run([XFC, os.path.join(ROOT, "examples", "tiny.xf"), "--train", "-o", exe],
               check=True, timeout=600)
rng = random.Random(1)
corpus = os.path.join(WORK, "corpus.ids")
with open(corpus, "w") as f:
    f.write(" ".join(str(rng.randrange(64)) for _ in range(200)) + "\n")
COMMON = ["--data", corpus, "--steps", "400", "--lr", "1e-2", "--warmup", "20", "--batch", "4",
          "--seq-len", "32", "--seed", "1", "--quiet"]


def train(tag, *extra):
    log = os.path.join(WORK, tag + ".csv")
    save = os.path.join(WORK, tag + ".safetensors")
    subprocess.run([exe, *COMMON, "--log", log, "--save", save, *extra], check=True, timeout=300)
    with open(log) as f:
        rows = [line.split(",") for line in f.read().splitlines()[1:]]
    with open(save, "rb") as f:
        weights = f.read()
    return [(int(r[0]), r[1]) for r in rows], weights


failed = False
losses, weights = train("a")
first, tail = float(losses[0][1]), [float(l) for _, l in losses[-20:]]
print(f"loss: step 1 {first:.4f}, mean of the last 20 steps {sum(tail) / 20:.4f}")
if not (4.0 < first < 4.3 and sum(tail) / 20 < 0.5):
    print("FAIL: the tiny model did not overfit the corpus")
    failed = True
again, weights_again = train("b")
if again != losses or weights_again != weights:
    print("FAIL: the same seed gave another run")
    failed = True
state = os.path.join(WORK, "state.safetensors")
half, _ = train("c", "--stop-at", "200", "--save-state", state)
rest, resumed = train("d", "--resume", state)
if half + rest != losses or resumed != weights:
    print("FAIL: stopping at 200 and resuming differs from the run without a stop")
    failed = True
print("determinism and resume: " + ("differ" if failed else "bitwise equal"))
sys.exit(1 if failed else 0)
