#!/usr/bin/env python3
"""Runs `xfc --emit=mlir-gpu`'s tensor-core GEMM and attention kernels on the CPU and checks them
against float64 (docs/gpu.md, "Tensor cores", "Tensor-core attention"; ctest
gpu-tensor-core-emulation).

The kernel text is executed op by op as a GPU would run one thread block: its threads (128; the
wide GEMM tiles' 256: the function's known_block_size) in lockstep (each SSA value a numpy
array with one row per thread), shared memory per block,
every block of the grid in turn. The warp-collective operations are emulated from the PTX
ISA's fragment layouts, written here independently of the generator
(compiler/lib/Target/Cuda/TensorCoreGemmSource.cpp):
  ldmatrix .x4/.x2 [.trans]: lane 8i + r gives row r of 8 × 8 b16 matrix i (16 aligned
    bytes); lane L receives row L/4, b16 elements 2(L%4), 2(L%4)+1 (.trans: column L/4,
    rows 2(L%4), 2(L%4)+1) of each matrix;
  mma.sync m16n8k8 tf32: a = A[g][t], A[g+8][t], A[g][t+4], A[g+8][t+4]; b = B[t][g],
    B[t+4][g]; m16n8k16 bf16: pairs A[g][2t..], A[g+8][2t..], A[g][2t+8..], A[g+8][2t+8..];
    B[2t..][g], B[2t+8..][g]; c/d = C[g][2t], C[g][2t+1], C[g+8][2t], C[g+8][2t+1]
    (g = lane/4, t = lane%4), products of tf32 inputs read as truncated to 19 bits;
  gpu.shuffle xor: lane L reads lane L ^ offset of its warp.
  wgmma.mma_async m64n128k16 bf16 (`<name>_wg`, a block of one warpgroup): A and B read from
    shared memory through their 64-bit descriptors (address, LBO, SBO in 16-byte units, swizzle
    mode 1) in the canonical 128-byte-swizzled layouts — K-major: row r, k at (r / 8)·SBO +
    (r % 8)·128 + 2k; N-major B: (n / 64)·LBO + (k / 8)·SBO + (k % 8)·128 + 2(n % 64) — with
    the swizzle (address bits 4-6 ^= bits 7-9) on the absolute shared address: the dynamic
    shared memory sits at 0x410 (16-byte but not 1024-byte aligned), so a kernel must align its
    tiles itself; D in wgmma's fragments (register r of thread T: row 16(T / 32) + (T % 32) / 4
    + 8((r % 4) / 2), column 8(r / 4) + 2(T % 4) + r % 2). It reads only what a fence.proxy.async
    made visible since the last shared write, as the whole warpgroup (a barrier between the
    threads' writes and it, and between its wait and the next overwrite); no element a group
    in flight reads (committed, not yet retired by a wait.group N that leaves the N newest) may
    be written, nor the accumulators read before wait.group 0. Faults that must fail: no proxy
    fence, no wait, two groups let run on, stages aligned to 16 bytes, W read in the other
    layout.
  cp.async (nvgpu.device_async_copy, _create_group, _wait): a copy's source is read when it is
    issued, its destination poisoned (NaN) until its group completes, and a group completes
    only at a wait that leaves at most numGroups newer groups pending (cp.async.wait_group N),
    so a missing wait or a read of the buffer being filled gives NaN, and a read of the other
    buffer gives the wrong slice. Without --spec it also checks that both faults fail it.
  split-K: `<name>_tc32_splitk` over every block (x, y, z) into NaN-filled [S][M][cols]
    partials (each must be stored), then `<name>_tc_reduce` over its grid, as the launcher
    launches them, for S = 2 (every case) and S = 1, 2, 3 with K = 160 (five slices: ranges
    of 160; 96 + 64; 64 + 64 + 32); a third fault, every block z given K's first range, must
    fail it too.
  shared-memory hazards: per element of a shared tile, the thread that last wrote it and the
    barrier interval it did so in, and who read it in the current interval; a read of an
    element another thread wrote, or a write of one another thread read, since the last
    gpu.barrier fails (a missing barrier, which lockstep execution would otherwise hide; a
    cp.async's writes count when its group completes, and must not overwrite what another
    thread read since the last barrier when issued). A fourth fault drops the barrier that
    ends each K-loop (and attention key-tile) iteration: it must fail.
What this checks: the kernel's tiling, indices, clamping of rows past M, bounds of every
global and shared access, 16-byte alignment of ldmatrix rows and vector loads, the rounding
to tf32/bf16 and the epilogue, against float64 on the same rounded inputs (bound 1e-5
relative to the largest output) and on the exact inputs (printed: what the precision costs).
The attention kernel (one block per 64 queries and head, key tiles of 64, the online softmax
over the quad's shuffles) against softmax(scale · Q·Kᵀ, causal mask) · V in float64 on the same
rounded Q, K, V, within ATTENTION_BOUND (P is rounded for P·V).
What it does not: that the hardware agrees with these layouts (wgmma's are the PTX ISA's as
read here, and what MLIR's nvgpu.warpgroup.mma lowering produces for TMA's 128-byte swizzle), the
generated PTX, timing.
"""

import argparse
import math
import os
import re
import subprocess
import sys

import numpy as np

T = 128  # threads per block: the known_block_size of the function being run (use_block_size)
LANE = np.arange(T) % 32


def bf16_bits(f32):
    """float32 → bfloat16 bits, nearest even (arith.truncf)."""
    b = np.asarray(f32, np.float32).view(np.uint32).astype(np.uint64)
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)


def bf16_value(bits):
    return (np.asarray(bits, np.uint16).astype(np.uint32) << 16).view(np.float32)


def tf32_truncated(f32):
    return (np.asarray(f32, np.float32).view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)


def tf32_rounded(f32):
    """The kernel's rounding to tf32: + half an ulp, low 13 bits cleared."""
    b = np.asarray(f32, np.float32).view(np.uint32)
    return ((b + np.uint32(4096)) & np.uint32(0xFFFFE000)).view(np.float32)


def parse_type(text):
    """'vector<4x2xbf16>' → ((4, 2), 'bf16'); 'index' → ((), 'index')."""
    m = re.fullmatch(r"vector<([0-9x]+)x(\w+)>", text.strip())
    if m:
        return tuple(int(d) for d in m.group(1).split("x")), m.group(2)
    return (), text.strip()


NP = {"f32": np.float32, "bf16": np.uint16, "i32": np.int32, "index": np.int64,
      "f64": np.float64, "i64": np.int64}


class Hazards:
    """Shared-memory hazards between a block's threads, which lockstep execution would hide: a
    thread reading an element another thread wrote since the last gpu.barrier (read after
    write), or writing one another thread read since then (write after read) — a missing
    barrier. Per element: the thread that last wrote it and the barrier interval (epoch) it did
    so in, the thread that read it in the current interval (-2: several)."""

    def __init__(self, shape):
        self.writer, self.written = np.full(shape, -1), np.full(shape, -1)
        self.reader, self.read_in = np.full(shape, -1), np.full(shape, -1)

    def read(self, name, epoch, rows, cols, threads):
        rows, cols, threads = np.broadcast_arrays(rows, cols, threads)
        rows, cols, threads = rows.ravel(), cols.ravel(), threads.ravel()
        raw = (self.written[rows, cols] == epoch) & (self.writer[rows, cols] != threads)
        assert not raw.any(), (
            f"{name}: thread {threads[raw][0]} reads an element thread "
            f"{self.writer[rows, cols][raw][0]} wrote since the last barrier (a missing gpu.barrier)")
        flat = rows * self.reader.shape[1] + cols
        order = np.argsort(flat, kind="stable")
        flat, threads = flat[order], threads[order]
        starts = np.flatnonzero(np.r_[True, flat[1:] != flat[:-1]])
        first, low, high = flat[starts], np.minimum.reduceat(threads, starts), \
            np.maximum.reduceat(threads, starts)
        reader, read_in = self.reader.ravel(), self.read_in.ravel()  # views
        one = np.where(low == high, low, -2)
        before = np.where(read_in[first] == epoch, reader[first], one)
        reader[first] = np.where((before == one) | (read_in[first] != epoch), one, -2)
        read_in[first] = epoch

    def write(self, name, epoch, rows, cols, threads, record=True):
        rows, cols, threads = np.broadcast_arrays(rows, cols, threads)
        war = (self.read_in[rows, cols] == epoch) & (self.reader[rows, cols] != threads)
        assert not war.any(), (
            f"{name}: thread {threads[war][0]} writes an element another thread read since the "
            f"last barrier (a missing gpu.barrier)")
        if record:
            self.writer[rows, cols], self.written[rows, cols] = threads, epoch


THREAD = np.arange(T)
# wgmma kernels: the address memref.extract_aligned_pointer_as_index gives the dynamic shared
# memory (16-byte aligned but not 1024: the kernel must align its swizzled tiles itself), and
# the accumulator registers a thread per m64n128 product.
SHARED_BASE, WG_REGISTERS = 0x410, 64


def use_block_size(text):
    """Runs the next blocks with the threads of `text`'s gpu.func (known_block_size): 128, or
    the wide GEMM tiles' 256."""
    global T, LANE, THREAD
    T = int(re.search(r"known_block_size = array<i32: (\d+), 1, 1>", text).group(1))
    LANE, THREAD = np.arange(T) % 32, np.arange(T)


class Block:
    """One thread block's execution of a kernel body."""

    def __init__(self, lines, env, shared):
        self.lines, self.env, self.shared = lines, env, shared
        self.uncommitted, self.groups = [], []  # cp.async copies issued, and their groups
        self.epoch = 0  # gpu.barriers passed
        self.hazards = {name: Hazards(tile.shape) for name, tile in shared.items()}
        # wgmma: shared elements written (st.shared, cp.async) since the last proxy fence —
        # wgmma reads through the async proxy and must not see them
        self.unfenced = {name: np.zeros(tile.shape, bool) for name, tile in shared.items()}
        # the shared elements (name, rows, cols) each wgmma group in flight reads: committed
        # and not yet waited for (wait_group N leaves the N newest), then the uncommitted ones
        self.wgmma_groups, self.wgmma_reads, self.wgmma_fenced = [], [], False

    def val(self, name):
        name = name.strip()
        if "#" in name:
            base, i = name.split("#")
            return self.env[base][int(i)]
        return self.env[name]

    def run(self, start, end, mask):
        i = start
        while i < end:
            line = self.lines[i].strip()
            close = self.matching(i) if line.endswith("{") else None
            if line.startswith("scf.if"):
                cond = self.val(line.split()[1])
                self.run(i + 1, close, mask & cond.astype(bool))
                i = close + 1
                continue
            m = re.match(r"(%\w+):(\d+) = scf\.for %(\w+) = (%\w+) to (%\w+) step (%\w+) "
                         r"iter_args\((.*)\) -> ", line)
            if m:
                self.loop(m, i, close, mask)
                i = close + 1
                continue
            self.step(line, mask)
            i += 1

    def matching(self, i):
        depth = 0
        for j in range(i, len(self.lines)):
            depth += self.lines[j].count("{") - self.lines[j].count("}")
            if depth == 0:
                return j
        raise ValueError("unbalanced braces")

    def loop(self, m, i, close, mask):
        result, _, var, lo, hi, step, args = m.groups()
        names = [a.split("=")[0].strip() for a in args.split(",")]
        values = [self.val(a.split("=")[1]) for a in args.split(",")]
        for k in range(int(self.val(lo)[0]), int(self.val(hi)[0]), int(self.val(step)[0])):
            self.env["%" + var] = np.full(T, k, np.int64)
            for n, v in zip(names, values):
                self.env[n] = v
            self.run(i + 1, close - 1, mask)  # the body, then its scf.yield
            yielded = self.lines[close - 1].strip()
            assert yielded.startswith("scf.yield")
            values = [self.val(v) for v in yielded[len("scf.yield"):].split(":")[0].split(",")]
        self.env[result] = values

    def step(self, line, mask):
        if line == "gpu.barrier":
            self.epoch += 1
            return
        if line in ("gpu.return", "}"):
            return
        if line.startswith("vector.store"):
            return self.store(line, mask)
        if line.startswith("nvgpu.device_async_wait"):
            return self.async_wait(line)
        if line.startswith("nvvm."):
            return self.nvvm_statement(line)
        name, op = [s.strip() for s in line.split("=", 1)]
        self.env[name.split(":")[0]] = self.evaluate(op, mask)

    def evaluate(self, op, mask):
        kind = re.match(r"[\w.]+", op).group(0)
        rest = op[len(kind):].strip()
        ints = {"arith.addi": np.add, "arith.muli": np.multiply, "arith.subi": np.subtract,
                "arith.divui": np.floor_divide, "arith.remui": np.remainder,
                "arith.minui": np.minimum, "arith.andi": np.bitwise_and,
                "arith.xori": np.bitwise_xor, "arith.ori": np.bitwise_or,
                "arith.shrui": np.right_shift}
        floats = {"arith.addf": np.add, "arith.mulf": np.multiply, "arith.subf": np.subtract,
                  "arith.divf": np.divide, "arith.maximumf": np.maximum}
        if kind in ints or kind in floats:
            a, b = [self.val(v) for v in rest.split(":")[0].split(",")]
            with np.errstate(over="ignore"):
                return (ints.get(kind) or floats.get(kind))(a, b)
        if kind == "arith.constant":
            return self.constant(rest)
        if kind == "vector.fma":  # one rounding: the float64 a·b + c of float32 inputs, rounded
            a, b, c = [self.val(v).astype(np.float64) for v in rest.split(":")[0].split(",")]
            return (a * b + c).astype(np.float32)
        if kind == "vector.broadcast":
            v = self.val(rest.split(":")[0])
            shape, _ = parse_type(rest.split(" to ")[1])
            return np.repeat(v[:, None], shape[0], axis=1)
        if kind == "vector.reduction":  # <maximumf> or <add> over a vector's elements
            how, v = re.match(r"<(\w+)>, (%[\w#]+)", rest).groups()
            v = self.val(v)
            assert how in ("maximumf", "add")
            return v.max(axis=1) if how == "maximumf" else \
                v.astype(np.float64).sum(axis=1).astype(np.float32)
        if kind in ("gpu.dynamic_shared_memory", "memref.view"):  # the tiles (kernel_parts)
            return None
        if kind == "gpu.thread_id":
            return np.arange(T, dtype=np.int64)
        if kind == "gpu.block_id":
            return np.full(T, self.env["block_" + rest], np.int64)
        if kind == "gpu.grid_dim":
            return np.full(T, self.env["grid_" + rest], np.int64)
        if kind == "arith.cmpi":
            a, b = [self.val(v) for v in rest.split(":")[0].split(",")[1:]]
            assert rest.startswith(("ult", "eq"))
            return a < b if rest.startswith("ult") else a == b
        if kind == "gpu.shuffle":  # xor within the warp: lane L reads lane L ^ offset
            assert rest.startswith("xor ")
            v, offset, width = [self.val(x) for x in rest[4:].split(":")[0].split(",")]
            assert (width == 32).all()
            source = (np.arange(T) & ~31) | ((np.arange(T) & 31) ^ offset)
            return [v[source], np.ones(T, bool)]
        if kind == "arith.cmpf":
            a, b = [self.val(v) for v in rest.split(":")[0].split(",")[1:]]
            assert rest.startswith("olt")
            return a < b
        if kind == "arith.select":
            c, a, b = [self.val(v) for v in rest.split(":")[0].split(",")]
            return np.where(c, a, b)
        if kind == "arith.negf":
            return -self.val(rest.split(":")[0])
        if kind == "llvm.call_intrinsic":  # 2^x, sin x, cos x (the hardware's approximations exact), √x
            how = {'"llvm.nvvm.ex2.approx.f32"(': np.exp2, '"llvm.nvvm.sin.approx.f"(': np.sin,
                   '"llvm.nvvm.cos.approx.f"(': np.cos,
                   '"llvm.sqrt.f32"(': np.sqrt}[rest[:rest.index("(") + 1]]
            return how(self.val(re.search(r"\((%\w+)\)", rest).group(1))).astype(np.float32)
        if kind in ("arith.index_cast", "arith.uitofp", "arith.sitofp", "arith.fptosi"):
            to = parse_type(rest.split(" to ")[1])[1]
            v = self.val(rest.split(":")[0])
            return np.trunc(v).astype(NP[to]) if kind == "arith.fptosi" else v.astype(NP[to])
        if kind == "arith.truncf" and rest.split(" to ")[1].strip() == "f32":  # f64 → f32
            return self.val(rest.split(":")[0]).astype(np.float32)
        if kind in ("arith.bitcast", "arith.truncf", "arith.extf", "vector.bitcast"):
            return self.convert(kind, rest)
        if kind == "vector.load":
            return self.load(rest, mask)
        if kind == "memref.load":
            tile, idx = re.match(r"(%\w+)\[(.*)\]", rest).groups()
            r, c = [self.val(v) for v in idx.split(",")]
            self.hazards[tile].read(tile, self.epoch, r[mask], c[mask], THREAD[mask])
            return self.shared[tile][r, c]
        if kind == "vector.from_elements":
            parts = [self.val(v) for v in rest.split(":")[0].split(",")]
            shape, _ = parse_type(rest.split(":")[1])
            return np.stack(parts, axis=1).reshape((T,) + shape)
        if kind == "llvm.extractvalue":
            assert not self.wgmma_groups and not self.wgmma_reads, \
                "wgmma's accumulators read before wgmma.wait_group 0 (its results not yet written)"
        if kind in ("vector.extract", "llvm.extractvalue"):
            src, pos = re.match(r"(%[\w#]+)\[([0-9, ]+)\]", rest).groups()
            v = self.val(src)
            index = tuple(int(p) for p in pos.split(","))
            return v[index[0]] if isinstance(v, list) else v[(slice(None),) + index]
        if kind == "nvgpu.ldmatrix":
            return self.ldmatrix(rest)
        if kind == "nvgpu.device_async_copy":
            return self.async_copy(rest, mask)
        if kind == "nvgpu.device_async_create_group":  # commits every uncommitted copy
            self.groups.append(self.uncommitted)
            self.uncommitted = []
            return np.zeros(T, np.int64)
        if kind in ("nvgpu.mma.sync", "nvvm.mma.sync"):
            return self.mma(kind, rest)
        if kind == "memref.extract_aligned_pointer_as_index":  # the view's shared address
            assert re.match(r"%\w+", rest).group(0) in self.shared
            return np.full(T, SHARED_BASE, np.int64)
        if kind == "llvm.mlir.zero":  # wgmma's accumulators: 64 floats a thread
            return np.zeros((T, WG_REGISTERS), np.float32)
        if kind == "nvvm.wgmma.mma_async":
            return self.wgmma(rest)
        raise NotImplementedError(kind)

    def constant(self, rest):
        value, ty = [s.strip() for s in rest.split(":")]
        shape, elem = parse_type(ty)
        m = re.match(r"dense<(.*)>", value)
        literal = m.group(1) if m else value
        if literal.startswith("0x"):  # a float's bits
            bits = np.full((T,) + shape, int(literal, 16), np.uint32)
            return bits.view(np.float32)
        if elem in ("index", "i64", "i32"):  # exactly (a descriptor's bits exceed a float's)
            return np.full((T,) + shape, int(literal), NP[elem])
        number = float(literal)
        return np.full((T,) + shape, number, NP[elem])

    def convert(self, kind, rest):
        src = self.val(rest.split(":")[0])
        to = parse_type(rest.split(" to ")[1])
        if kind == "arith.truncf":
            return bf16_bits(src)
        if kind == "arith.extf":
            return bf16_value(src)
        if kind == "vector.bitcast":  # vector<2xbf16> → vector<1xi32>: element 0 low
            lo, hi = src[:, 0].astype(np.uint32), src[:, 1].astype(np.uint32)
            return (lo | (hi << 16)).view(np.int32).reshape(T, 1)
        return np.ascontiguousarray(src).view(NP[to[1]])

    def global_index(self, rest, mask, lanes):
        buf, idx = re.match(r"(%\w+)\[(%\w+)\]", rest).groups()
        data = self.env["buffer" + buf]
        at = np.where(mask, self.val(idx), 0)
        assert (at[mask] >= 0).all() and (at[mask] + lanes <= data.size).all(), \
            f"{buf} read/written out of bounds"
        align = re.search(r"alignment = (\d+)", rest)
        if align:
            assert (at[mask] * data.itemsize % int(align.group(1)) == 0).all(), f"{buf} misaligned"
        return buf, data, at[:, None] + np.arange(lanes)

    def load(self, rest, mask):
        shape, elem = parse_type(rest.split(",")[-1])
        m = re.match(r"(%\w+)\[(%\w+), (%\w+)\]", rest)
        if m and m.group(1) in self.shared:  # a row's consecutive elements of a shared tile
            tile = self.shared[m.group(1)]
            r, c = self.val(m.group(2)), self.val(m.group(3))
            cols = c[:, None] + np.arange(shape[0])
            assert (r < tile.shape[0]).all() and (cols < tile.shape[1]).all(), "out of tile"
            align = int(re.search(r"alignment = (\d+)", rest).group(1))
            assert (c * tile.itemsize % align == 0).all() and tile.strides[0] % align == 0
            self.hazards[m.group(1)].read(m.group(1), self.epoch, r[mask, None], cols[mask],
                                          THREAD[mask, None])
            return tile[r[:, None], cols]
        _, data, at = self.global_index(rest, mask, shape[0])
        return data[at]

    def store(self, line, mask):
        value, rest = re.match(r"vector\.store (%[\w#]+), (.*)", line).groups()
        v = self.val(value)
        m = re.match(r"(%\w+)\[(%\w+), (%\w+)\]", rest)
        if m and m.group(1) in self.shared:  # shared tile [row, col], the threads under `mask`
            tile = self.shared[m.group(1)]
            r, c = self.val(m.group(2))[mask], self.val(m.group(3))[mask]
            cols = c[:, None] + np.arange(v.shape[1])
            assert (cols < tile.shape[1]).all() and (r < tile.shape[0]).all()
            self.hazards[m.group(1)].write(m.group(1), self.epoch, r[:, None], cols,
                                           THREAD[mask, None])
            self.not_read_by_wgmma(m.group(1), r[:, None], cols)
            tile[r[:, None], cols] = v[mask]
            self.unfenced[m.group(1)][r[:, None], cols] = True
            return
        _, data, at = self.global_index(rest, mask, v.shape[1])
        data[at[mask]] = v[mask]

    def async_copy(self, rest, mask):
        """cp.async of `dst_elements` (16 bytes): srcElements read, the rest zero filled."""
        m = re.match(r"(%\w+)\[(%\w+)\], (%\w+)\[(%\w+), (%\w+)\], (\d+)(?:, (%\w+))?", rest)
        src, at, name, r, c, n, src_n = m.groups()
        tile, n = self.shared[name], int(n)
        data = self.env["buffer" + src]
        assert data.itemsize == tile.itemsize and n * tile.itemsize == 16
        src_n = self.val(src_n) if src_n else np.full(T, n)
        r, c, at = self.val(r), self.val(c), self.val(at)
        cols = c[:, None] + np.arange(n)
        assert (r < tile.shape[0]).all() and (cols < tile.shape[1]).all(), "cp.async out of tile"
        assert ((c * tile.itemsize) % 16 == 0).all() and (tile.shape[1] * tile.itemsize) % 16 == 0
        reads = mask & (src_n > 0)
        assert (at[reads] >= 0).all() and (at[reads] + src_n[reads] <= data.size).all(), \
            f"cp.async reads {src} out of bounds"
        assert (at[reads] * data.itemsize % 16 == 0).all(), f"cp.async from {src} misaligned"
        index = np.clip(at[:, None] + np.arange(n), 0, data.size - 1)
        values = np.where(np.arange(n) < src_n[:, None], data[index], 0).astype(tile.dtype)
        # written when its group completes; its destination must not be read by another
        # thread since the last barrier when it is issued
        self.hazards[name].write(name, self.epoch, r[mask, None], cols[mask], THREAD[mask, None],
                                 record=False)
        self.uncommitted.append((name, tile, r[mask, None], cols[mask], values[mask],
                                 THREAD[mask, None]))
        self.not_read_by_wgmma(name, r[mask, None], cols[mask])
        tile[r[mask, None], cols[mask]] = np.nan if tile.dtype == np.float32 else 0x7FC0
        return np.zeros(T, np.int64)

    def async_wait(self, line):
        pending = re.search(r"numGroups = (\d+)", line)
        while len(self.groups) > (int(pending.group(1)) if pending else 0):
            for name, tile, rows, cols, values, threads in self.groups.pop(0):
                self.hazards[name].write(name, self.epoch, rows, cols, threads)
                tile[rows, cols] = values
                self.unfenced[name][rows, cols] = True

    def ldmatrix(self, rest):
        name, r, c = re.match(r"(%\w+)\[(%\w+), (%\w+)\]", rest).groups()
        tile = self.shared[name]
        tiles = int(re.search(r"numTiles = (\d+)", rest).group(1))
        trans = "transpose = true" in rest
        per_row = 16 // tile.itemsize  # elements in a 16-byte matrix row
        r, c = self.val(r), self.val(c)
        assert ((c * tile.itemsize) % 16 == 0).all() and (tile.shape[1] * tile.itemsize) % 16 == 0
        addressing = np.concatenate([32 * w + np.arange(8 * tiles) for w in range(T // 32)])
        self.hazards[name].read(name, self.epoch, r[addressing, None],
                                c[addressing, None] + np.arange(per_row), addressing[:, None])
        out = []
        for warp in range(T // 32):
            lanes = slice(32 * warp, 32 * warp + 32)
            rows = np.stack([tile[r[lanes][8 * i:8 * i + 8, None],
                                  c[lanes][8 * i:8 * i + 8, None] + np.arange(per_row)]
                             for i in range(tiles)])  # [matrix, row, element]
            if tile.dtype == np.float32:  # 32-bit elements: one per lane and matrix
                assert not trans
                got = rows[:, LANE[:32] // 4, LANE[:32] % 4].T[:, :, None]
            elif not trans:
                got = np.stack([rows[:, LANE[:32] // 4, 2 * (LANE[:32] % 4) + e] for e in (0, 1)],
                               axis=-1).transpose(1, 0, 2)
            else:
                got = np.stack([rows[:, 2 * (LANE[:32] % 4) + e, LANE[:32] // 4] for e in (0, 1)],
                               axis=-1).transpose(1, 0, 2)
            out.append(got)
        return np.concatenate(out)

    def not_read_by_wgmma(self, name, rows, cols):
        """A write (st.shared, a cp.async when issued) of elements no wgmma in flight reads."""
        written = np.zeros(self.shared[name].shape, bool)
        written[rows, cols] = True
        for reads in self.wgmma_groups + [self.wgmma_reads]:
            for tile, r, c in reads:
                assert tile != name or not written[r, c].any(), \
                    "shared memory written while a wgmma in flight may read it (before its wait_group)"

    def nvvm_statement(self, line):
        """wgmma's fence, commit and wait, and the async-proxy fence."""
        if line == "nvvm.wgmma.fence.aligned":
            self.wgmma_fenced = True
        elif line == "nvvm.wgmma.commit.group.sync.aligned":
            self.wgmma_groups.append(self.wgmma_reads)
            self.wgmma_reads = []
        elif line.startswith("nvvm.wgmma.wait.group.sync.aligned"):
            keep = int(line.split()[-1])
            self.wgmma_groups = self.wgmma_groups[len(self.wgmma_groups) - keep:] if keep else []
        elif line.startswith("nvvm.fence.proxy") and "async.shared" in line:
            for unfenced in self.unfenced.values():
                unfenced[:] = False
        else:
            raise NotImplementedError(line)

    def wgmma(self, rest):
        """wgmma.mma_async m64n128k16 bf16 → f32 (PTX ISA 9.7.15), the block one warpgroup:
        A (64 × 16) and B (16 × 128) read from shared memory by their matrix descriptors —
        start address (bits 0-13), leading and stride byte offsets (16-29, 32-45), all in
        16-byte units, base offset (49-51) 0, swizzle mode (62-63) 1: 128 bytes — in the
        canonical layouts: a K-major operand (A; B of layout col) has row r (of M or N) and k
        at start + (r / 8)·SBO + (r % 8)·128 + 2k; an N-major B (layout row, imm-trans-b 1)
        has k and n at start + (n / 64)·LBO + (k / 8)·SBO + (k % 8)·128 + 2(n % 64); then the
        128-byte swizzle on the shared address: bits 4-6 ^= bits 7-9. D = A·B + C, C and D
        in the accumulators' fragments: register r of thread T holds row 16·(T / 32) +
        (T % 32) / 4 + 8·((r % 4) / 2), column 8·(r / 4) + 2·(T % 4) + r % 2."""
        m = re.match(r"(%\w+), (%\w+), (%[\w#]+), #nvvm\.shape<m = 64, n = 128, k = 16>, "
                     r"D \[<f32>, [^\]]*\], A \[<bf16>, [^\]]*<(row)>\], "
                     r"B \[<bf16>, [^\]]*<(row|col)>\]", rest)
        assert m, f"wgmma form not emulated: {rest[:160]}"
        da, db, acc, _, b_layout = m.groups()
        assert T == 128, "wgmma: the block must be one warpgroup"
        assert self.wgmma_fenced, "wgmma.mma_async without wgmma.fence before it"
        name = next(n for n, t in self.shared.items() if t.dtype == np.uint16)
        tile = self.shared[name]

        def decode(desc):
            d = self.val(desc)
            assert (d == d[0]).all(), "a wgmma descriptor differs between the warpgroup's threads"
            d = int(d[0])
            assert d >> 62 == 1 and (d >> 49) & 7 == 0, f"descriptor {d:#x}: not 128-byte swizzle"
            return ((d & 0x3FFF) << 4, ((d >> 16) & 0x3FFF) << 4, ((d >> 32) & 0x3FFF) << 4)

        def gather(addresses):
            swizzled = addresses ^ (((addresses >> 7) & 7) << 4)
            index = (swizzled - SHARED_BASE) // 2
            assert (swizzled % 2 == 0).all() and (index >= 0).all() and \
                (index < tile.size).all(), "wgmma reads outside the shared tiles"
            rows, cols = index // tile.shape[1], index % tile.shape[1]
            # read by the warpgroup's async proxy (thread -3): after every thread's writes,
            # before any thread's next write, a barrier between
            self.hazards[name].read(name, self.epoch, rows, cols, np.full(rows.shape, -3))
            assert not self.unfenced[name][rows, cols].any(), \
                "wgmma reads shared memory written since the last fence.proxy.async"
            self.wgmma_reads.append((name, rows, cols))
            return bf16_value(tile[rows, cols]).astype(np.float64)

        a_start, _, a_sbo = decode(da)
        r, k = np.arange(64)[:, None], np.arange(16)[None, :]
        A = gather(a_start + (r // 8) * a_sbo + (r % 8) * 128 + 2 * k)
        b_start, b_lbo, b_sbo = decode(db)
        k, n = np.arange(16)[:, None], np.arange(128)[None, :]
        if b_layout == "col":  # K-major: rows of n
            B = gather(b_start + (n // 8) * b_sbo + (n % 8) * 128 + 2 * k)
        else:  # N-major
            B = gather(b_start + (n // 64) * b_lbo + (k // 8) * b_sbo + (k % 8) * 128 +
                       2 * (n % 64))
        regs = np.arange(WG_REGISTERS)[None, :]
        rows = 16 * (THREAD[:, None] // 32) + (THREAD[:, None] % 32) // 4 + 8 * ((regs % 4) // 2)
        cols = 8 * (regs // 4) + 2 * (THREAD[:, None] % 4) + regs % 2
        C = np.zeros((64, 128))
        C[rows, cols] = self.val(acc)
        D = A @ B + C
        return D[rows, cols].astype(np.float32)

    def mma(self, kind, rest):
        g, t = LANE[:32] // 4, LANE[:32] % 4
        if kind == "nvgpu.mma.sync":  # tf32, m16n8k8
            a, b, c = [self.val(v) for v in re.match(r"\((.*?)\)", rest).group(1).split(",")]
            a = tf32_truncated(a[:, :, 0]).astype(np.float64)
            b = tf32_truncated(b[:, :, 0]).astype(np.float64)
            c = c.reshape(T, 4).astype(np.float64)
            a_at = [(g, t), (g + 8, t), (g, t + 4), (g + 8, t + 4)]
            b_at = [(t, g), (t + 4, g)]
            k = 8
        else:  # nvvm bf16, m16n8k16: registers of bf16 pairs
            regs = re.findall(r"[ABC]\[(.*?)\]", rest)
            unpack = lambda r: np.stack([bf16_value(self.val(v).view(np.uint32) & 0xFFFF) if e == 0
                                         else bf16_value(self.val(v).view(np.uint32) >> 16)
                                         for v in r.split(",") for e in (0, 1)], axis=1)
            a, b = unpack(regs[0]).astype(np.float64), unpack(regs[1]).astype(np.float64)
            c = np.stack([self.val(v) for v in regs[2].split(",")], axis=1).astype(np.float64)
            a_at = [(g + dg, 2 * t + dk + e) for dg, dk in ((0, 0), (8, 0), (0, 8), (8, 8))
                    for e in (0, 1)]
            b_at = [(2 * t + dk + e, g) for dk in (0, 8) for e in (0, 1)]
            k = 16
        d = np.empty((T, 4))
        for warp in range(T // 32):
            lanes = slice(32 * warp, 32 * warp + 32)
            A, B, C = np.zeros((16, k)), np.zeros((k, 8)), np.zeros((16, 8))
            for j, at in enumerate(a_at):
                A[at] = a[lanes, j]
            for j, at in enumerate(b_at):
                B[at] = b[lanes, j]
            c_at = [(g, 2 * t), (g, 2 * t + 1), (g + 8, 2 * t), (g + 8, 2 * t + 1)]
            for j, at in enumerate(c_at):
                C[at] = c[lanes, j]
            D = A @ B + C
            for j, at in enumerate(c_at):
                d[lanes, j] = D[at]
        d = d.astype(np.float32)
        if kind == "nvgpu.mma.sync":
            return d.reshape(T, 2, 2)
        return [d[:, j] for j in range(4)]  # the struct's four floats


def norm_buffers(norm, out):
    """The norm prologue's %gamma and %beta (absent ones: out's, as the launcher passes)."""
    if norm is None:
        return {}
    _, _, gamma, beta = norm
    return {"buffer%gamma": (gamma if gamma is not None else out).ravel(),
            "buffer%beta": (beta if beta is not None else out).ravel()}


def tile_of(text, gated=False):
    """The (rows, columns) of out a block of the GEMM function `text` computes, by its name:
    `<name>_tc` / `_fma` 64 × 64, `..32` 32 × 64, `..128` 128 × 128 (SwiGLU's two gates: 128 × 64,
    the 128 columns of W a block reads)."""
    if re.search(r"gpu\.func @\w+_wg\(", text):  # wgmma: 128 × 128 (SwiGLU 128 × 64)
        return 128, 64 if gated else 128
    entry = re.search(r"gpu\.func @\w+?_(tc|fma)(\d*)\(", text).group(2)
    if entry == "128" and "%bs1" in text:
        return 128, 64
    return {"": (64, 64), "32": (32, 64), "128": (128, 128)}[entry]


def run_kernel(text, x, w, bias, res, rows, n, norm=None, gated=False):
    """out[rows, n] computed by the kernel text, every block of its grid."""
    shared, body = kernel_parts(text)
    tile_rows, tile_cols = tile_of(text, gated)
    out = np.full((rows, n), np.nan, np.float32)
    env = {"buffer%x": x.ravel(), "buffer%w": w.ravel(), **norm_buffers(norm, out),
           "buffer%bias": (bias if bias is not None else out).ravel(),
           "buffer%res": (res if res is not None else out).ravel(), "buffer%out": out.ravel(),
           "%m": np.full(T, rows), "%xs": np.full(T, x.shape[1]), "%ws": np.full(T, w.shape[1]),
           "%rs": np.full(T, n), "%os": np.full(T, n), "%k": np.full(T, x.shape[1])}
    grid_x, grid_y = -(-n // tile_cols), (rows + tile_rows - 1) // tile_rows
    for by in range(grid_y):
        for bx in range(grid_x):  # a column tail's last tile too
            block_env = dict(env, block_x=bx, block_y=by, grid_x=grid_x, grid_y=grid_y)
            tiles = {k: np.zeros(s, d) for k, (s, d) in shared.items()}
            block = Block(body, block_env, tiles)
            block.run(0, len(body), np.ones(T, bool))
            assert not block.uncommitted and not block.groups, "cp.async pending at the end"
    return out


def split_of(k, splits):
    """The launcher's normalisation of a split (TensorCoreLaunch.cpp splitOf): ranges of
    ⌈slices / S⌉ slices of 32, as many as K fills, so none is empty. → (ranges, K of a range)."""
    slices = k // 32
    per = -(-slices // splits)
    return -(-slices // per), per * 32


def run_split(split_text, reduce_text, x, w, bias, res, rows, n, splits, norm=None):
    """out[rows, n] by split-K: `<name>_tc32_splitk` over every block (x, y, z) into the
    [S][M][cols] partials, then `<name>_tc_reduce` over its grid (the launcher's two launches)."""
    k = x.shape[1]
    count, kz = split_of(k, splits)
    cols = 2 * n if "%bs1" in split_text else n
    partials = np.full((count, rows, cols), np.nan, np.float32)
    shared, body = kernel_parts(split_text)
    env = {"buffer%x": x.ravel(), "buffer%w": w.ravel(), "buffer%out": partials.ravel(),
           **norm_buffers(norm, partials), "%m": np.full(T, rows), "%xs": np.full(T, k), "%ws": np.full(T, w.shape[1]),
           "%k": np.full(T, k), "%kz": np.full(T, kz)}
    for bz in range(count):
        for by in range((rows + 31) // 32):
            for bx in range(-(-n // 64)):  # a column tail's last tile too
                tiles = {name: np.zeros(shape, dtype) for name, (shape, dtype) in shared.items()}
                block = Block(body, dict(env, block_x=bx, block_y=by, block_z=bz,
                                         grid_x=-(-n // 64), grid_y=(rows + 31) // 32), tiles)
                block.run(0, len(body), np.ones(T, bool))
                assert not block.uncommitted and not block.groups, "cp.async pending at the end"
    assert not np.isnan(partials).any(), f"split-K partials not all stored ({count} ranges of {kz})"
    out = np.full((rows, n), np.nan, np.float32)
    _, body = kernel_parts(reduce_text)
    env = {"buffer%p": partials.ravel(),
           "buffer%bias": (bias if bias is not None else partials).ravel(),
           "buffer%res": (res if res is not None else partials).ravel(), "buffer%out": out.ravel(),
           "%m": np.full(T, rows), "%rs": np.full(T, n), "%os": np.full(T, n),
           "%s": np.full(T, count)}
    for by in range((rows + 3) // 4):
        for bx in range(-(-n // 64)):  # a column tail's last tile too
            Block(body, dict(env, block_x=bx, block_y=by), {}).run(0, len(body), np.ones(T, bool))
    return out, count, kz


ACTIVATIONS = {
    "none": lambda a: a, "relu": lambda a: np.maximum(a, 0),
    "gelu_tanh": lambda a: 0.5 * a * (1 + np.tanh(math.sqrt(2 / math.pi) * (a + 0.044715 * a ** 3))),
    "silu": lambda a: a / (1 + np.exp(-a)),
    "gelu_erf": lambda a: 0.5 * a * (1 + np.vectorize(math.erf)(a / math.sqrt(2))),
}


def normalised(x, norm):
    """x's rows by the norm prologue in float64: LayerNorm (x − mean) / sqrt(var + ε), RMSNorm
    x / sqrt(mean(x²) + ε), then γ and β where given."""
    x = x.astype(np.float64)
    if norm is None:
        return x
    kind, eps, gamma, beta = norm
    mean = x.mean(axis=1, keepdims=True) if kind == "layer_norm" else 0
    y = (x - mean) / np.sqrt(((x - mean) ** 2).mean(axis=1, keepdims=True) + eps)
    y = y * gamma if gamma is not None else y
    return y + beta if beta is not None else y


def reference(x, w, bias, res, n, act, gated, norm=None):
    """act(norm(x)·W + b) + residual in float64 (SwiGLU: silu(gate) · up)."""
    y = normalised(x, norm) @ w.astype(np.float64)
    if bias is not None:
        y = y + bias.astype(np.float64)
    y = ACTIVATIONS["silu"](y[:, :n]) * y[:, n:] if gated else ACTIVATIONS[act](y)
    return y + res.astype(np.float64) if res is not None else y


# docs/correctness.md's bounds of a tensor-core GEMM against the exact float64 product,
# relative to max |out| (the rounding of x and W; the kernels' own error is the 1e-5 above).
EXACT_BOUND = {"tf32": 1e-3, "bf16": 1e-2, "fp32": 1e-5}


def check(text, rows, rng, splits=(2,)):
    m = re.search(r"// (\w+): out\[M, (\d+)\] = x\[M, (\d+)\] · W \(W \[(.), .\], (\w+) (?:mma|FMA)"
                  r"[^)]*?(?:, norm (\w+) eps (\S+?)( gamma)?( beta)?)?\)", text)
    name, n, k, precision = m.group(1), int(m.group(2)), int(m.group(3)), m.group(5)
    nk = m.group(4) == "N"  # W stored [N, K]
    gated = "%bs1" in text
    bias = "%bias[" in text
    residual = "%res[" in text
    exp = "llvm.nvvm.ex2.approx" in text
    act = ("silu" if gated else "gelu_erf" if "vector<2xi1>" in text
           else "gelu_tanh" if exp and "arith.negf" not in text
           else "silu" if exp else "relu" if "arith.maximumf" in text else "none")
    bf16_weights = "%w: memref<?xbf16>" in text
    cols = 2 * n if gated else n
    x = rng.standard_normal((rows, k)).astype(np.float32)
    w32 = (rng.standard_normal((k, cols)) / math.sqrt(k)).astype(np.float32)
    w = bf16_bits(w32) if bf16_weights else w32
    wv = bf16_value(w) if bf16_weights else w32
    b = rng.standard_normal(cols).astype(np.float32) if bias else None
    r = rng.standard_normal((rows, n)).astype(np.float32) if residual else None
    norm = None
    if m.group(6):  # the norm prologue (fp32 FMA): x's rows off-centre, γ and β random
        x = (x * 3 + rng.standard_normal((rows, 1)) * 5).astype(np.float32)
        gamma = (1 + rng.standard_normal(k) / 2).astype(np.float32) if m.group(8) else None
        beta = rng.standard_normal(k).astype(np.float32) if m.group(9) else None
        norm = (m.group(6), float(m.group(7)), gamma, beta)
    stored = np.ascontiguousarray(w.T) if nk else w
    rounded = {"bf16": lambda a: bf16_value(bf16_bits(a)), "tf32": tf32_rounded,
               "fp32": lambda a: a}[precision]
    want_rounded = reference(rounded(x), rounded(wv), b, r, n, act, gated, norm)
    want_exact = reference(x, wv, b, r, n, act, gated, norm)
    scale = np.abs(want_exact).max()
    ok = True
    header, *parts = re.split(r"(?=    gpu\.func @)", text)
    functions = {re.match(r"    gpu\.func @(\w+)", f).group(1): header + f for f in parts}
    for entry, function in functions.items():  # <name>_tc/_fma, ..32, ..128, split-K's pair
        if entry.endswith("_reduce"):
            continue
        if not entry.endswith("_splitk"):
            runs = [(entry, run_kernel(function, x, stored, b, r, rows, n, norm, gated))]
        else:
            reduce_text = functions[entry[:-len("32_splitk")] + "_reduce"]
            runs = []
            for s in splits:
                got, count, kz = run_split(function, reduce_text, x, stored, b, r, rows, n, s,
                                           norm)
                runs.append((f"{entry} S={count} (K {k} in ranges of {kz}) + _reduce", got))
        for label, got in runs:
            got = got.astype(np.float64)
            assert not np.isnan(got).any(), \
                f"{label}: outputs NaN (never stored, or read from shared before its cp.async completed)"
            err_rounded = np.abs(got - want_rounded).max() / scale
            err_exact = np.abs(got - want_exact).max() / scale
            ok &= err_rounded <= 1e-5 and err_exact <= EXACT_BOUND[precision]
            report(label + (f" norm={norm[0]}" if norm else ""), precision, nk, rows, k, n, act,
                   gated, bias, residual, bf16_weights, err_rounded, err_exact)
    return ok


def report(name, precision, nk, rows, k, n, act, gated, bias, residual, bf16_weights,
           err_rounded, err_exact):
    layout = "[N,K]" if nk else "[K,N]"
    print(f"{name} {precision} W{layout} M={rows} K={k} N={n} act={act} gated={gated} bias={bias} residual={residual} "
          f"bf16 weights={bf16_weights}: max error / max |out| {err_rounded:.2e} on the rounded "
          f"inputs, {err_exact:.2e} on the exact ones")


def kernel_parts(text):
    """A gpu.func's shared tiles {name: (shape, dtype)} and body lines: its workgroup
    attributions, or the views of its dynamic shared memory — each view checked to lie within
    the bytes the module's header line says the launch gives the function (`dynamic shared
    memory: ENTRY N bytes, ...`), 16-byte aligned, and apart from the others."""
    header = re.search(r"gpu\.func @\w+\((.*?)\)\s*(?:workgroup\((.*?)\) )?kernel", text, re.S)
    use_block_size(text)
    shared = {}
    for name, shape, elem in re.findall(r"(%\w+) : memref<(\d+x\d+)x(\w+), ",
                                        header.group(2) or ""):
        shared[name] = tuple(int(s) for s in shape.split("x")), NP[elem]
    body = [l for l in text[header.end():].split("\n")[1:] if l.startswith("      ")]
    views = re.findall(r"(%\w+) = memref\.view %smem\[(%\w+)\]\[\] : .*? to "
                       r"memref<(\d+)x(\d+)x(\w+), ", "\n".join(body))
    if views:
        entry = re.search(r"gpu\.func @(\w+)", text).group(1)
        declared = re.search(rf"dynamic shared memory:.* {entry} (\d+) bytes", text.split("\n")[0])
        assert declared, f"{entry}: views of dynamic shared memory, but no size in the header"
        constants = dict(re.findall(r"(%\w+) = arith\.constant (\d+) : index", "\n".join(body)))
        spans = []
        for name, at, rows, cols, elem in views:
            start = int(constants[at])
            end = start + int(rows) * int(cols) * np.dtype(NP[elem]).itemsize
            assert start % 16 == 0 and end <= int(declared.group(1)), \
                f"{name}: bytes [{start}, {end}) of {declared.group(1)} (16-byte aligned?)"
            assert all(end <= s or start >= e for s, e in spans), f"{name} overlaps another view"
            spans.append((start, end))
            shared[name] = (int(rows), int(cols)), NP[elem]
    return shared, body


def run_attention(text, q, k, v, rows, keys, heads, d):
    """out[rows, heads·d] computed by the attention kernel text, every block of its grid.
    q: [rows, heads·d]; k: [keys, kv heads, d] (key stride kv·d, head stride d); v: [kv heads,
    keys, d] (key stride d, head stride keys·d): the two orders of strides."""
    shared, body = kernel_parts(text)
    # A block's queries: the FMA kernel's Q tile's rows; tensor cores' 64 (Q staged in K's tile).
    queries = shared["%qt"][0][0] if "%qt" in shared else 64
    out = np.full((rows, heads * d), np.nan, np.float32)
    kv = k.shape[1]
    env = {"buffer%q": q.ravel(), "buffer%k": k.ravel(), "buffer%v": v.ravel(),
           "buffer%out": out.ravel(), "%m": np.full(T, rows), "%mz": np.full(T, keys),
           "%qs": np.full(T, heads * d), "%kks": np.full(T, kv * d), "%khs": np.full(T, d),
           "%vks": np.full(T, d), "%vhs": np.full(T, keys * d), "%os": np.full(T, heads * d)}
    grid_x = (rows + queries - 1) // queries
    for head in range(heads):
        for bx in range(grid_x):
            block_env = dict(env, block_x=bx, block_y=head, grid_x=grid_x, grid_y=heads)
            tiles = {name: np.zeros(shape, dtype) for name, (shape, dtype) in shared.items()}
            Block(body, block_env, tiles).run(0, len(body), np.ones(T, bool))
    return out


def rotated(x, positions, d, pairing, base):
    """Rotary positions in float64 (Su et al.): row t of x's heads of d at positions[t], pair i
    turned by positions[t] · base^(-2i/d); pairs (2i, 2i+1) adjacent, (i, i + d/2) halves."""
    x = np.array(x, np.float64)
    i = np.arange(d // 2)
    angle = np.asarray(positions, np.float64)[:, None] * base ** (-2.0 * i / d)
    cos, sin = np.cos(angle), np.sin(angle)
    first, second = (2 * i, 2 * i + 1) if pairing == "adjacent" else (i, i + d // 2)
    shape = x.shape
    x = x.reshape(shape[0], -1, d)
    a, b = x[:, :, first].copy(), x[:, :, second].copy()
    x[:, :, first] = a * cos[:, None] - b * sin[:, None]
    x[:, :, second] = a * sin[:, None] + b * cos[:, None]
    return x.reshape(shape)


def attention_reference(q, k, v, rows, keys, heads, d, causal, scale, rope=None):
    """softmax(scale · q·kᵀ, masked) · v per head in float64; `rope` (pairing, base, keys too):
    q's row t rotated at position t + keys − rows, and k's key s at s where keys too."""
    if rope:
        pairing, base, keys_too = rope
        q = rotated(q, np.arange(rows) + keys - rows, d, pairing, base)
        if keys_too:
            k = rotated(k, np.arange(keys), d, pairing, base)
    group = heads // k.shape[1]
    out = np.empty((rows, heads * d))
    for h in range(heads):
        qh = q[:, h * d:(h + 1) * d].astype(np.float64)
        kh, vh = k[:, h // group].astype(np.float64), v[h // group].astype(np.float64)
        s = scale * qh @ kh.T
        if causal:
            s[np.arange(keys)[None, :] > np.arange(rows)[:, None] + keys - rows] = -np.inf
        p = np.exp(s - s.max(axis=1, keepdims=True))
        out[:, h * d:(h + 1) * d] = (p / p.sum(axis=1, keepdims=True)) @ vh
    return out


# Bounds of the attention kernel's error, relative to max |out|, on the rounded Q, K, V: the
# probabilities P are rounded (bf16, tf32) for P·V while the row sums are not, so each output
# is off by up to P's relative rounding (2^-9 bf16, 2^-11 tf32) of the values it averages.
# fp32 (the FMA kernel): nothing rounded but float32 sums and 2^x (ex2.approx), the GEMMs' 1e-5.
ATTENTION_BOUND = {"bf16": 4e-3, "tf32": 1e-3, "fp32": 1e-5}


def check_attention(text, lengths, rng):
    """Every gpu.func of an attention kernel's module (`text`) against float64."""
    header, *functions = re.split(r"(?=    gpu\.func @)", text)
    ok = True
    for function in functions:  # the FMA kernel's blocks of 64, 32 and 16 queries; _tc
        entry = re.match(r"    gpu\.func @(\w+)", function).group(1)
        ok &= check_attention_function(header + function, entry, lengths, rng)
    return ok


def check_attention_function(text, entry, lengths, rng):
    """One gpu.func of an attention kernel (`text`: the module's header and it) against
    float64 at each of `lengths`."""
    m = re.search(r"// (\w+): attention (\d+) heads over (\d+) K/V heads, d = (\d+), "
                  r"(causal|not causal), scale (\S+), (\w+) (?:mma|FMA)", text)
    heads, kv, d = int(m.group(2)), int(m.group(3)), int(m.group(4))
    causal, scale, precision = m.group(5) == "causal", float(m.group(6).rstrip(",")), m.group(7)
    r = re.search(r"rope (adjacent|halves) base (\S+), keys (rotated here|as stored)", text)
    rope = (r.group(1), float(r.group(2)), r.group(3) == "rotated here") if r else None
    rounded = {"bf16": lambda a: bf16_value(bf16_bits(a)), "tf32": tf32_rounded,
               "fp32": lambda a: a}[precision]
    ok = True
    for length in lengths.split(","):
        rows, keys = (int(x) for x in length.split(":")) if ":" in length else (int(length),) * 2
        q = rng.standard_normal((rows, heads * d)).astype(np.float32)
        k = rng.standard_normal((keys, kv, d)).astype(np.float32)
        v = rng.standard_normal((kv, keys, d)).astype(np.float32)
        got = run_attention(text, q, k, v, rows, keys, heads, d).astype(np.float64)
        assert not np.isnan(got).any(), \
            f"{entry} M={rows} Mz={keys}: NaN outputs (never stored, or a row without a key)"
        want_rounded = attention_reference(rounded(q), rounded(k), rounded(v), rows, keys, heads,
                                           d, causal, scale, rope)
        want_exact = attention_reference(q, k, v, rows, keys, heads, d, causal, scale, rope)
        top = np.abs(want_exact).max()
        err_rounded = np.abs(got - want_rounded).max() / top
        err_exact = np.abs(got - want_exact).max() / top
        ok &= err_rounded <= ATTENTION_BOUND[precision]
        print(f"{entry} {precision} attention H={heads} H_kv={kv} d={d} "
              f"{'causal' if causal else 'not causal'}"
              f"{f' rope {rope[0]}, keys ' + ('rotated' if rope[2] else 'as stored') if rope else ''}"
              f" M={rows} Mz={keys}: max error / max |out| "
              f"{err_rounded:.2e} on the rounded inputs (bound {ATTENTION_BOUND[precision]:.0e}), "
              f"{err_exact:.2e} on the exact ones")
    return ok


# Without --spec (ctest): GPT-2's [K, N] GEMMs (bias, GELU, residual; float32 and bf16
# weights) and Llama's [N, K] ones (SwiGLU, residual, the unembedding; float32 and bf16 weights), at rows past a tile
# (70), a whole tile (64), a part (33) and the fewest the path takes (5); unembeddings whose N
# is not a multiple of 64 (a column tail: W's rows past N clamped, columns past N never stored);
# every function of a module runs at every row count, the 128 × 128 tiles' (`_tc128`, 256
# threads, dynamic shared memory) too wherever N is a multiple of 128 or a tail. The attention
# kernels at head size 64, 2 heads: GPT-2's (causal) at ℓ = 5, 64, 65, 100, 130 and 100 queries
# after 30 cached keys (100:130), Llama's (causal, GQA 2:1), BERT's (not causal); the other head
# sizes taken: 32 (GPT-2 at ℓ = 70), 16 (the encoder-decoder's three: self, causal, cross; 24
# queries over 40 keys), 128 (bf16; GPT-2 and llama-hf). fp32's FMA kernel (heads of 32, 64, 96
# and 128 — the last two on dynamic shared memory) wherever an attention case has lengths:
# GPT-2's and BERT's; Llama's grouped heads with rotary positions fused (adjacent pairs;
# llama-hf's halves, at 64 and 128), both of its kernels (keys rotated by the kernel, and as a
# cache holds them), and without them ("llama.xf:no-rope", without_rope).
SMALL = ["-D", "L=1", "-D", "d_e=64", "-D", "d_mlp=128", "-D", "H=2"]
HEAD64 = ["-D", "L=1", "-D", "d_e=128", "-D", "d_mlp=128", "-D", "H=2"]
HEAD128 = ["-D", "L=1", "-D", "d_e=256", "-D", "d_mlp=128", "-D", "H=2"]
GPT2_SMALL = SMALL + ["-D", "N_V=256"]  # the tied unembedding on tensor cores in 4 column tiles
CASES = [("gpt2.xf", "70,64,5", GPT2_SMALL, "70"),
         ("gpt2.xf", "33", GPT2_SMALL + ["--weight-type=bf16"], ""),
         ("bert.xf", "40", SMALL, ""),
         # Two row tiles of SwiGLU's wide kernels (128 × 64 of out: both gates' 128 of W).
         ("llama.xf", "70,130", SMALL + ["-D", "H_kv=1", "-D", "N_V=192"], ""),
         ("llama.xf", "70", SMALL + ["-D", "H_kv=1", "-D", "N_V=192", "--weight-type=bf16"], ""),
         # Column tails: the unembeddings' N = 197 and 226 (odd: single-column stores; even).
         ("gpt2.xf", "70,33", SMALL + ["-D", "N_V=197"], ""),
         # Two row tiles of the wide kernels (`_tc128`: the MLP's N = 128, the tail's 197).
         ("gpt2.xf", "130", SMALL + ["-D", "N_V=197"], ""),
         ("llama.xf", "70", SMALL + ["-D", "H_kv=1", "-D", "N_V=226", "--weight-type=bf16"], ""),
         # The wgmma kernels (bf16 weights, `_wg`): K of 4 slices of 64 (stages alternating,
         # the last W copies zero fill) and two row tiles; Llama's [N, K] at K = 192 (3 slices).
         ("gpt2.xf", "130", ["-D", "L=1", "-D", "d_e=64", "-D", "d_mlp=256", "-D", "H=2",
                             "-D", "N_V=256", "--weight-type=bf16"], ""),
         ("llama.xf", "70", ["-D", "L=1", "-D", "d_e=192", "-D", "d_mlp=128", "-D", "H=2",
                              "-D", "H_kv=1", "-D", "N_V=192", "--weight-type=bf16"], ""),
         ("gpt2.xf", "", HEAD64, "5,64,65,100,130,100:130"),
         ("llama.xf", "", HEAD64 + ["-D", "H_kv=1"], "64,130"),
         ("llama.xf:no-rope", "", HEAD64 + ["-D", "H_kv=1"], "64,130"),
         ("llama-hf.xf", "", HEAD64 + ["-D", "H_kv=1", "-D", "N_V=192"], "64,100:130"),
         ("bert.xf", "", HEAD64, "100"),
         ("transformer.xf", "", ["-D", "L_enc=1", "-D", "L_dec=1"], "24:40"),
         ("gpt2.xf", "", HEAD128, "5,100,100:130"),
         ("llama-hf.xf", "", HEAD128 + ["-D", "H_kv=1", "-D", "N_V=192"], "64,100:130"),
         ("gpt2.xf", "", ["-D", "L=1", "-D", "d_e=192", "-D", "d_mlp=128", "-D", "H=2"], "70")]


# Split-K (every case above runs its `_tc32_splitk` + `_tc_reduce` with S = 2): S = 1, 2, 3
# where K = 160 has 5 slices of 32 (ranges 160; 96 + 64; 64 + 64 + 32): GPT-2's MLP down
# projection (bias, residual; float32 and bf16 weights) and Llama's SwiGLU ([N, K], two gates).
SPLIT_CASES = [("gpt2.xf", "70,33,5", ["-D", "L=1", "-D", "d_e=64", "-D", "d_mlp=160", "-D", "H=2",
                                       "-D", "N_V=256"]),
               ("gpt2.xf", "40", ["-D", "L=1", "-D", "d_e=64", "-D", "d_mlp=160", "-D", "H=2",
                                  "-D", "N_V=256", "--weight-type=bf16"]),
               ("llama.xf", "70", ["-D", "L=1", "-D", "d_e=160", "-D", "d_mlp=128", "-D", "H=2",
                                   "-D", "H_kv=1", "-D", "N_V=192"])]


def kernel_texts(xfc, spec, precision, xfc_args):
    """The MLIR kernels of `spec`: tensor cores (tf32, bf16), or fp32's FMA GEMMs and attention
    (there must be one)."""
    text = subprocess.run([xfc, spec, "--target", "cuda-sm_80", "--emit=mlir-gpu",
                           f"--gpu-matmul={precision}"] + xfc_args,
                          check=True, capture_output=True, text=True).stdout
    kernels = [k for k in re.split(r"(?m)^// ----- .*\n", text) if "gpu.func" in k]
    assert kernels, f"no MLIR kernel in --emit=mlir-gpu --gpu-matmul={precision}"
    return kernels


def without_rope(spec):
    """llama.xf with its rotary positions dropped (grouped K/V heads without a rotation), written
    to a file of its own in $TMPDIR; the caller removes it."""
    text = open(spec).read()
    plain = re.sub(r",\s*rope = \w+, rope_base = \S+\)", ")", text)
    assert plain != text, "llama.xf's rope arguments not found"
    path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"llama-no-rope-{os.getpid()}.xf")
    with open(path, "w") as f:
        f.write(plain)
    return path


def faulted(text, fault):
    """The kernel with a deliberate bug: 'no-wait' drops cp.async's wait in the K loop,
    'wrong-buffer' makes every fragment load read the other of the two buffers, 'one-range'
    gives every split-K block K's first range (block z read as 0), 'no-barrier' drops the
    gpu.barrier that ends each loop iteration (before its scf.yield)."""
    if fault == "no-wait":
        return "\n".join(l for l in text.split("\n") if "numGroups = 1 " not in l)
    if fault == "no-barrier":
        lines = text.split("\n")
        return "\n".join(l for i, l in enumerate(lines)
                         if not (l.strip() == "gpu.barrier" and i + 1 < len(lines)
                                 and lines[i + 1].strip().startswith("scf.yield")))
    if fault == "one-range":
        return text.replace("= gpu.block_id z", "= arith.constant 0 : index")
    head, *functions = re.split(r"(?=    gpu\.func @)", text)
    for f, function in enumerate(functions):
        rows = {name: int(shape) for name, shape in  # workgroup tiles, dynamic views
                re.findall(r"(%\w+) : memref<(\d+)x\d+x\w+, ", function) +
                re.findall(r"(%\w+) = memref\.view %smem\[%\w+\]\[\] : [^\n]*? to "
                           r"memref<(\d+)x\d+x\w+, ", function)}
        lines = []
        for i, line in enumerate(function.split("\n")):
            m = re.search(r"(?:nvgpu\.ldmatrix|memref\.load|vector\.load) (%\w+)\[(%\w+),", line)
            if m:
                pad, v, full = " " * 6, f"%fault{i}", rows[m.group(1)]
                lines += [f"{pad}{v}h = arith.constant {full // 2} : index",
                          f"{pad}{v}f = arith.constant {full} : index",
                          f"{pad}{v}s = arith.addi {m.group(2)}, {v}h : index",
                          f"{pad}{v} = arith.remui {v}s, {v}f : index"]
                line = line.replace(f"{m.group(1)}[{m.group(2)},", f"{m.group(1)}[{v},", 1)
            lines.append(line)
        functions[f] = "\n".join(lines)
    return head + "".join(functions)


def faulted_wgmma(text, fault):
    """The module with a bug in its wgmma kernel (`<name>_wg`) only: 'no-proxy-fence' drops the
    fence.proxy.async before each stage's products, 'no-wgmma-wait' drops wgmma.wait_group,
    'unaligned-stages' aligns the stages to 16 bytes instead of a swizzle atom's 1024, 'row-b'
    / 'col-b' reads W in the other layout (N-major for K-major and back), 'wait-two' lets two
    groups of products run on in the K loop (a stage they read is then overwritten)."""
    head, sep, wg = text.partition("  gpu.module @")
    while sep and not re.match(r"\w+_wg \{", wg):
        more, sep, wg = wg.partition("  gpu.module @")
        head += "  gpu.module @" + more
    assert sep, "no wgmma kernel in the module"
    if fault == "no-proxy-fence":
        wg = "\n".join(l for l in wg.split("\n") if "nvvm.fence.proxy" not in l)
    elif fault == "no-wgmma-wait":
        wg = "\n".join(l for l in wg.split("\n") if "nvvm.wgmma.wait.group" not in l)
    elif fault == "wait-two":
        wg = wg.replace("nvvm.wgmma.wait.group.sync.aligned 1", "nvvm.wgmma.wait.group.sync.aligned 2")
    elif fault == "unaligned-stages":
        wg = wg.replace("arith.constant 1024 : index", "arith.constant 16 : index")
    else:
        layout = {"row-b": ("<col>] :", "<row>] :"), "col-b": ("<row>] :", "<col>] :")}[fault]
        wg = wg.replace(*layout)
    return head + sep + wg


EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples")


def fails(what, check):
    """Whether `check()` (a deliberately broken kernel's check) fails, as it must; said."""
    try:
        caught = not check()
    except AssertionError as why:
        caught = True
        print(f"  ({why})")
    print(f"fault {what}: {'fails the check, as it must' if caught else 'NOT CAUGHT'}")
    return caught


def check_faults(xfc, rng):
    """Each deliberate bug in GPT-2's first tf32 and bf16 GEMM (bf16 from f32 and from bf16
    weights) must fail the check; so must the fp32 FMA kernel's (its loads of the other buffer,
    or of the other norm statistic; one range for every split)."""
    ok = True
    for precision, weights in (("tf32", []), ("bf16", []), ("bf16", ["--weight-type=bf16"]),
                               ("fp32", [])):
        kernel = kernel_texts(xfc, os.path.join(EXAMPLES, "gpt2.xf"), precision,
                              SMALL + weights)[0]
        fma = precision == "fp32"
        precision += " bf16 weights" if weights else ""
        if fma:
            assert "_fma(" in kernel and "%stats" in kernel and "_fma32_splitk(" in kernel, \
                "GPT-2's first fp32 GEMM is not the FMA kernel with a norm prologue and split-K"
        else:
            assert "_tc {" in kernel and "nvgpu.device_async_copy" in kernel, \
                f"GPT-2's first {precision} GEMM is not double-buffered"
        for fault in (("wrong-buffer", "one-range", "no-barrier") if fma else
                      ("no-wait", "wrong-buffer", "one-range", "no-barrier")):
            bad = faulted(kernel, fault)
            assert bad != kernel
            ok &= fails(f"{fault} ({precision})", lambda: check(bad, 70, rng, (2,)))
    for layout, extra in (("[K, N]", []), ("[N, K]", ["-D", "N_V=256"])):
        # GPT-2's MLP down projection ([K, N], K = 128: two slices) or its tied unembedding
        # ([N, K])
        kernels = kernel_texts(xfc, os.path.join(EXAMPLES, "gpt2.xf"), "bf16",
                               SMALL + extra + ["--weight-type=bf16"])
        kernel = next(k for k in kernels if f"(W {layout}, bf16 mma" in k.split("\n")[0] and
                      (extra or "= x[M, 128]" in k.split("\n")[0]))
        # (wait-two needs two slices or more: the down projection's K of 128, not the
        # unembedding's 64)
        for fault in ("no-proxy-fence", "no-wgmma-wait", "unaligned-stages") + \
                (("row-b",) if extra else ("wait-two", "col-b")):
            bad = faulted_wgmma(kernel, fault)
            assert bad != kernel, f"{fault}: the wgmma kernel unchanged"
            ok &= fails(f"{fault} (bf16 wgmma, W {layout})", lambda: check(bad, 70, rng, (2,)))
    return ok


def check_attention_faults(xfc, rng):
    """GPT-2's attention kernels (the fp32 FMA one at heads of 64 and 128, tensor cores in bf16)
    with each loop iteration's closing gpu.barrier dropped must fail the check; so must the
    FMA kernel at 128 with its K/P tile's view of dynamic shared memory over Q's."""
    ok = True
    for precision, shape in (("fp32", HEAD64), ("fp32", HEAD128), ("bf16", HEAD64)):
        kernel = next(k for k in kernel_texts(xfc, os.path.join(EXAMPLES, "gpt2.xf"), precision,
                                              shape)
                      if ": attention " in k.split("\n")[0])
        what = f"{precision} attention, {shape[3]}"
        bad = faulted(kernel, "no-barrier")
        assert bad != kernel, f"no loop-closing barrier in GPT-2's {what}"
        ok &= fails(f"no-barrier ({what})", lambda: check_attention(bad, "130", rng))
        if "%kt_at = arith.constant" in kernel:
            bad = re.sub(r"%kt_at = arith\.constant \d+", "%kt_at = arith.constant 0", kernel)
            ok &= fails(f"overlapping views ({what})", lambda: check_attention(bad, "70", rng))
    return ok


def check_spec(xfc, spec, rows, xfc_args, lengths, rng, splits=(2,)):
    ok = True
    for precision in ("tf32", "bf16", "fp32"):
        for kernel in kernel_texts(xfc, spec, precision, xfc_args):
            if ": attention " in kernel.split("\n")[0]:
                if lengths:
                    ok &= check_attention(kernel, lengths, rng)
                continue
            for m in (int(r) for r in rows.split(",") if r):
                ok &= check(kernel, m, rng, splits)
    return ok


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--xfc", required=True)
    parser.add_argument("--spec", help="an .xf file (default: the CASES above)")
    parser.add_argument("--rows", default="70,64,5")
    parser.add_argument("--lengths", default="",
                        help="attention lengths M or M:Mz (default: no attention check)")
    parser.add_argument("--splits", default="2",
                        help="split-K's S for the _tc32_splitk kernels (default 2)")
    parser.add_argument("xfc_args", nargs="*")
    args = parser.parse_args()
    rng = np.random.default_rng(7)
    splits = tuple(int(s) for s in args.splits.split(","))
    cases = [(args.spec, args.rows, args.xfc_args, args.lengths, splits)] if args.spec else \
        [(os.path.join(EXAMPLES, spec), rows, extra, lengths, (2,))
         for spec, rows, extra, lengths in CASES] + \
        [(os.path.join(EXAMPLES, spec), rows, extra, "", (1, 2, 3))
         for spec, rows, extra in SPLIT_CASES]
    ok = True
    for spec, rows, extra, lengths, split in cases:
        if not spec.endswith(":no-rope"):
            ok &= check_spec(args.xfc, spec, rows, extra, lengths, rng, split)
            continue
        plain = without_rope(spec[:-len(":no-rope")])
        try:
            ok &= check_spec(args.xfc, plain, rows, extra, lengths, rng, split)
        finally:
            os.remove(plain)
    if not args.spec:
        ok &= check_faults(args.xfc, rng)
        ok &= check_attention_faults(args.xfc, rng)
    print("OK" if ok else "FAILED: an error above its bound (GEMMs 1e-5, attention "
          "ATTENTION_BOUND) of the rounded inputs' float64 result")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
