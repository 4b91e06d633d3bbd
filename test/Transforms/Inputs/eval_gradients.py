"""Runs xf-differentiate's @loss_and_gradients in float64 and checks it against the oracle.

Reads the pass's output printed generically (`xf-opt … --mlir-print-op-generic`), interprets
@loss_and_gradients op by op with numpy (each xf op's meaning from docs/dialect.md and
docs/training.md), on a random GPT-2 checkpoint of test/reference, and compares the loss and
every gradient with test/reference/training.gpt2_loss_and_grads (itself checked against finite
differences) and, independently, a few entries of each gradient with central finite
differences of the interpreted @forward.

Prints one line per tensor and `ok` at the end; exits 1 on the first mismatch.
Error measure: max|interpreted − oracle| / max|oracle| per tensor.
"""
import argparse
import math
import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "reference"))
from checkpoints import hparams, random_checkpoint  # noqa: E402
from architectures import forward as oracle_forward  # noqa: E402
from primitives import (gelu_erf, gelu_tanh, layer_norm, relu, rms_norm,  # noqa: E402
                        rotary_embedding, silu, softmax)
import training as oracle  # noqa: E402

OP = re.compile(r'^\s*(?:(%[\w]+)(?::(\d+))? = )?"([\w.]+)"\((.*?)\)\s*(?:<\{(.*)\}>)?\s*:\s*'
                r'\((.*?)\) -> (.*)$')
FUNC = re.compile(r'sym_name = "(\w+)"')
BLOCK_ARGS = re.compile(r"(%\w+):")


def parse_functions(text):
    """name -> list of (results, op name, operands, attributes, result types)"""
    funcs, current = {}, None
    for line in text.splitlines():
        if '"func.func"' in line:
            current = funcs.setdefault(FUNC.search(line).group(1), [])
            continue
        if current is not None and line.strip().startswith("^bb0"):
            current.append((BLOCK_ARGS.findall(line), "block.arguments", [], {}, []))
            continue
        if current is None or not line.strip():
            continue
        m = OP.match(line)
        if not m:
            if '"func.return"' in line:
                operands = re.search(r'"func.return"\((.*?)\)', line).group(1)
                current.append(([], "func.return", _operands(operands), {}, []))
            continue
        name, count, op, operands, attrs, _, result_types = m.groups()
        count = int(count) if count else (1 if name else 0)
        results = [name] if count == 1 else [f"{name}#{i}" for i in range(count)]
        types = re.findall(r"tensor<([^>]*)>", result_types)
        current.append((results, op, _operands(operands), _attributes(attrs or ""), types))
    return funcs


def _operands(text):
    return [o.strip() for o in text.split(",") if o.strip()]


def _attributes(text):
    out = {}
    for key, value in re.findall(r"(\w+)(?: = ([^,]+?(?:<[^>]*>)?))?(?:,|$)", text):
        if key:
            out[key] = value.strip() if value else True
    return out


def _int(attrs, key):
    return int(attrs[key].split(":")[0])


def _float(attrs, key, default=None):
    return float(attrs[key].split(":")[0]) if key in attrs else default


def _shape(type_text):
    return [None if d == "?" else int(d) for d in type_text.split("x")[:-1]]


def _attention_probs(q, k, mask_kind, scale):
    S = scale * (q @ k.T)
    if mask_kind == 1:  # causal (equal lengths here)
        S = np.where(np.tril(np.ones(S.shape, dtype=bool)), S, -np.inf)
    return softmax(S, axis=1)


def interpret(ops, W, args):
    """args: the function's arguments in order"""
    env = {}
    for results, op, operands, attrs, types in ops:
        if op == "block.arguments":
            env.update(zip(results, args))
            continue
        x = [env[o] for o in operands]
        if op == "func.return":
            return x
        if op == "xf.parameter":
            out = W[attrs["name"].strip('"')]
        elif op == "xf.token_embed":
            out = x[0][x[1]]
        elif op == "xf.pos_embed":
            out = x[0][:len(x[1])]
        elif op == "xf.add":
            out = x[0] + x[1]
        elif op == "xf.mul":
            out = x[0] * x[1]
        elif op == "xf.layer_norm":
            g, b = (x[1], x[2]) if len(x) == 3 else (None, None)
            out = layer_norm(x[0], g, b, _float(attrs, "epsilon"))
        elif op == "xf.rms_norm":
            out = rms_norm(x[0], x[1] if len(x) == 2 else np.ones(x[0].shape[1]),
                           _float(attrs, "epsilon"))
        elif op == "xf.relu":
            out = relu(x[0])
        elif op == "xf.silu":
            out = silu(x[0])
        elif op == "xf.rms_norm_grad":
            gamma = x[2] if len(x) == 3 else np.ones(x[0].shape[1])
            out = oracle.rms_norm_backward(x[0], gamma, _float(attrs, "epsilon"), x[1])[0]
        elif op == "xf.rms_norm_gamma_grad":
            out = oracle.rms_norm_backward(x[0], np.ones(x[0].shape[1]),
                                           _float(attrs, "epsilon"), x[1])[1]
        elif op == "xf.relu_grad":
            out = oracle.relu_backward(x[0], x[1])
        elif op == "xf.silu_grad":
            out = oracle.silu_backward(x[0], x[1])
        elif op == "xf.linear":
            w = x[1].T if "transpose_weight" in attrs else x[1]
            out = x[0] @ w + (x[2] if len(x) == 3 else 0.0)
        elif op == "xf.gemm":
            # act(x·W + b) + residual; operandSegmentSizes says which optional operands exist
            sizes = [int(n) for n in re.findall(r"\d+", attrs["operandSegmentSizes"])[1:]]
            it = iter(x)
            xin, w = next(it), next(it)
            bias = next(it) if sizes[2] else 0.0
            residual = next(it) if sizes[3] else 0.0
            y = xin @ (w.T if "transpose_weight" in attrs else w) + bias
            act = _int(attrs, "activation")
            if act == 5:  # swiglu: the weight holds [W_gate | W_up]
                n = y.shape[1] // 2
                y = silu(y[:, :n]) * y[:, n:]
            else:
                y = [lambda v: v, relu, gelu_tanh, gelu_erf, silu][act](y)
            out = y + residual
        elif op == "xf.matmul":
            out = x[0] @ (x[1].T if "transpose_rhs" in attrs else x[1])
        elif op == "xf.unembed":
            out = x[0] @ (x[1].T if "tied" in attrs else x[1])
        elif op == "xf.slice":
            axis, offset = _int(attrs, "axis"), _int(attrs, "offset")
            size = _shape(types[0])[axis]
            out = np.take(x[0], range(offset, offset + size), axis=axis)
        elif op == "xf.concat":
            out = np.concatenate(x, axis=_int(attrs, "axis"))
        elif op == "xf.transpose":
            out = x[0].T
        elif op == "xf.gelu":
            out = (gelu_tanh if _int(attrs, "approximation") == 1 else gelu_erf)(x[0])
        elif op == "xf.attention":
            heads = _int(attrs, "heads")
            kv = _int(attrs, "kv_heads") if "kv_heads" in attrs else heads
            dk, dv, group = x[0].shape[1] // heads, x[2].shape[1] // kv, heads // kv
            scale = _float(attrs, "scale", 1.0 / math.sqrt(dk))
            q, k = x[0], x[1]
            if "rope" in attrs:  # fused rotary positions: query t at t + (ℓ_z − ℓ), key s at s
                pairing = "adjacent" if _int(attrs, "rope") == 0 else "halves"
                base = _float(attrs, "rope_base")
                q = rotary_embedding(q, heads, base, pairing, start=k.shape[0] - q.shape[0])
                k = rotary_embedding(k, kv, base, pairing)
            out = np.concatenate([
                _attention_probs(q[:, h * dk:(h + 1) * dk],
                                 k[:, h // group * dk:(h // group + 1) * dk],
                                 _int(attrs, "mask"), scale)
                @ x[2][:, h // group * dv:(h // group + 1) * dv]
                for h in range(heads)], axis=1)
        elif op in ("xf.rope", "xf.rope_grad"):
            if len(x) != 1:
                raise SystemExit("eval_gradients: rope offsets not interpreted")
            pairing = "adjacent" if _int(attrs, "pairing") == 0 else "halves"
            f = rotary_embedding if op == "xf.rope" else oracle.rotary_backward
            out = f(x[0], _int(attrs, "heads"), _float(attrs, "base"), pairing)
        elif op == "xf.cross_entropy":
            out = oracle.next_token_loss(x[0], x[1])
        elif op == "xf.cross_entropy_grad":
            out = oracle.next_token_loss_backward(x[0], x[1])
        elif op == "xf.weight_grad":
            out = x[0].T @ x[1]
            out = out.T if "transpose_result" in attrs else out
        elif op == "xf.row_sum":
            out = x[0].sum(axis=0)
        elif op == "xf.layer_norm_grad":
            gamma = x[2] if len(x) == 3 else np.ones(x[0].shape[1])
            out = oracle.layer_norm_backward(x[0], gamma, _float(attrs, "epsilon"), x[1])[0]
        elif op == "xf.layer_norm_gamma_grad":
            out = oracle.layer_norm_backward(x[0], np.ones(x[0].shape[1]),
                                             _float(attrs, "epsilon"), x[1])[1]
        elif op == "xf.gelu_grad":
            rule = oracle.gelu_tanh_backward if _int(attrs, "approximation") == 1 \
                else oracle.gelu_erf_backward
            out = rule(x[0], x[1])
        elif op == "xf.attention_grad":
            if "scale" in attrs:
                raise SystemExit("eval_gradients: explicit attention scale not interpreted")
            mask = np.tril(np.ones((len(x[0]), len(x[1])), dtype=bool)) \
                if _int(attrs, "mask") == 1 else np.ones((len(x[0]), len(x[1])), dtype=bool)
            dq, dk_, dv_ = oracle.attention_heads_backward(
                x[0], x[1], x[2], _int(attrs, "heads"), mask, x[3],
                _int(attrs, "kv_heads") if "kv_heads" in attrs else None)
            for r, v in zip(results, (dq, dk_, dv_)):
                env[r] = v
            continue
        elif op == "xf.token_embed_grad":
            out = oracle.token_embedding_backward(_shape(types[0])[0], x[0], x[1])
        elif op == "xf.pos_embed_grad":
            out = oracle.positional_embedding_backward(_shape(types[0])[0], x[0])
        elif op == "xf.slice_grad":
            axis, offset = _int(attrs, "axis"), _int(attrs, "offset")
            shape = [d if d is not None else x[0].shape[i] for i, d in enumerate(_shape(types[0]))]
            out = np.zeros(shape)
            index = [slice(None)] * len(shape)
            index[axis] = slice(offset, offset + x[0].shape[axis])
            out[tuple(index)] = x[0]
        elif op == "arith.constant":
            out = np.zeros(_shape(types[0]))
        else:
            raise SystemExit(f"eval_gradients: no meaning for {op}")
        env[results[0]] = out
    raise SystemExit("eval_gradients: function without return")


def central_difference(loss_of, W, name, i):
    flat = W[name].reshape(-1)
    old = flat[i]
    flat[i] = old + 1e-6
    up = loss_of(W)
    flat[i] = old - 1e-6
    down = loss_of(W)
    flat[i] = old
    return (up - down) / 2e-6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ir")
    ap.add_argument("--arch", default="gpt2")
    ap.add_argument("--hparams", required=True)
    ap.add_argument("--tokens", default="3,14,15,9,2,6,14,5")
    ap.add_argument("--tol", type=float, default=1e-10)
    args = ap.parse_args()
    text = open(args.ir).read()
    funcs = parse_functions(text)
    hp = hparams(args.arch, args.hparams)
    W = {k: np.asarray(v, dtype=np.float64)
         for k, v in random_checkpoint(args.arch, hp, 7).items()}
    seq = np.array([int(t) for t in args.tokens.split(",")])
    x, y = seq[:-1], seq[1:]
    loss, *grads = interpret(funcs["loss_and_gradients"], W, [x, y])
    names = re.search(r'xf.gradients = \[(.*?)\]', text).group(1)
    names = [n.strip().strip('"') for n in names.split(",")]

    def interpreted_loss(Wd):
        logits, = interpret(funcs["forward"], Wd, [x])
        return oracle.next_token_loss(logits, y)

    def oracle_loss(Wd):
        return oracle.next_token_loss(oracle_forward(args.arch, Wd, hp, x), y)
    ref_loss = oracle_loss(W)
    print(f"loss {loss:.12f} oracle {ref_loss:.12f}")
    bad = abs(loss - ref_loss) > args.tol * abs(ref_loss)
    if sorted(names) != sorted(W):
        print("gradient names differ from the checkpoint's:", sorted(set(names) ^ set(W)))
        return 1
    # gpt2: the oracle's backward, every entry; other architectures: central differences
    # of the oracle's forward at sampled entries.
    ref = oracle.gpt2_loss_and_grads(W, hp, x, y)[1] if args.arch == "gpt2" else None
    pick = np.random.default_rng(2)
    for name, g in zip(names, grads):
        scale = max(np.max(np.abs(g)), 1e-300)
        entries = pick.choice(g.size, min(g.size, 4), replace=False)
        if ref is not None:
            err = np.max(np.abs(g - ref[name])) / np.max(np.abs(ref[name]))
            what = "oracle backward"
        else:
            err = max(abs(central_difference(oracle_loss, W, name, i) - g.reshape(-1)[i])
                      for i in entries) / scale
            what = "oracle finite differences"
        # and, independently of the oracle, central differences of the interpreted @forward
        fd = max(abs(central_difference(interpreted_loss, W, name, i) - g.reshape(-1)[i])
                 for i in entries[:2]) / scale
        print(f"{name:32s} rel.err vs {what} {err:.2e}  vs finite differences {fd:.2e}")
        bad |= not (err <= (args.tol if ref is not None else 1e-6)) or not (fd <= 1e-6)
    if bad:
        print("MISMATCH")
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
