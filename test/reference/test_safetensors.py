"""The self-written safetensors reader/writer: exact round trips, files built byte by byte, and
rejection of corrupt headers with errors that say what is wrong."""
import json
import struct

import numpy as np
import pytest

import safetensors_io as st


def _file(tmp_path, header, data, name="x.safetensors", header_len=None):
    text = json.dumps(header).encode()
    p = tmp_path / name
    p.write_bytes(struct.pack("<Q", len(text) if header_len is None else header_len) + text + data)
    return p


def test_round_trip_keeps_values_dtypes_and_metadata(tmp_path):
    rng = np.random.default_rng(1)
    t = {"a.weight": rng.standard_normal((3, 5)).astype(np.float32),
         "b": rng.standard_normal(7),                       # float64
         "c.half": rng.standard_normal((2, 2)).astype(np.float16),
         "empty": np.zeros((0, 4), np.float32)}
    p = tmp_path / "rt.safetensors"
    st.save(p, t, meta={"arch": "gpt2"})
    back = st.load(p, as_float64=False)
    assert set(back) == set(t)
    for k in t:
        assert back[k].dtype == t[k].dtype and back[k].shape == t[k].shape
        np.testing.assert_array_equal(back[k], t[k])
    assert st.load(p)["a.weight"].dtype == np.float64
    assert st.metadata(p) == {"arch": "gpt2"}
    # the header is padded so the data section starts 8-byte aligned
    assert struct.unpack("<Q", p.read_bytes()[:8])[0] % 8 == 0


def test_reads_a_file_built_by_hand(tmp_path):
    # F32 [2,2] then F16 [3], little-endian, with metadata
    f32 = struct.pack("<4f", 1.0, -2.0, 0.5, 3.0)
    f16 = np.array([1.5, -0.25, 65504.0], dtype="<f2").tobytes()
    hdr = {"__metadata__": {"format": "pt"},
           "m": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]},
           "v": {"dtype": "F16", "shape": [3], "data_offsets": [16, 22]}}
    w = st.load(_file(tmp_path, hdr, f32 + f16))
    np.testing.assert_array_equal(w["m"], [[1.0, -2.0], [0.5, 3.0]])
    np.testing.assert_array_equal(w["v"], [1.5, -0.25, 65504.0])


def test_bf16_is_the_upper_half_of_f32(tmp_path):
    vals = np.array([1.0, -2.5, 3.140625, 1e-3], dtype=np.float32)
    upper = (vals.view(np.uint32) >> 16).astype("<u2")  # truncation, as a converter would
    hdr = {"b": {"dtype": "BF16", "shape": [4], "data_offsets": [0, 8]}}
    got = st.load(_file(tmp_path, hdr, upper.tobytes()))["b"]
    np.testing.assert_array_equal(got[:3], [1.0, -2.5, 3.140625])  # exactly representable
    assert got[3] == pytest.approx(1e-3, rel=2 ** -7)                 # 8-bit mantissa
    assert got[3] != np.float32(1e-3)


@pytest.mark.parametrize("header,data,header_len,message", [
    ({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}, b"\0" * 8, None,
     "out of bounds"),                                           # truncated data
    ({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 12]}}, b"\0" * 16, None,
     "needs 16 bytes"),                                          # size disagrees with shape
    ({"w": {"dtype": "F32", "shape": [2], "data_offsets": [-8, 0]}}, b"\0" * 8, None,
     "out of bounds"),
    ({"w": {"dtype": "F32", "shape": [2], "data_offsets": [8, 0]}}, b"\0" * 8, None,
     "out of bounds"),                                           # begin > end
    ({"w": {"dtype": "I64", "shape": [1], "data_offsets": [0, 8]}}, b"\0" * 8, None,
     "unsupported dtype"),
    ({"w": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}}, b"\0" * 4, None,
     "non-negative"),
    ({"w": {"dtype": "F32", "shape": [1]}}, b"\0" * 4, None, "data_offsets"),
    ({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
      "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}, b"\0" * 12, None, "overlap"),
    ({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}, b"\0" * 4, 10 ** 6,
     "past the end"),                                            # header length too large
    ([1, 2], b"", None, "not an object"),
])
def test_rejects_corrupt_headers(tmp_path, header, data, header_len, message):
    p = _file(tmp_path, header, data, header_len=header_len)
    with pytest.raises(st.SafetensorsError, match=message):
        st.load(p)


def test_rejects_garbage_and_short_files(tmp_path):
    p = tmp_path / "short.safetensors"
    p.write_bytes(b"\x01\x02")
    with pytest.raises(st.SafetensorsError, match="shorter than"):
        st.load(p)
    p.write_bytes(struct.pack("<Q", 5) + b"{nope")
    with pytest.raises(st.SafetensorsError, match="not valid UTF-8 JSON"):
        st.load(p)
    p.write_bytes(struct.pack("<Q", 2 ** 63) + b"{}")
    with pytest.raises(st.SafetensorsError, match="limit"):
        st.load(p)


def test_error_names_the_tensor(tmp_path):
    hdr = {"h.3.attn.c_attn.weight": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}
    with pytest.raises(st.SafetensorsError, match=r"h\.3\.attn\.c_attn\.weight"):
        st.load(_file(tmp_path, hdr, b"\0" * 15))
