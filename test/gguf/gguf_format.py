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
F32, F16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 = 0, 1, 2, 3, 6, 7, 8
Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS, BF16 = 10, 11, 12, 13, 14, 20, 23, 30
BLOCKS = {F32: (1, 4), F16: (1, 2), Q4_0: (32, 18), Q4_1: (32, 20), Q5_0: (32, 22),
          Q5_1: (32, 24), Q8_0: (32, 34), IQ4_NL: (32, 18), Q2_K: (256, 84), Q3_K: (256, 110),
          Q4_K: (256, 144), Q5_K: (256, 176), Q6_K: (256, 210), IQ4_XS: (256, 136),
          BF16: (1, 2)}
TYPE_NAMES = {F32: "F32", F16: "F16", Q4_0: "Q4_0", Q4_1: "Q4_1", Q5_0: "Q5_0", Q5_1: "Q5_1",
              Q8_0: "Q8_0", IQ4_NL: "IQ4_NL", Q2_K: "Q2_K", Q3_K: "Q3_K", Q4_K: "Q4_K",
              Q5_K: "Q5_K", Q6_K: "Q6_K", IQ4_XS: "IQ4_XS", BF16: "BF16"}
# ggml-common.h's kvalues_iq4nl: the 16 levels of IQ4_NL and IQ4_XS.
IQ4_LEVELS = np.array([-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113],
                      np.float32)

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


def _scale_min_k4(s):
    """The 8 six-bit scales and mins of Q4_K / Q5_K from their 12 packed bytes [n, 12]."""
    sc = np.zeros((len(s), 8), np.int32)
    mn = np.zeros((len(s), 8), np.int32)
    sc[:, :4], mn[:, :4] = s[:, 0:4] & 63, s[:, 4:8] & 63
    sc[:, 4:] = (s[:, 8:12] & 15) | ((s[:, 0:4] >> 6) << 4)
    mn[:, 4:] = (s[:, 8:12] >> 4) | ((s[:, 4:8] >> 6) << 4)
    return sc, mn


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
    if gtype in (Q5_0, Q5_1):
        # block_q5_0 { half d; u8 qh[4]; u8 qs[16]; }, block_q5_1 { half d, m; u8 qh[4]; ... }:
        # the nibbles of Q4_0 / Q4_1 with bit j of the little-endian u32 qh as element j's 5th.
        d = blocks[:, 0:2].copy().view("<f2").astype(np.float32)
        off = 4 if gtype == Q5_1 else 2
        qh = blocks[:, off:off + 4].copy().view("<u4").astype(np.int64)  # [n, 1]
        qs = blocks[:, off + 4:off + 20].astype(np.int64)
        fifth = (qh >> np.arange(32)) & 1  # [n, 32]
        q = (np.concatenate([qs & 15, qs >> 4], axis=1) | (fifth << 4)).astype(np.float32)
        if gtype == Q5_0:
            return ((q - 16) * d).reshape(shape)
        m = blocks[:, 2:4].copy().view("<f2").astype(np.float32)
        return (q * d + m).reshape(shape)
    if gtype == IQ4_NL:
        # block_iq4_nl { half d; u8 qs[16]; }: d · kvalues_iq4nl[nibble], nibbles as Q4_0's.
        d = blocks[:, 0:2].copy().view("<f2").astype(np.float32)
        qs = blocks[:, 2:18]
        return (d * IQ4_LEVELS[np.concatenate([qs & 15, qs >> 4], axis=1)]).reshape(shape)
    if gtype == IQ4_XS:
        # block_iq4_xs { half d; u16 scales_h; u8 scales_l[4]; u8 qs[128]; }: sub-block b of 32
        # has the 6-bit scale (nibble b % 2 of scales_l[b // 2]) | (bits 2b, 2b+1 of scales_h) << 4,
        # minus 32; element = (d · scale) · level, the 16 bytes of each sub-block as IQ4_NL's.
        d = blocks[:, 0:2].copy().view("<f2").astype(np.float32)  # [n, 1]
        sh = blocks[:, 2:4].copy().view("<u2").astype(np.int32)  # [n, 1]
        sl = blocks[:, 4:8].astype(np.int32)
        b = np.arange(8)
        ls = ((sl[:, b // 2] >> (4 * (b % 2))) & 15) | (((sh >> (2 * b)) & 3) << 4)
        dl = d * (ls - 32).astype(np.float32)  # [n, 8]
        qs = blocks[:, 8:].reshape(-1, 8, 16)
        levels = IQ4_LEVELS[np.concatenate([qs & 15, qs >> 4], axis=2)]  # [n, 8, 32]
        return (dl[:, :, None] * levels).astype(np.float32).reshape(shape)
    if gtype in (Q2_K, Q3_K):
        # Sixteen sub-blocks of 16 of 2-bit fields: in each half h of 128, sub-block pair k
        # (k = 0..3) takes bits 2k..2k+1 of qs[32h + l], l = 0..31 (16 per sub-block).
        qoff = 16 if gtype == Q2_K else 32
        qs = blocks[:, qoff:qoff + 64].astype(np.int32).reshape(-1, 2, 1, 32)
        low = (qs >> (2 * np.arange(4)).reshape(1, 1, 4, 1)) & 3  # [n, 2, 4, 32]
        if gtype == Q2_K:
            # block_q2_K { u8 scales[16]; u8 qs[64]; half d, dmin; }: scales byte = scale | min << 4;
            # element = (d · scale) · q − dmin · min.
            d = blocks[:, 80:82].copy().view("<f2").astype(np.float32).reshape(-1, 1)
            dmin = blocks[:, 82:84].copy().view("<f2").astype(np.float32).reshape(-1, 1)
            sc = blocks[:, 0:16].astype(np.int32)
            dl = (d * (sc & 15).astype(np.float32)).reshape(-1, 2, 4, 2, 1)
            ml = (dmin * (sc >> 4).astype(np.float32)).reshape(-1, 2, 4, 2, 1)
            q = low.reshape(-1, 2, 4, 2, 16).astype(np.float32)
            return (dl * q - ml).astype(np.float32).reshape(shape)
        # block_q3_K { u8 hmask[32]; u8 qs[64]; u8 scales[12]; half d; }: the 3rd bit of element
        # 32j + l (j = 0..7 over both halves) is bit j of hmask[l], a clear bit subtracting 4;
        # scale i (6 bits, minus 32): low nibble of byte i (i < 8) or high nibble of byte i − 8,
        # high 2 bits from byte 8 + i % 4 at shift 2·(i // 4); element = (d · scale) · q.
        hm = blocks[:, 0:32].astype(np.int32)  # [n, 32]
        high = (hm[:, None, :] >> np.arange(8).reshape(1, 8, 1)) & 1  # [n, 8, 32]
        q = low.reshape(-1, 8, 32) - 4 * (1 - high)
        p = blocks[:, 96:108].astype(np.int32)
        i = np.arange(16)
        low4 = np.where(i < 8, p[:, i % 8] & 15, p[:, i % 8] >> 4)
        scale = (low4 | (((p[:, 8 + i % 4] >> (2 * (i // 4))) & 3) << 4)) - 32  # [n, 16]
        d = blocks[:, 108:110].copy().view("<f2").astype(np.float32).reshape(-1, 1)
        dl = (d * scale.astype(np.float32)).reshape(-1, 8, 2, 1)
        return (dl * q.reshape(-1, 8, 2, 16).astype(np.float32)).astype(np.float32).reshape(shape)
    if gtype == Q5_K:
        # block_q5_K { half d, dmin; u8 scales[12]; u8 qh[32]; u8 qs[128]; }: Q4_K's scales and
        # nibbles, element l of sub-block j taking bit j of qh[l] as its 5th bit.
        d = blocks[:, 0:2].copy().view("<f2").astype(np.float32)
        dmin = blocks[:, 2:4].copy().view("<f2").astype(np.float32)
        sc, mn = _scale_min_k4(blocks[:, 4:16].astype(np.int32))
        qh = blocks[:, 16:48].astype(np.int32)
        fifth = (qh[:, None, :] >> np.arange(8).reshape(1, 8, 1)) & 1  # [n, 8, 32]
        qs = blocks[:, 48:].reshape(-1, 4, 32)
        q = (np.stack([qs & 15, qs >> 4], axis=2).reshape(-1, 8, 32) + 16 * fifth)
        d1 = d * sc.astype(np.float32)
        m1 = dmin * mn.astype(np.float32)
        return (d1[:, :, None] * q.astype(np.float32) - m1[:, :, None]).astype(
            np.float32).reshape(shape)
    if gtype == Q4_K:
        # block_q4_K { half d; half dmin; u8 scales[12]; u8 qs[128]; }: sub-block j of 32 has a
        # 6-bit scale and min: j < 4: scales[j] & 63, scales[j+4] & 63; else the low/high
        # nibble of scales[j+4] with the top 2 bits of scales[j-4] / scales[j].
        d = blocks[:, 0:2].copy().view("<f2").astype(np.float32)
        dmin = blocks[:, 2:4].copy().view("<f2").astype(np.float32)
        sc, mn = _scale_min_k4(blocks[:, 4:16].astype(np.int32))
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
