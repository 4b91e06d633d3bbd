"""Token ids from numpy arrays, sequences and DLPack tensors (torch, jax, ...)."""
from __future__ import annotations

from typing import Any, Sequence, Union

import numpy as np

from ._errors import InvalidArgumentError

Ids = Union[Sequence[int], np.ndarray, Any]  # Any: an object with __dlpack__

_DLPACK_DEVICES = {1: "CPU", 2: "CUDA", 3: "CUDA host", 4: "OpenCL", 7: "Vulkan", 8: "Metal",
                   10: "ROCm", 13: "CUDA managed"}


def _from_dlpack(tensor: Any) -> np.ndarray:
    device_type, device_id = tensor.__dlpack_device__()
    if int(device_type) != 1:
        name = _DLPACK_DEVICES.get(int(device_type), f"type {int(device_type)}")
        raise InvalidArgumentError(
            f"a tensor on a {name} device ({device_id}): xf's C API takes token ids in CPU "
            f"memory, whatever the library's target (move it first, e.g. tensor.cpu())")
    return np.from_dlpack(tensor)


def as_ids(ids: Ids, what: str = "ids") -> np.ndarray:
    """`ids` as a contiguous int32 array of one sequence; the C API checks their range."""
    if hasattr(ids, "__dlpack_device__") and not isinstance(ids, np.ndarray):
        array = _from_dlpack(ids)
    else:
        array = np.asarray(ids)
    if array.ndim != 1:
        raise InvalidArgumentError(f"{what}: expected one sequence of ids (1-D), "
                                   f"got shape {tuple(array.shape)}")
    if array.size == 0:
        raise InvalidArgumentError(f"{what}: expected at least one id")
    if array.dtype.kind not in "iu":
        raise InvalidArgumentError(f"{what}: token ids are integers, got dtype {array.dtype}")
    if array.min() < np.iinfo(np.int32).min or array.max() > np.iinfo(np.int32).max:
        raise InvalidArgumentError(f"{what}: id {int(array.max())} does not fit in int32")
    return np.ascontiguousarray(array, dtype=np.int32)
