"""Helpers shared by the whole-model benchmarks (run_model.py, run_decode.py), run with
/opt/xf-venv: machine state (load average, CPU, measured FMA peak and read bandwidth), the
xf executable and checkpoint, and the line protocol of the /opt/hf-venv worker processes."""
import json
import pathlib
import re
import shutil
import subprocess
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
ORACLE = ROOT / "test" / "reference" / "oracle.py"
N_VOCAB = 50257  # GPT-2


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def loadavg():
    return [float(x) for x in pathlib.Path("/proc/loadavg").read_text().split()[:3]]


def cpu_family(cpuinfo=None):
    """The CPU family docs/bench.md keeps a table for: "Zen 3" / "Zen 4" / "Zen 5" from AMD's
    family and model numbers (family 25: Zen 4 for models 0x10-0x1f, 0x60-0x7f, 0xa0-0xaf, else
    Zen 3; 26: Zen 5), with ", AVX-512 hidden" where a Zen 4 or 5 VM exposes no avx512f (it
    then runs AVX2 code only); "Intel Xeon" with "+ AMX" where the OS exposes amx_tile; else
    the vendor, family and model numbers. VMs often name only "AMD EPYC", so the model name
    alone does not say which."""
    text = cpuinfo if cpuinfo is not None else pathlib.Path("/proc/cpuinfo").read_text()
    fields = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() not in fields:
            fields[key.strip()] = value.strip()
    vendor, family = fields.get("vendor_id", "?"), fields.get("cpu family", "?")
    flags = set(fields.get("flags", "").split())
    if vendor == "AuthenticAMD" and family in ("25", "26"):
        model = int(fields.get("model", "0") or 0)
        zen = 5 if family == "26" else 4 if model >> 4 in (0x1, 0x6, 0x7, 0xa) else 3
        return f"Zen {zen}" + (", AVX-512 hidden" if zen > 3 and "avx512f" not in flags else "")
    if vendor == "GenuineIntel" and "Xeon" in fields.get("model name", ""):
        return "Intel Xeon" + (" + AMX" if "amx_tile" in flags else "")
    return f"{vendor} family {family} model {fields.get('model', '?')}"


def cpu_model():
    """lscpu's model name and the family (cpu_family), e.g. "AMD EPYC (Zen 5)"."""
    name = "unknown"
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                name = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        return f"{name} ({cpu_family()})"
    except OSError:
        return name


def project_cxx(build):
    """The build's C++ compiler (CMakeCache.txt), else clang++. Not GCC first: GCC 12 -O2
    keeps MachinePeak.cpp's accumulators in memory and measures a quarter of the peak."""
    cache = pathlib.Path(build) / "CMakeCache.txt"
    if cache.exists():
        m = re.search(r"^CMAKE_CXX_COMPILER:\w+=(.+)$", cache.read_text(), re.M)
        if m and shutil.which(m.group(1).strip()):
            return m.group(1).strip()
    return shutil.which("clang++") or shutil.which("c++")


def build_peak(workdir, build):
    """Compile test/bench/model/peak_main.cpp + runtime/lib/MachinePeak.cpp (and Amx.cpp, its
    AMX tile peaks' setup); the executable or None."""
    exe = workdir / "xf-model-peak"
    cxx = project_cxx(build)
    if not cxx:
        return None
    r = subprocess.run([cxx, "-O3", "-std=c++17", "-pthread", "-I", str(ROOT / "test" / "bench"),
                        str(ROOT / "runtime" / "lib" / "MachinePeak.cpp"),
                        str(ROOT / "runtime" / "lib" / "Amx.cpp"), "-I", str(ROOT / "runtime" / "include"),
                        str(ROOT / "test" / "bench" / "model" / "peak_main.cpp"), "-o", str(exe)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        log("peak helper did not build:", r.stderr.strip()[-500:])
        return None
    return exe


def measure_peak(exe, threads):
    """{"gflops": FMA peak, "read_gbs": read bandwidth, ...} measured now, or None."""
    if exe is None:
        return None
    r = subprocess.run([str(exe), str(threads)], capture_output=True, text=True)
    return json.loads(r.stdout) if r.returncode == 0 else None


def measure_bandwidth(exe, threads):
    """The read bandwidth in GB/s measured now (~0.3 s), or None: the decode benchmarks take it
    right beside each timed run, since this VM's bandwidth drifts from minute to minute."""
    if exe is None:
        return None
    r = subprocess.run([str(exe), str(threads), "--bandwidth"], capture_output=True, text=True)
    return json.loads(r.stdout)["read_gbs"] if r.returncode == 0 else None


def compile_xf(build, out, extra=()):
    """`xfc examples/gpt2.xf -o out [extra]`."""
    subprocess.run([str(pathlib.Path(build) / "bin" / "xfc"), str(ROOT / "examples" / "gpt2.xf"),
                    "-o", str(out), *extra], check=True)
    return out


def write_checkpoint(path, seed):
    """One random GPT-2-small F32 checkpoint, written by the oracle (test/reference/oracle.py)."""
    subprocess.run([sys.executable, str(ORACLE), "--arch", "gpt2", "--write-random", str(path),
                    "--seed", str(seed)], check=True)
    return path


def random_tokens(seed, length):
    rng = np.random.default_rng(seed)
    return ",".join(str(t) for t in rng.integers(0, N_VOCAB, size=length))


def xf_version():
    """The commit the executable's compiler was built from, as far as the work tree tells."""
    git = ["git", "-C", str(ROOT)]
    head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True).stdout.strip() or "?"
    dirty = subprocess.run([*git, "status", "--porcelain", "--", "compiler", "runtime"],
                           capture_output=True, text=True).stdout.strip()
    return head + (" + uncommitted compiler/runtime changes" if dirty else "")


class Worker:
    """A process in /opt/hf-venv speaking the JSON line protocol of test/bench/hf_common.py:
    one JSON object per line on its stdout, the first {"ready": true, ...}, then one reply per
    command line written to its stdin; its stderr goes to log_path."""

    def __init__(self, name, argv, log_path, env):
        self.name = name
        self.log_path = log_path
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=open(self.log_path, "w"), text=True, env=env)
        self.info = None

    def read(self):
        line = self.proc.stdout.readline()
        if not line:
            tail = self.log_path.read_text()[-3000:]
            raise SystemExit(f"{self.name} worker died; end of {self.log_path}:\n{tail}")
        obj = json.loads(line)
        if "error" in obj:
            raise SystemExit(f"{self.name} worker: {obj['error']}")
        return obj

    def ready(self):
        self.info = self.read()
        return self.info

    def ask(self, cmd):
        self.proc.stdin.write(cmd + "\n")
        self.proc.stdin.flush()
        return self.read()

    def close(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write("quit\n")
                self.proc.stdin.flush()
                self.proc.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()


def replace_doc_section(begin, end, section, doc=ROOT / "docs" / "bench.md"):
    """Writes `section` (which starts with `begin` and ends with `end`) into docs/bench.md in
    place of the previous one, or appends it; every benchmark owns one marked section."""
    current = doc.read_text() if doc.exists() else "# Benchmarks\n"
    if begin in current and end in current:
        before, rest = current.split(begin, 1)
        current = before + section + rest.split(end, 1)[1]
    else:
        current = current.rstrip("\n") + "\n\n" + section + "\n"
    doc.write_text(current)
    return doc
