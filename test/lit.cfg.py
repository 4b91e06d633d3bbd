# -*- Python -*- lit configuration for the xf test suite.

import os

import lit.formats
from lit.llvm import llvm_config

config.name = "XF"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".xf", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.xf_obj_root, "test")
# Not lit tests: the oracle (pytest), benchmarks, GoogleTest sources, inputs.
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "e2e",
                   "reference", "bench", "unit", "Inputs", "fuzz"]

# xfc keeps its objects in a cache inside the build directory, never the user's
# ~/.cache/xf/objects (lit passes HOME through).
config.environment["XF_CACHE_DIR"] = os.path.join(config.xf_obj_root, "test", "xf-object-cache")
# Likewise --profile's machine ceilings (~/.cache/xf/machine.json).
config.environment["XF_MACHINE_FILE"] = os.path.join(config.xf_obj_root, "test", "xf-machine.json")

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%xf_src_root", config.xf_src_root))
config.substitutions.append(("%python", config.python_executable))

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.xf_tools_dir, append_path=True)

tools = ["xf-opt"]
for optional_tool in ["xfc"]:
    if os.path.exists(os.path.join(config.xf_tools_dir, optional_tool)):
        tools.append(optional_tool)
        config.available_features.add(optional_tool)
llvm_config.add_tool_substitutions(tools, [config.xf_tools_dir, config.llvm_tools_dir])

# The CUDA toolkit, where installed, lets the GPU tests check more without a GPU
# (test/Gpu): ptxas assembles the emitted PTX, and its stub libcuda.so stands in for a
# driver with no device behind it.
import shutil
ptxas = shutil.which("ptxas") or next(
    (p for p in ["/usr/local/cuda/bin/ptxas"] if os.path.exists(p)), None)
if ptxas:
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", ptxas))
cuda_stub = "/usr/local/cuda/lib64/stubs/libcuda.so"
if os.path.exists(cuda_stub):
    config.available_features.add("cuda-stub-driver")
    config.substitutions.append(("%cuda_stub_driver", cuda_stub))
# A driver library with no GPU behind it, built here (test/gpu/cuda_stand_in.c): CUDA builds
# run their host code against it, and it logs every kernel launch.
cuda_stand_in = os.path.join(config.xf_obj_root, "lib", "libxf-cuda-stand-in.so")
if os.path.exists(cuda_stand_in):
    config.available_features.add("cuda-stand-in")
    config.substitutions.append(("%cuda_stand_in", cuda_stand_in))
