"""Reads device memory of the stand-in driver (test/gpu/cuda_stand_in.c) from the host: a
copy there and back, then a plain host read of the device address, which must kill the
process under $XF_CUDA_STAND_IN_GUARD=1 (stand-in-guard.test)."""
import ctypes
import sys

driver = ctypes.CDLL(sys.argv[1])
device = ctypes.c_ulonglong()
assert driver.cuMemAlloc_v2(ctypes.byref(device), 64) == 0
sent = (ctypes.c_char * 64)(*b"x" * 64)
assert driver.cuMemcpyHtoD_v2(device, sent, 64) == 0
back = (ctypes.c_char * 64)()
assert driver.cuMemcpyDtoH_v2(back, device, 64) == 0
print("copied back:", back.raw[:4].decode(), flush=True)
print("host read:", ctypes.string_at(device.value, 4).decode(), flush=True)
