# Exactly once under kills (issue 35: the old figures still hold). `serve` with W workers takes
# N jobs (4 in 5 build and fail in nvcc, 1 in 5 is refused by the screen); while they run, a
# random worker is SIGKILLed about every second. Prints the jobs lost, the statuses, the
# attempts seen and what scratch is left. Usage: scripts/serve_kill_soak.py N W (from a build in
# build/; no GPU needed: the GPU layers are skipped).
import json, os, random, signal, subprocess, sys, time, urllib.request
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT + "/python")
from ptxbench import Client
BIN = os.environ.get("PTXBENCH_BIN", ROOT + "/build/src/cli/ptxbench")
N, WORKERS = int(sys.argv[1]), int(sys.argv[2])
d = "/tmp/ptxbench-soak-%d" % os.getpid(); os.makedirs(d)
port = 18000 + os.getpid() % 1000
env = dict(os.environ, PTXBENCH_CACHE=d + "/cache")
serve = subprocess.Popen([BIN, "serve", "--db", d + "/q.db", "--port", str(port), "--workers", str(WORKERS),
                          "--gpus", "none", "--lease", "5"], stdout=open(d + "/serve.log", "w"),
                         stderr=subprocess.STDOUT, env=env, start_new_session=True)
c = Client("http://127.0.0.1:%d" % port, timeout=30)
for _ in range(100):
    try:
        if c.health(): break
    except Exception: time.sleep(0.2)
ids = []
for i in range(N):
    if i % 5 != 0:  # a build that fails (nvcc runs)
        src = 'extern "C" int run(const void* A, const void* B, void* C, int M, int N, int K, void* s) { return undeclared_%d; }' % i
    else:           # the screen refuses it (no build)
        src = '#include <cublas_v2.h>\n// %d\n' % i
    ids.append(c.submit(src, task="gemm_n128_k2048")["id"])
kills, t0 = 0, time.time()
while time.time() - t0 < 600:
    done = 0
    for j in ids:
        r = c.result(j, wait=0)
        done += r is not None
    if done == len(ids): break
    pids = subprocess.run(["pgrep", "-f", "ptxbench worker"], capture_output=True, text=True).stdout.split()
    if pids and random.random() < 0.7:
        os.kill(int(random.choice(pids)), signal.SIGKILL); kills += 1
    time.sleep(0.7)
statuses = {}
lost = 0
for j in ids:
    r = c.result(j, wait=0)
    if r is None: lost += 1; continue
    statuses[r["status"]] = statuses.get(r["status"], 0) + 1
jobs = [c.job(j) for j in ids]
attempts = sorted(set(jb.get("attempts", jb.get("attempt", -1)) for jb in jobs))
print("jobs %d, kills %d, lost %d, statuses %s, attempts seen %s, %.0f s" % (len(ids), kills, lost, statuses, attempts, time.time() - t0))
print("health:", json.dumps(c.health())[:600])
os.killpg(serve.pid, signal.SIGTERM); serve.wait(30)
import glob
print("leftovers: /dev/shm ptxbench* %d, tmpxft in /tmp %d, cache .tmp. %d" % (
    len(glob.glob("/dev/shm/ptxbench*")), len(glob.glob("/tmp/tmpxft_*")),
    len(glob.glob(d + "/cache/**/*.tmp.*", recursive=True))))
