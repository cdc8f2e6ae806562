#!/usr/bin/env python3
"""Which Landlock rule does the CUDA driver need? Runs a tiny CUDA program under several rule
sets (and once with the sandbox's environment only) and prints whether cuInit succeeded."""
import ctypes, os, subprocess, sys, glob, tempfile
libc = ctypes.CDLL(None, use_errno=True)
EXE, RF, RD = 1, 4, 8
ALL = (1 << 16) - 1
FILE_RIGHTS = 1 | 2 | 4 | (1 << 14) | (1 << 15)
class Attr(ctypes.Structure): _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]
class PB(ctypes.Structure): _pack_ = 1; _fields_ = [("allowed", ctypes.c_uint64), ("fd", ctypes.c_int32)]
def restrict(rules):
    a = Attr(ALL, 0, 0); rs = libc.syscall(444, ctypes.byref(a), 8, 0)
    assert rs >= 0, ctypes.get_errno()
    for path, acc in rules:
        if not os.path.exists(path): continue
        fd = os.open(path, os.O_PATH)
        if not os.path.isdir(path): acc &= FILE_RIGHTS
        pb = PB(acc, fd); r = libc.syscall(445, rs, 1, ctypes.byref(pb), 0)
        if r != 0: print("add_rule failed", path, ctypes.get_errno())
        os.close(fd)
    libc.prctl(38, 1, 0, 0, 0); assert libc.syscall(446, rs, 0) == 0
work = tempfile.mkdtemp(dir="/dev/shm"); os.chmod(work, 0o755)
src = os.path.join(work, "k.cu"); open(src, "w").write('#include <cstdio>\n#include <cuda_runtime.h>\nint main(){int n=0; cudaError_t e=cudaGetDeviceCount(&n); printf("%s n=%d\\n", cudaGetErrorString(e), n); return 0;}\n')
subprocess.run(["nvcc", "-o", work + "/k", src], check=True)
devs = glob.glob("/dev/nvidia*")
base = [(p, EXE | RF | RD) for p in ["/usr", "/lib", "/lib64", "/bin", "/sbin", "/etc", "/opt", "/sys", "/proc", "/run", work]]
base += [(p, RF | 2 | (1 << 15)) for p in ["/dev/null", "/dev/zero", "/dev/urandom"] + devs]
base += [(work, ALL), ("/dev/shm", ALL)]
configs = {
    "ours": base,
    "ours+write /proc,/sys": base + [("/proc", ALL), ("/sys", ALL)],
    "ours+all of /dev": base + [("/dev", ALL)],
    "ours+write /proc/self": base + [("/proc/self", ALL)],
    "ours+write /proc/self (file rights)": base + [("/proc/self", RF | 2 | (1 << 14))],
    "ours+write /sys": base + [("/sys", ALL)],
    "ours+write /proc/driver": base + [("/proc/driver", ALL)],
    "ours+read /": base + [("/", EXE | RF | RD)],
    "everything": [("/", ALL)],
}
print("devices:", devs)
for name, rules in configs.items():
    pid = os.fork()
    if pid == 0:
        restrict(rules); os.execv(work + "/k", [work + "/k"])
    os.waitpid(pid, 0); print("  ^", name, flush=True)
env = {k: os.environ[k] for k in ["PATH", "LD_LIBRARY_PATH"] if k in os.environ}
env.update(HOME=work, TMPDIR=work)
print(subprocess.run([work + "/k"], env=env, capture_output=True, text=True).stdout.strip(), " ^ sandbox environment only")
print(subprocess.run(["sh", "-c", "ulimit -n 4096; ulimit -f 67108864; " + work + "/k"], capture_output=True, text=True).stdout.strip(), " ^ rlimits")
