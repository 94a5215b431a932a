"""The per-container shim: owns a runc container's stdio, writes its CRI log, records how it exited.

Run as `python -S -P shim.py ARGS` (standard library only; -P keeps this directory off sys.path, so it starts fast). It
daemonizes (so the kubelet can exit and restart without the container noticing),
becomes a child subreaper, runs `runc create` with stdout/stderr on pipes it holds,
reports `{"pid": N}` (or `{"error": ...}`) on the ready fd, then:

* pumps both pipes into the log file, one line per record in the CRI format
  `2026-01-01T00:00:00.000000000Z stdout F text` (P for a partial line over 16 KiB),
  rotating the file by size;
* reaps the container's init (re-parented to us when runc exits) and writes
  `exit.json` with the exit code (128+signal when killed) and whether the cgroup's OOM
  counter moved.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import sys
import threading
import time

PR_SET_CHILD_SUBREAPER = 36
MAX_LINE = 16 * 1024  # containerd's max log line size before splitting with the P tag


def _ts() -> str:
    ns = time.time_ns()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ns // 10**9)) + f".{ns % 10**9:09d}Z"


class CRILog:
    """A CRI-format log file written by two pumps; rotated by size (`<path>.<UTC timestamp>`)."""

    def __init__(self, path: str, max_size: int, max_files: int) -> None:
        self.path = path
        self.max_size = max_size
        self.max_files = max(1, max_files)
        self.lock = threading.Lock()
        self.f = open(path, "ab", buffering=0)
        self.size = self.f.tell()

    def write(self, stream: bytes, tag: bytes, content: bytes) -> None:
        rec = _ts().encode() + b" " + stream + b" " + tag + b" " + content + b"\n"
        with self.lock:
            if self.max_size > 0 and self.size + len(rec) > self.max_size and self.size > 0:
                self._rotate()
            self.f.write(rec)
            self.size += len(rec)

    def _rotate(self) -> None:
        self.f.close()
        stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
        dst = f"{self.path}.{stamp}"
        n = 0
        while os.path.exists(dst):
            n += 1
            dst = f"{self.path}.{stamp}-{n}"
        os.rename(self.path, dst)
        d, base = os.path.split(self.path)
        rotated = sorted(x for x in os.listdir(d or ".") if x.startswith(base + "."))
        for old in rotated[: max(0, len(rotated) - (self.max_files - 1))]:
            try:
                os.unlink(os.path.join(d, old))
            except OSError:
                pass
        self.f = open(self.path, "ab", buffering=0)
        self.size = 0

    def reopen(self) -> None:
        with self.lock:
            self.f.close()
            self.f = open(self.path, "ab", buffering=0)
            self.size = self.f.tell()


def pump(fd: int, stream: bytes, log: CRILog) -> None:
    buf = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except InterruptedError:
            continue
        except OSError:
            chunk = b""
        if not chunk:
            break
        buf += chunk
        while True:
            nl = buf.find(b"\n")
            if nl < 0:
                break
            line, buf = buf[:nl], buf[nl + 1 :]
            while len(line) > MAX_LINE:
                log.write(stream, b"P", line[:MAX_LINE])
                line = line[MAX_LINE:]
            log.write(stream, b"F", line)
        while len(buf) > MAX_LINE:
            log.write(stream, b"P", buf[:MAX_LINE])
            buf = buf[MAX_LINE:]
    if buf:
        log.write(stream, b"F", buf)
    os.close(fd)


def oom_kills(cgroup_path: str) -> int:
    for file in (f"/sys/fs/cgroup/{cgroup_path}/memory.events", f"/sys/fs/cgroup/memory/{cgroup_path}/memory.oom_control"):
        try:
            with open(file) as f:
                for line in f:
                    k, _, v = line.partition(" ")
                    if k == "oom_kill":
                        return int(v)
        except OSError:
            continue
    return 0


def _write_json(path: str, doc: dict) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f)
    os.replace(tmp, path)


def _wait_status(pid: int) -> int:
    while True:
        try:
            _, st = os.waitpid(pid, 0)
            return os.waitstatus_to_exitcode(st)
        except InterruptedError:
            continue


def _daemonize() -> None:
    """Fork away from the kubelet: the parent exits at once (the kubelet reaps it), the child lives on."""
    if os.fork() > 0:
        os._exit(0)
    os.setsid()


def _runc_error(log_path: str) -> str:
    msgs = []
    try:
        with open(log_path) as f:
            for line in f:
                try:
                    rec = json.loads(line)
                except ValueError:
                    msgs.append(line.strip())
                    continue
                if rec.get("level") in ("error", "fatal"):
                    msgs.append(rec.get("msg", ""))
    except OSError:
        pass
    return "; ".join(m for m in msgs if m)[-2000:] or "runc create failed"


class Args:
    """Command-line options (argparse and subprocess are left out: they double the shim's start time)."""

    id = ""
    runc = "runc"
    root = ""
    bundle = ""
    state_dir = ""
    log = ""
    log_max_size = 10 * 1024 * 1024
    log_max_files = 5
    cgroup_path = ""
    ready_fd = -1
    exec_json = ""  # process-runtime mode: run the process described by this JSON file instead of runc create


def parse_args(argv: list[str]) -> Args:
    a = Args()
    names = {"--exec": "exec_json"}
    it = iter(argv)
    for flag in it:
        attr = names.get(flag, flag.lstrip("-").replace("-", "_"))
        if not flag.startswith("--") or not hasattr(Args, attr):
            raise SystemExit(f"pyk8s-shim: unknown option {flag}")
        value = next(it)
        setattr(a, attr, int(value) if isinstance(getattr(Args, attr), int) else value)
    if not (a.id and a.root and a.bundle and a.state_dir and a.log and a.ready_fd >= 0):
        raise SystemExit("pyk8s-shim: --id, --root, --bundle, --state-dir, --log and --ready-fd are required")
    return a


def spawn(argv: list[str], stdin: int, stdout: int, stderr: int, env: dict[str, str] | None = None,
          cwd: str | None = None, new_session: bool = False) -> int:
    """fork+exec with the given stdio and every other fd closed; returns the pid."""
    pid = os.fork()
    if pid == 0:
        try:
            if new_session:
                os.setsid()
            os.dup2(stdin, 0)
            os.dup2(stdout, 1)
            os.dup2(stderr, 2)
            os.closerange(3, 65536)
            for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM, signal.SIGPIPE, signal.SIGUSR1):
                signal.signal(sig, signal.SIG_DFL)
            if cwd:
                os.chdir(cwd)
            if env is None:
                os.execvp(argv[0], argv)
            else:
                os.execvpe(argv[0], argv, env)
        except BaseException as e:
            try:
                os.write(2, f"exec {argv[0]}: {e}\n".encode())
            finally:
                os._exit(127)
    return pid


def main(argv: list[str] | None = None) -> int:
    a = parse_args(sys.argv[1:] if argv is None else argv)

    _daemonize()
    # survive the kubelet's process group being signalled; a handler (not SIG_IGN) so exec resets it for the container
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
        signal.signal(sig, lambda *_: None)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    with open(os.path.join(a.state_dir, "shim.pid"), "w") as f:
        f.write(str(os.getpid()))

    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    pid_file = os.path.join(a.state_dir, "init.pid")
    runc_log = os.path.join(a.state_dir, "runc.log")
    devnull = os.open(os.devnull, os.O_RDONLY)
    ready = a.ready_fd
    if a.exec_json:
        with open(a.exec_json) as f:
            spec = json.load(f)
        child = spawn(spec["args"], devnull, out_w, err_w, spec.get("env"), spec.get("cwd") or None, True)
        rc = 0
        with open(pid_file, "w") as f:
            f.write(str(child))
    else:
        # runc passes its own stdio through to the container's init: the pipes become the container's stdout/err
        child = spawn([a.runc, "--root", a.root, "--log", runc_log, "--log-format", "json", "create",
                       "--bundle", a.bundle, "--pid-file", pid_file, a.id], devnull, out_w, err_w)
        rc = _wait_status(child)
    os.close(out_w)
    os.close(err_w)
    os.close(devnull)
    if rc != 0:
        msg = _runc_error(runc_log)
        # exit.json before the ready message: whoever reads the error must also see the final status
        _write_json(os.path.join(a.state_dir, "exit.json"),
                    {"exit_code": 128, "finished_at": time.time(), "oom_killed": False, "reason": "StartError",
                     "message": msg})
        os.write(ready, json.dumps({"error": msg}).encode())
        os.close(ready)
        return 1
    with open(pid_file) as f:
        init_pid = int(f.read().strip())
    log = CRILog(a.log, a.log_max_size, a.log_max_files)
    signal.signal(signal.SIGUSR1, lambda *_: log.reopen())  # ReopenContainerLog, after external rotation
    pumps = [threading.Thread(target=pump, args=(fd, s, log), daemon=True) for fd, s in ((out_r, b"stdout"), (err_r, b"stderr"))]
    for t in pumps:
        t.start()
    oom_before = oom_kills(a.cgroup_path) if a.cgroup_path else 0
    os.write(ready, json.dumps({"pid": init_pid, "shim_pid": os.getpid()}).encode())
    os.close(ready)

    status = None
    while status is None:
        try:
            pid, st = os.waitpid(-1, 0)
        except ChildProcessError:
            # init is gone without being our child (should not happen as subreaper): poll it
            if not os.path.exists(f"/proc/{init_pid}"):
                status = -1
                break
            time.sleep(0.05)
            continue
        except InterruptedError:
            continue
        if pid == init_pid:
            status = st
    if status == -1:
        code = 255
    elif os.WIFEXITED(status):
        code = os.WEXITSTATUS(status)
    else:
        code = 128 + os.WTERMSIG(status)
    finished = time.time()
    for t in pumps:  # the container's other processes die with its init; don't wait long for stragglers
        t.join(2.0)
    oom = bool(a.cgroup_path) and oom_kills(a.cgroup_path) > oom_before
    _write_json(os.path.join(a.state_dir, "exit.json"),
                {"exit_code": code, "finished_at": finished, "oom_killed": oom and code == 137})
    # keep reaping whatever else was re-parented to us until nothing is left
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            break
        except InterruptedError:
            continue
    return 0


if __name__ == "__main__":
    sys.exit(main())
