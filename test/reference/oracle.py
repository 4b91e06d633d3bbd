#!/usr/bin/env python3
"""Command line of the xf numerics oracle (float64 numpy, independent of the compiler).

  forward:   oracle.py --arch gpt2 --hparams L=2,d_e=64 --weights W.safetensors --tokens 1,2,3
                       (--logits-out F.npy | --hidden-out F.npy) [--check-against E.npy]
  generate:  oracle.py --arch gpt2 ... --tokens 1,2 --generate --max-new-tokens 8
                       [--temperature 0] [--seed 0] [--eos ID]        (prints ids, comma-separated)
  random:    oracle.py --arch gpt2 --hparams ... --write-random W.safetensors --seed 7

--source-tokens gives the encoder input of --arch transformer. See README.md beside this file.
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import safetensors_io  # noqa: E402
from architectures import forward  # noqa: E402
from checkpoints import (ARCHS, DECODERS, check_weights, hparams,  # noqa: E402
                         random_checkpoint)
from inference import d_inference, ed_inference  # noqa: E402


def parse_ids(text, what):
    try:
        return [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise ValueError(f"{what} must be comma-separated integers, got {text!r}") from None


def relative_error(out, ref):
    """max|out − ref| / max|ref|, the project's executable-vs-oracle measure."""
    out, ref = np.asarray(out, np.float64), np.asarray(ref, np.float64)
    if out.shape != ref.shape:
        raise ValueError(f"shape {list(out.shape)} differs from the oracle's {list(ref.shape)}")
    if not np.all(np.isfinite(out)):
        return float("inf")
    scale = np.max(np.abs(ref))
    return float(np.max(np.abs(out - ref)) / (scale if scale > 0 else 1.0))


def build_parser():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n", 2)[2])
    ap.add_argument("--arch", required=True, choices=ARCHS)
    ap.add_argument("--hparams", default="", help="overrides, e.g. L=2,H=4,d_e=64,N_V=256")
    ap.add_argument("--weights", help=".safetensors file with the names of docs/checkpoints.md")
    ap.add_argument("--tokens", help="token ids, e.g. 1,2,3 (the target prefix for transformer)")
    ap.add_argument("--source-tokens", help="encoder input ids (transformer only)")
    ap.add_argument("--logits-out", help="write logits [ℓ, N_V] (decoders) to this .npy")
    ap.add_argument("--hidden-out", help="write final hidden states [ℓ, d_e] (bert, minilm)")
    ap.add_argument("--out-dtype", choices=("float64", "float32"), default="float64")
    ap.add_argument("--check-against", metavar="E.npy",
                    help="compare an executable's output with the oracle's; exit 1 above --tol")
    ap.add_argument("--tol", type=float, default=1e-4, help="bound on max|Δ|/max|ref|")
    ap.add_argument("--generate", action="store_true", help="run Alg. 14 / Alg. 15")
    ap.add_argument("--max-new-tokens", type=int, default=16)
    ap.add_argument("--temperature", type=float, default=0.0, help="0 means greedy")
    ap.add_argument("--seed", type=int, default=0, help="sampling / random-weights seed")
    ap.add_argument("--eos", type=int, help="stop after generating this id")
    ap.add_argument("--q8-gemm-inputs-from", type=int, metavar="ROW",
                    help="llama: round the inputs of projections and unembedding to Q8_0 in "
                         "rows >= ROW, as xfc --q8-gemm-inputs does in decode steps "
                         "(primitives.q8_0_rows)")
    ap.add_argument("--kv-float16", action="store_true",
                    help="gpt2, gopher, llama, llama_hf: round K and V to float16 before attention reads "
                         "them, as xfc --kv-cache-type=f16's KV cache holds them")
    ap.add_argument("--write-random", metavar="W.safetensors",
                    help="write a random float32 checkpoint for --arch/--hparams and exit")
    return ap


def run(args):
    hp = hparams(args.arch, args.hparams)
    if args.write_random:
        safetensors_io.save(args.write_random, random_checkpoint(args.arch, hp, args.seed),
                            meta={"arch": args.arch, "seed": args.seed,
                                  **{k: v for k, v in hp.items()}})
        return 0
    if not args.weights or args.tokens is None:
        raise ValueError("--weights and --tokens are required (or use --write-random)")
    W = safetensors_io.load(args.weights)
    check_weights(args.arch, hp, W)
    tokens = parse_ids(args.tokens, "--tokens")
    source = None if args.source_tokens is None else parse_ids(args.source_tokens,
                                                               "--source-tokens")
    if args.arch == "transformer" and source is None:
        raise ValueError("--arch transformer needs --source-tokens")
    q8 = args.q8_gemm_inputs_from
    if q8 is not None and q8 < 0:
        raise ValueError("--q8-gemm-inputs-from must be >= 0")
    if args.generate:
        if args.arch not in DECODERS:
            raise ValueError(f"{args.arch} is an encoder; it has no next-token distribution")
        if args.max_new_tokens < 0:
            raise ValueError("--max-new-tokens must be >= 0")
        if "l_max" in hp and len(tokens) + args.max_new_tokens > hp["l_max"]:
            raise ValueError(f"prompt ({len(tokens)}) + max-new-tokens ({args.max_new_tokens}) "
                             f"exceeds l_max={hp['l_max']}")
        if args.arch == "transformer":
            new = ed_inference(lambda z, x: forward(args.arch, W, hp, x, z), source, tokens,
                               args.max_new_tokens, args.temperature, args.seed, args.eos)
        else:
            new = d_inference(lambda x: forward(args.arch, W, hp, x, q8_from=q8,
                                                kv_float16=args.kv_float16), tokens,
                              args.max_new_tokens, args.temperature, args.seed, args.eos)
        print(",".join(str(t) for t in new))
        return 0
    out = forward(args.arch, W, hp, tokens, source, q8_from=q8, kv_float16=args.kv_float16)
    want, other = ("--logits-out", "--hidden-out") if args.arch in DECODERS \
        else ("--hidden-out", "--logits-out")
    path = args.logits_out if args.arch in DECODERS else args.hidden_out
    if (args.hidden_out if args.arch in DECODERS else args.logits_out):
        raise ValueError(f"{args.arch} writes {want}, not {other}")
    if path:
        np.save(path, out.astype(args.out_dtype))
    if args.check_against:
        err = relative_error(np.load(args.check_against), out)
        ok = err <= args.tol
        print(f"{args.arch} {list(out.shape)}: max|Δ|/max|ref| = {err:.3e} "
              f"({'ok' if ok else 'FAIL'}, tol {args.tol:g})")
        return 0 if ok else 1
    if not path:
        raise ValueError(f"nothing to do: give {want}, --check-against or --generate")
    return 0


def main(argv=None):
    args = build_parser().parse_args(argv)
    try:
        return run(args)
    except (ValueError, OSError) as err:
        print(f"oracle: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
