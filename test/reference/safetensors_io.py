"""A self-written .safetensors reader and writer (no dependency on the `safetensors` package).

File layout: 8-byte little-endian u64 N, then N bytes of UTF-8 JSON
  {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ..., "__metadata__": {..}}
then the data section; offsets are relative to its start, data is little-endian, row-major.
Every offset is checked against the file before anything is read, and errors name the tensor.
"""
import json
import struct

import numpy as np

# dtype name -> numpy little-endian dtype of the stored element (BF16 is decoded by hand)
_DTYPES = {"F64": np.dtype("<f8"), "F32": np.dtype("<f4"), "F16": np.dtype("<f2"),
           "BF16": np.dtype("<u2")}
_NAMES = {np.dtype("<f8"): "F64", np.dtype("<f4"): "F32", np.dtype("<f2"): "F16"}
_MAX_HEADER = 100 * 1024 * 1024  # the reference implementation's own limit on the JSON size


class SafetensorsError(ValueError):
    pass


def _bf16_to_f32(u16):
    # a bfloat16 is the upper 16 bits of an IEEE float32
    return (u16.astype(np.uint32) << 16).view(np.float32)


def parse_header(blob):
    """Validates the header of the bytes `blob`; returns (entries, metadata, data_start)."""
    if len(blob) < 8:
        raise SafetensorsError(f"file is {len(blob)} bytes, shorter than the 8-byte header length")
    (n,) = struct.unpack("<Q", blob[:8])
    if n > _MAX_HEADER:
        raise SafetensorsError(f"header length {n} exceeds the {_MAX_HEADER}-byte limit")
    if 8 + n > len(blob):
        raise SafetensorsError(f"header length {n} runs past the end of the {len(blob)}-byte file")
    try:
        header = json.loads(blob[8:8 + n].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise SafetensorsError(f"header is not valid UTF-8 JSON: {err}") from None
    if not isinstance(header, dict):
        raise SafetensorsError("header JSON is not an object")
    metadata = header.pop("__metadata__", None)
    if metadata is not None and not (isinstance(metadata, dict) and
                                     all(isinstance(v, str) for v in metadata.values())):
        raise SafetensorsError("__metadata__ must map strings to strings")
    data_start, data_len = 8 + n, len(blob) - 8 - n
    entries, spans = {}, []
    for name, info in header.items():
        if not isinstance(info, dict) or set(info) != {"dtype", "shape", "data_offsets"}:
            raise SafetensorsError(f"tensor '{name}': entry must have exactly dtype, shape, "
                                   f"data_offsets")
        dtype, shape, offs = info["dtype"], info["shape"], info["data_offsets"]
        if dtype not in _DTYPES:
            raise SafetensorsError(f"tensor '{name}': unsupported dtype {dtype!r} "
                                   f"(supported: {', '.join(_DTYPES)})")
        if not (isinstance(shape, list) and all(type(d) is int and d >= 0 for d in shape)):
            raise SafetensorsError(f"tensor '{name}': shape {shape!r} is not a list of "
                                   f"non-negative integers")
        if not (isinstance(offs, list) and len(offs) == 2 and all(type(o) is int for o in offs)):
            raise SafetensorsError(f"tensor '{name}': data_offsets {offs!r} is not [begin, end]")
        begin, end = offs
        if not 0 <= begin <= end <= data_len:
            raise SafetensorsError(f"tensor '{name}': data_offsets [{begin}, {end}] out of bounds "
                                   f"of the {data_len}-byte data section")
        need = int(np.prod(shape, dtype=np.int64)) * _DTYPES[dtype].itemsize
        if end - begin != need:
            raise SafetensorsError(f"tensor '{name}': {dtype}{shape} needs {need} bytes, "
                                   f"data_offsets span {end - begin}")
        entries[name] = (dtype, tuple(shape), begin, end)
        spans.append((begin, end, name))
    spans.sort()
    for (b0, e0, n0), (b1, e1, n1) in zip(spans, spans[1:]):
        if b1 < e0:
            raise SafetensorsError(f"tensors '{n0}' and '{n1}' overlap in the data section")
    return entries, metadata or {}, data_start


def load(path, as_float64=True):
    """Reads every tensor. Returns {name: ndarray} (float64 unless as_float64=False)."""
    with open(path, "rb") as f:
        blob = f.read()
    entries, _, start = parse_header(blob)
    out = {}
    for name, (dtype, shape, begin, end) in entries.items():
        count = (end - begin) // _DTYPES[dtype].itemsize
        raw = (np.frombuffer(blob, dtype=_DTYPES[dtype], count=count, offset=start + begin)
               if count else np.zeros(0, dtype=_DTYPES[dtype]))
        a = _bf16_to_f32(raw) if dtype == "BF16" else raw
        a = a.reshape(shape)
        out[name] = a.astype(np.float64) if as_float64 else a.copy()
    return out


def metadata(path):
    with open(path, "rb") as f:
        blob = f.read()
    return parse_header(blob)[1]


def save(path, tensors, meta=None):
    """Writes {name: ndarray} (float64/32/16 kept as they are) in sorted name order."""
    header, chunks, offset = {}, [], 0
    for name in sorted(tensors):
        a = np.ascontiguousarray(tensors[name])
        dt = a.dtype.newbyteorder("<")
        if dt not in _NAMES:
            raise SafetensorsError(f"tensor '{name}': cannot write numpy dtype {a.dtype}")
        data = a.astype(dt, copy=False).tobytes()
        header[name] = {"dtype": _NAMES[dt], "shape": list(a.shape),
                        "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    if meta:
        header["__metadata__"] = {str(k): str(v) for k, v in meta.items()}
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)  # pad with spaces so the data section starts 8-aligned
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for c in chunks:
            f.write(c)
