"""GGUF v3 written and read with numpy alone, and ggml's block dequantizers as numpy.

Independent of libxfrt (and of the `gguf` package): the tests write files with `write_gguf`,
read them back with `read_gguf`, and compare xf's dequantization with `dequantize`, written
from ggml's block definitions (ggml-common.h):
    block_q8_0 { ggml_half d; int8_t qs[32]; }            x = qs[j] * d
    block_q4_0 { ggml_half d; uint8_t qs[16]; }           x = ((qs & 15) or (qs >> 4)) - 8) * d
    block_q4_1 { ggml_half d; ggml_half m; uint8_t qs[16]; }   x = nibble * d + m
with element j < 16 in the low nibble of qs[j] and element j + 16 in its high nibble.
"""
import struct

import numpy as np

# ggml_type ids and (elements per block, bytes per block) of the types xf dequantizes.
F32, F16, Q4_0, Q4_1, Q8_0, Q4_K, Q6_K, BF16 = 0, 1, 2, 3, 8, 12, 14, 30
BLOCKS = {F32: (1, 4), F16: (1, 2), Q4_0: (32, 18), Q4_1: (32, 20), Q8_0: (32, 34),
          Q4_K: (256, 144), Q6_K: (256, 210), BF16: (1, 2)}
TYPE_NAMES = {F32: "F32", F16: "F16", Q4_0: "Q4_0", Q4_1: "Q4_1", Q8_0: "Q8_0", Q4_K: "Q4_K",
              Q6_K: "Q6_K", BF16: "BF16"}

# GGUF metadata value types.
U8, I8, U16, I16, U32, I32, VF32, BOOL, STRING, ARRAY, U64, I64, F64 = range(13)
_SCALAR = {U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i", VF32: "<f",
           BOOL: "<?", U64: "<Q", I64: "<q", F64: "<d"}


def _string(s):
    b = s.encode("utf-8") if isinstance(s, str) else bytes(s)
    return struct.pack("<Q", len(b)) + b


def _value(vtype, value):
    if vtype == STRING:
        return _string(value)
    if vtype == ARRAY:
        etype, items = value
        out = struct.pack("<IQ", etype, len(items))
        return out + b"".join(_value(etype, x) for x in items)
    return struct.pack(_SCALAR[vtype], value)


def write_gguf(path, metadata, tensors, alignment=32):
    """metadata: [(key, vtype, value)] (arrays: (ARRAY, (etype, items)));
    tensors: [(name, ggml_type, ne (ggml order), raw bytes)], laid out in order."""
    out = bytearray(b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(metadata)))
    for key, vtype, value in metadata:
        out += _string(key) + struct.pack("<I", vtype) + _value(vtype, value)
    offset, data = 0, bytearray()
    for name, gtype, ne, raw in tensors:
        out += _string(name) + struct.pack("<I", len(ne)) + struct.pack(f"<{len(ne)}Q", *ne)
        out += struct.pack("<IQ", gtype, offset)
        data += raw + bytes(-len(raw) % alignment)
        offset = len(data)
    out += bytes(-len(out) % alignment)
    with open(path, "wb") as f:
        f.write(out + data)


class _Reader:
    def __init__(self, buf):
        self.buf, self.pos = buf, 0

    def take(self, fmt):
        v = struct.unpack_from(fmt, self.buf, self.pos)
        self.pos += struct.calcsize(fmt)
        return v[0] if len(v) == 1 else v

    def string(self):
        n = self.take("<Q")
        s = bytes(self.buf[self.pos:self.pos + n])
        self.pos += n
        return s.decode("utf-8", "surrogateescape")

    def value(self, vtype):
        if vtype == STRING:
            return self.string()
        if vtype == ARRAY:
            etype, n = self.take("<I"), self.take("<Q")
            if etype in _SCALAR:  # numbers at once
                dt = np.dtype(_SCALAR[etype].replace("?", "u1"))
                arr = np.frombuffer(self.buf, dt, n, self.pos)
                self.pos += n * dt.itemsize
                return arr
            return [self.value(etype) for _ in range(n)]
        return self.take(_SCALAR[vtype])


def read_gguf(path):
    """Returns (metadata dict, [(name, ggml_type, ne, raw bytes)]) of a GGUF v2/v3 file."""
    buf = memoryview(open(path, "rb").read())
    r = _Reader(buf)
    assert bytes(buf[:4]) == b"GGUF"
    r.pos = 4
    version, n_tensors, n_kv = r.take("<I"), r.take("<Q"), r.take("<Q")
    assert version in (2, 3)
    meta = {}
    for _ in range(n_kv):
        key = r.string()
        meta[key] = r.value(r.take("<I"))
    infos = []
    for _ in range(n_tensors):
        name = r.string()
        ne = [r.take("<Q") for _ in range(r.take("<I"))]
        infos.append((name, r.take("<I"), ne, r.take("<Q")))
    alignment = meta.get("general.alignment", 32)
    start = -(-r.pos // alignment) * alignment
    tensors = []
    for name, gtype, ne, offset in infos:
        per_block, block_bytes = BLOCKS.get(gtype, (1, 0))
        nbytes = int(np.prod(ne, dtype=np.int64)) // per_block * block_bytes
        tensors.append((name, gtype, ne, buf[start + offset:start + offset + nbytes]))
    return meta, tensors


def dequantize(gtype, raw, ne):
    """float32 values of a tensor, shaped row-major (ne reversed)."""
    raw = np.frombuffer(raw, np.uint8)
    shape = tuple(reversed(ne))
    if gtype == F32:
        return raw.view("<f4").reshape(shape)
    if gtype == F16:
        return raw.view("<f2").astype(np.float32).reshape(shape)
    if gtype == BF16:
        return (raw.view("<u2").astype(np.uint32) << 16).view(np.float32).reshape(shape)
    per_block, block_bytes = BLOCKS[gtype]
    blocks = raw.reshape(-1, block_bytes)
    if gtype == Q4_K:
        # block_q4_K { half d; half dmin; u8 scales[12]; u8 qs[128]; }: sub-block j of 32 has a
        # 6-bit scale and min: j < 4: scales[j] & 63, scales[j+4] & 63; else the low/high
        # nibble of scales[j+4] with the top 2 bits of scales[j-4] / scales[j].
        d = blocks[:, 0:2].copy().view("<f2").astype(np.float32)
        dmin = blocks[:, 2:4].copy().view("<f2").astype(np.float32)
        s = blocks[:, 4:16].astype(np.int32)
        sc = np.zeros((len(blocks), 8), np.int32)
        mn = np.zeros((len(blocks), 8), np.int32)
        sc[:, :4], mn[:, :4] = s[:, 0:4] & 63, s[:, 4:8] & 63
        sc[:, 4:] = (s[:, 8:12] & 15) | ((s[:, 0:4] >> 6) << 4)
        mn[:, 4:] = (s[:, 8:12] >> 4) | ((s[:, 4:8] >> 6) << 4)
        qs = blocks[:, 16:].reshape(-1, 4, 32)  # 4 groups of 32 bytes: sub-blocks 2g (low), 2g+1
        q = np.stack([qs & 15, qs >> 4], axis=2).reshape(-1, 8, 32).astype(np.float32)
        d1 = d * sc.astype(np.float32)            # [n, 8], exact
        m1 = dmin * mn.astype(np.float32)
        return (d1[:, :, None] * q - m1[:, :, None]).astype(np.float32).reshape(shape)
    if gtype == Q6_K:
        # block_q6_K { u8 ql[128]; u8 qh[64]; i8 scales[16]; half d; }: two halves of 128;
        # in half h, element 32·k + l (k = 0..3) takes ql[64h + l + 32·(k & 1)] >> 4·(k >> 1)
        # and bits 2k..2k+1 of qh[32h + l], minus 32, times d·scales[8h + 2k + l // 16].
        ql = blocks[:, 0:128].astype(np.int32).reshape(-1, 2, 64)
        qh = blocks[:, 128:192].astype(np.int32).reshape(-1, 2, 32)
        sc = blocks[:, 192:208].view(np.int8).astype(np.float32).reshape(-1, 2, 8)
        d = blocks[:, 208:210].copy().view("<f2").astype(np.float32)[:, :, None]  # [n, 1, 1]
        out = np.zeros((len(blocks), 2, 4, 32), np.float32)
        for k in range(4):
            low = (ql[:, :, 32 * (k & 1):32 * (k & 1) + 32] >> (4 * (k >> 1))) & 15
            q = (low | (((qh >> (2 * k)) & 3) << 4)) - 32
            scale = np.repeat(sc[:, :, 2 * k:2 * k + 2], 16, axis=2)  # l // 16 picks the scale
            out[:, :, k, :] = (d * scale).astype(np.float32) * q.astype(np.float32)
        return out.reshape(shape)
    d = blocks[:, 0:2].copy().view("<f2").astype(np.float32)  # [n, 1]
    if gtype == Q8_0:
        q = blocks[:, 2:].view(np.int8).astype(np.float32)
        return (q * d).reshape(shape)
    qs = blocks[:, 4:] if gtype == Q4_1 else blocks[:, 2:]
    q = np.concatenate([qs & 15, qs >> 4], axis=1).astype(np.float32)  # elements 0..15, 16..31
    if gtype == Q4_0:
        return ((q - 8) * d).reshape(shape)
    m = blocks[:, 2:4].copy().view("<f2").astype(np.float32)
    return (q * d + m).reshape(shape)
