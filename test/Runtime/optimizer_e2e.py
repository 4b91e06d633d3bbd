"""libxfrt's optimizer (runtime/lib/Optimizer.cpp) against the float64 oracle (training.py).

Run by ctest: optimizer_e2e.py XF_OPTIMIZER_STEPS REFERENCE_DIR. Three steps on a matrix (weight
decay applies) and a vector (it does not), through warm-up and the cosine, with clipping active
on some steps. Error measure: max|xf − oracle| / max|oracle| over the updated weights; the
float32 master weights must match to 1e-6 (float32 rounding is ~6e-8 per operation).
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

TOOL, REFERENCE = sys.argv[1:3]
sys.path.insert(0, REFERENCE)
import training  # noqa: E402

rng = np.random.default_rng(4)
w0 = rng.normal(size=(5, 7)).astype(np.float32)
b0 = rng.normal(size=7).astype(np.float32)
grads = [(rng.normal(size=(5, 7)).astype(np.float32) * s,
          rng.normal(size=7).astype(np.float32) * s) for s in (3.0, 0.1, 1.0)]
LR, WARMUP, TOTAL, MIN_LR, WD, MAX_NORM = 0.05, 2, 3, 0.005, 0.1, 2.0
failed = False

with tempfile.TemporaryDirectory() as d:
    np.save(os.path.join(d, "w.npy"), w0)
    np.save(os.path.join(d, "b.npy"), b0)
    files = []
    for i, (gw, gb) in enumerate(grads):
        for name, g in (("gw", gw), ("gb", gb)):
            files.append(os.path.join(d, f"{name}{i}.npy"))
            np.save(files[-1], g)
    for kind in ("adamw", "sgd"):
        out = os.path.join(d, kind)
        p = subprocess.run([TOOL, kind, str(LR), str(WARMUP), str(TOTAL), str(MIN_LR), str(WD),
                            str(MAX_NORM), out, os.path.join(d, "w.npy"),
                            os.path.join(d, "b.npy"), *files],
                           capture_output=True, text=True, timeout=60)
        if p.returncode != 0:
            print(kind, "failed:", p.stderr)
            sys.exit(1)
        params = {"w": w0.astype(np.float64), "b": b0.astype(np.float64)}
        state = {}
        for step, (line, (gw, gb)) in enumerate(zip(p.stdout.splitlines(), grads)):
            g, norm = training.clip_by_global_norm({"w": gw.astype(np.float64),
                                                    "b": gb.astype(np.float64)}, MAX_NORM)
            lr = training.learning_rate(step, LR, WARMUP, TOTAL, MIN_LR)
            _, _, _, xf_lr, _, xf_norm = line.split()
            if abs(float(xf_lr) - lr) > 1e-15 * lr or abs(float(xf_norm) - norm) > 1e-12 * norm:
                print(f"{kind} step {step}: lr/norm {xf_lr}/{xf_norm} vs oracle {lr}/{norm}")
                failed = True
            if kind == "sgd":
                params = training.sgd_step(params, g, lr)
            else:
                params = training.adamw_step(params, g, state, step + 1, lr, weight_decay=WD)
        for name in ("w", "b"):
            got = np.load(f"{out}.{name}.npy").astype(np.float64)
            ref = params[name]
            err = np.max(np.abs(got - ref)) / np.max(np.abs(ref))
            moved = np.max(np.abs(ref - (w0 if name == "w" else b0)))
            print(f"{kind} {name}: rel.err {err:.2e} (update size {moved:.2e})")
            failed |= not err <= 1e-6
print("MISMATCH" if failed else "ok")
sys.exit(1 if failed else 0)
