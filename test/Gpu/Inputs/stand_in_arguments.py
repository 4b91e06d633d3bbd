"""Launches a kernel of the stand-in driver (test/gpu/cuda_stand_in.c) with as many arguments as
its entry's PTX declares, one fewer and one more: only the first may launch
(stand-in-arguments.test), so a launcher out of step with its kernels' parameters fails every
test that launches through the stand-in."""
import ctypes
import sys

driver = ctypes.CDLL(sys.argv[1])
PTX = b""".version 8.0
.target sm_80
.address_size 64
.visible .entry scaled(
	.param .u64 .ptr .align 1 scaled_param_0,
	.param .u32 scaled_param_1,
	.param .u32 scaled_param_2
)
{
	ret;
}
"""
module = ctypes.c_void_p()
image = ctypes.create_string_buffer(PTX)
assert driver.cuModuleLoadData(ctypes.byref(module), image) == 0
function = ctypes.c_void_p()
assert driver.cuModuleGetFunction(ctypes.byref(function), module, b"scaled") == 0
device = ctypes.c_ulonglong()
assert driver.cuMemAlloc_v2(ctypes.byref(device), 64) == 0
size, scale = ctypes.c_int32(16), ctypes.c_int32(3)
values = [ctypes.pointer(device), ctypes.pointer(size), ctypes.pointer(scale), ctypes.pointer(scale)]
for count in (3, 2, 4):
    params = (ctypes.c_void_p * (count + 1))(
        *[ctypes.cast(v, ctypes.c_void_p) for v in values[:count]], None)
    rc = driver.cuLaunchKernel(function, 1, 1, 1, 32, 1, 1, 0, None, params, None)
    print(f"{count} arguments: {rc}", flush=True)
