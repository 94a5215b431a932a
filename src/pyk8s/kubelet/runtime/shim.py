"""The per-container shim: owns a runc container's stdio, writes its CRI log, records how it exited.

Run as `python -S -P shim.py ARGS` (standard library only; -P keeps this directory off sys.path, so it starts fast). It
daemonizes (so the kubelet can exit and restart without the container noticing),
becomes a child subreaper, runs `runc create` (or `runc run --detach` when asked to start
the container too: one runc call fewer per container) with stdout/stderr on pipes it holds,
reports `{"pid": N}` (or `{"error": ...}`) on the ready fd, then:

* pumps both pipes into the log file, one line per record in the CRI format
  `2026-01-01T00:00:00.000000000Z stdout F text` (P for a partial line over 16 KiB),
  rotating the file by size;
* reaps the container's init (re-parented to us when runc exits) and writes
  `exit.json` with the exit code (128+signal when killed) and whether the cgroup's OOM
  counter moved;
* for a container with stdin or a TTY, serves `attach.sock` in its state dir for
  `kubectl attach`: every client gets the container's output as it is written
  (attaching to other containers follows their log), and may send stdin (kept open on a pipe for a
  `stdin: true` container, closed after the first client with `stdinOnce`) and terminal
  sizes. A `tty: true` container runs on a pty: runc hands the master to us over
  `console.sock`, and its output is logged as stdout, as upstream.

Attach frames, both ways: one type byte, a 4-byte big-endian length, the payload. To the
client: 5 attached (empty, always first: the shim took this connection; one it never accepted
is hung up without it when the container exits), 1 stdout, 2 stderr. From the client: 0 stdin data, 3 stdin closed, 4 terminal size
(two big-endian 16-bit numbers: width, height).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import time

TYPE_CHECKING = False  # typing itself is not imported: it costs the shim's start more than all else here
if TYPE_CHECKING:
    import socket

# Only what every container needs is imported up front: the shim's start is on every pod's startup path. json,
# socket, queue and the terminal modules load where they are used (errors, exit, attach for stdin/tty containers).

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


FRAME_SIZE = 5  # ">BI": type, length
OUT_STDOUT, OUT_STDERR, OUT_ATTACHED = 1, 2, 5
IN_STDIN, IN_CLOSE, IN_RESIZE = 0, 3, 4
CLIENT_BACKLOG = 1024  # output frames queued for one slow attach client before it is dropped
EARLY_OUTPUT_MAX = 64 * 1024  # output kept for the first attach client, printed before anyone attached


class AttachClient:
    """One attached client: output frames go out from its own thread, so a slow client never stalls the log."""

    def __init__(self, conn: socket.socket) -> None:
        import queue

        self.conn = conn
        self.q: queue.Queue[bytes | None] = queue.Queue(CLIENT_BACKLOG)
        threading.Thread(target=self._send, daemon=True).start()

    def offer(self, frame: bytes | None) -> bool:
        import queue

        try:
            self.q.put_nowait(frame)
            return True
        except queue.Full:
            return False

    def _send(self) -> None:
        import socket

        try:
            while (frame := self.q.get()) is not None:
                self.conn.sendall(frame)
        except OSError:
            pass
        finally:
            try:
                self.conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class AttachServer:
    """attach.sock: output to every client, stdin and resizes from them (see the module docstring)."""

    def __init__(self, path: str, stdin_fd: int, stdin_once: bool, tty_fd: int) -> None:
        import socket

        self.lock = threading.Lock()
        self.clients: list[AttachClient] = []
        self.stdin_fd = stdin_fd  # where client input goes (a pipe's write end or the pty master); -1: none
        self.stdin_once = stdin_once
        self.tty_fd = tty_fd
        self.closed = False
        # What the container prints before its first client attaches goes to that client first: `kubectl run -i`
        # attaches only once it sees the pod running, and a short command has printed (or exited) by then.
        self.early: list[bytes] | None = []
        self.early_size = 0
        try:
            os.unlink(path)
        except OSError:
            pass
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(path)
        os.chmod(path, 0o600)
        self.sock.listen(16)
        threading.Thread(target=self._accept, daemon=True).start()

    def broadcast(self, kind: int, data: bytes) -> None:
        if self.early is None and not self.clients:  # (in this order: _accept adds a client before early goes)
            return
        frame = bytes([kind]) + len(data).to_bytes(4, "big") + data
        with self.lock:
            early = self.early
            if early is not None:
                if self.early_size + len(frame) <= EARLY_OUTPUT_MAX and len(early) < CLIENT_BACKLOG // 2:
                    early.append(frame)
                    self.early_size += len(frame)
                return
            for c in list(self.clients):
                if not c.offer(frame):
                    self.clients.remove(c)  # too far behind: it is dropped, as a stalled attach is upstream
                    c.offer(None)

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            client = AttachClient(conn)
            client.offer(bytes([OUT_ATTACHED]) + bytes(4))
            with self.lock:
                if not self.closed:
                    self.clients.append(client)
                early, self.early = self.early, None
                for frame in early or ():
                    client.offer(frame)
                if self.closed:
                    client.offer(None)
                    continue
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: AttachClient) -> None:
        f = client.conn.makefile("rb")
        used_stdin = False
        try:
            while True:
                head = f.read(FRAME_SIZE)
                if len(head) < FRAME_SIZE:
                    break
                kind, n = head[0], int.from_bytes(head[1:], "big")
                data = f.read(n)
                if len(data) < n:
                    break
                if kind == IN_STDIN:
                    used_stdin = True
                    self._write_stdin(data)
                elif kind == IN_CLOSE:
                    used_stdin = True
                    if self.stdin_once:  # otherwise stdin stays open for the next client, as upstream
                        self._close_stdin()
                elif kind == IN_RESIZE and self.tty_fd >= 0 and n == 4:
                    import fcntl
                    import struct
                    import termios

                    w, h = struct.unpack(">HH", data)
                    try:
                        fcntl.ioctl(self.tty_fd, termios.TIOCSWINSZ, struct.pack("HHHH", h, w, 0, 0))
                    except OSError:
                        pass
        except OSError:
            pass
        finally:
            with self.lock:
                if client in self.clients:
                    self.clients.remove(client)
            client.offer(None)
            if used_stdin and self.stdin_once:
                self._close_stdin()  # stdinOnce: the first client's detach ends the container's stdin

    def _write_stdin(self, data: bytes) -> None:
        with self.lock:
            fd = self.stdin_fd
        view = memoryview(data)
        while view and fd >= 0:
            try:
                view = view[os.write(fd, view):]
            except InterruptedError:
                continue
            except OSError:
                return

    def _close_stdin(self) -> None:
        with self.lock:
            fd, self.stdin_fd = self.stdin_fd, -1
        if fd >= 0 and fd != self.tty_fd:  # a terminal has no half-close: its input just stops being forwarded
            try:
                os.close(fd)
            except OSError:
                pass

    def close(self) -> None:
        with self.lock:
            self.closed = True
            clients, self.clients = self.clients, []
        for c in clients:
            c.offer(None)
        try:
            self.sock.close()
        except OSError:
            pass


def receive_fd(sock: socket.socket) -> int:
    """The one fd runc sends over the console socket (SCM_RIGHTS)."""
    import socket

    conn, _ = sock.accept()
    with conn:
        _, anc, _, _ = conn.recvmsg(4096, socket.CMSG_SPACE(4))
    fds = _received_fds(anc)
    if not fds:
        raise OSError("runc sent no console fd")
    return fds[0]


def pump(fd: int, stream: bytes, log: CRILog, attach: AttachServer | None = None, close: bool = True) -> None:
    buf = b""
    kind = OUT_STDOUT if stream == b"stdout" else OUT_STDERR
    while True:
        try:
            chunk = os.read(fd, 65536)
        except InterruptedError:
            continue
        except OSError:
            chunk = b""
        if not chunk:
            break
        if attach is not None:
            attach.broadcast(kind, chunk)
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
    if close:
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
    import json

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
    import json

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
    stdin = 0  # 1: keep the container's stdin open on a pipe for attach
    stdin_once = 0
    tty = 0  # 1: the container runs on a pty (its OCI config has process.terminal)
    start = 0  # 1: `runc run --detach` (create and start in one runc call) instead of `runc create`
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
    # sockets are bound by relative name: a state dir's path may not fit in sun_path's 108 bytes (runc chdirs into
    # the bundle, which is this directory, before dialing the console socket). Before shim.pid: the runtime knows a
    # live shim by its working directory (a zygote's fork has the zygote's command line).
    os.chdir(a.state_dir)
    with open("shim.pid", "w") as f:
        f.write(str(os.getpid()))
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    pid_file = os.path.join(a.state_dir, "init.pid")
    runc_log = os.path.join(a.state_dir, "runc.log")
    devnull = os.open(os.devnull, os.O_RDONLY)
    tty = bool(a.tty) and not a.exec_json
    stdin_r, stdin_w = os.pipe() if a.stdin and not tty else (devnull, -1)
    console = None
    got: dict[str, int] = {}
    receiver: threading.Thread | None = None
    if tty:
        import socket

        console = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            os.unlink("console.sock")
        except OSError:
            pass
        console.bind("console.sock")
        console.listen(1)

        def receive() -> None:
            try:
                got["fd"] = receive_fd(console)
            except OSError:
                pass

        receiver = threading.Thread(target=receive, daemon=True)
        receiver.start()
    ready = a.ready_fd
    # before runc: `runc run` starts the container, which may be OOM-killed before runc even returns (the container's
    # cgroup is new, so this is normally 0)
    oom_before = oom_kills(a.cgroup_path) if a.cgroup_path else 0
    if a.exec_json:
        import json

        with open(a.exec_json) as f:
            spec = json.load(f)
        child = spawn(spec["args"], stdin_r, out_w, err_w, spec.get("env"), spec.get("cwd") or None, True)
        rc = 0
        with open(pid_file, "w") as f:
            f.write(str(child))
    else:
        # runc passes its own stdio through to the container's init: the pipes become the container's stdio
        # (a TTY container's init gets the pty slave instead; runc sends us the master)
        child = spawn([a.runc, "--root", a.root, "--log", runc_log, "--log-format", "json",
                       *(["run", "--detach"] if a.start else ["create"]), "--bundle", a.bundle, "--pid-file", pid_file,
                       *(["--console-socket", "console.sock"] if tty else []), a.id], stdin_r, out_w, err_w)
        rc = _wait_status(child)
    os.close(out_w)
    os.close(err_w)
    if stdin_r != devnull:
        os.close(stdin_r)
    os.close(devnull)
    master = -1
    if receiver is not None and console is not None:
        receiver.join(10 if rc == 0 else 0.1)
        console.close()
        try:
            os.unlink("console.sock")
        except OSError:
            pass
        master = got.get("fd", -1)
        if rc == 0 and master < 0:
            rc, _msg = 1, "runc sent no console"
    if rc != 0:
        msg = _runc_error(runc_log)
        # exit.json before the ready message: whoever reads the error must also see the final status
        _write_json(os.path.join(a.state_dir, "exit.json"),
                    {"exit_code": 128, "finished_at": time.time(), "oom_killed": False, "reason": "StartError",
                     "message": msg})
        import json

        os.write(ready, json.dumps({"error": msg}).encode())
        os.close(ready)
        return 1
    with open(pid_file) as f:
        init_pid = int(f.read().strip())
    log = CRILog(a.log, a.log_max_size, a.log_max_files)
    signal.signal(signal.SIGUSR1, lambda *_: log.reopen())  # ReopenContainerLog, after external rotation
    attach: AttachServer | None = None
    if master >= 0 or stdin_w >= 0:  # other containers' attach follows their log (nothing to send them)
        attach = AttachServer("attach.sock", master if master >= 0 else stdin_w, bool(a.stdin_once), master)
        if master >= 0 and not a.stdin:
            attach.stdin_fd = -1  # a TTY without stdin: nothing a client types reaches it
    sources = [(out_r, b"stdout", True), (err_r, b"stderr", True)]
    if master >= 0:
        sources.append((master, b"stdout", False))  # closed below, after the attach server lets go of it
    pumps = [threading.Thread(target=pump, args=(fd, s, log, attach, close), daemon=True) for fd, s, close in sources]
    for t in pumps:
        t.start()
    os.write(ready, b'{"pid": %d, "shim_pid": %d}' % (init_pid, os.getpid()))
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
    if attach is not None:
        attach.close()
        try:
            os.unlink("attach.sock")
        except OSError:
            pass
        attach._close_stdin()
    if master >= 0:
        os.close(master)
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


def _received_fds(anc: list[tuple[int, int, bytes]]) -> list[int]:
    import array
    import socket

    fds = array.array("i")
    for level, typ, data in anc:
        if level == socket.SOL_SOCKET and typ == socket.SCM_RIGHTS:
            fds.frombytes(data[: len(data) - (len(data) % fds.itemsize)])
    return list(fds)


def _run_forked(argv: list[str], ready_fd: int, log_fd: int) -> None:
    """In a zygote's child: become one container's shim (stdout/stderr to its shim.log) and never return."""
    code = 1
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # the shim waits for runc and the container
        os.dup2(log_fd, 1)
        os.dup2(log_fd, 2)
        os.close(log_fd)
        code = main([*argv, "--ready-fd", str(ready_fd)])
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
        if not isinstance(e.code, int) and e.code is not None:
            os.write(2, f"{e.code}\n".encode())
    except BaseException:  # noqa: BLE001 - reported in shim.log; the kubelet sees the ready pipe close unanswered
        import traceback

        os.write(2, traceback.format_exc().encode())
    finally:
        os._exit(code)


def zygote(sock_fd: int) -> int:
    """`--zygote FD`: fork one shim per request read from the unix socket FD, then wait for the next.

    A fork of this small, already-initialised process costs the kubelet about a millisecond, where an interpreter
    start with these imports costs ~25 ms of CPU and the kubelet's event loop a vfork+exec, for every container.
    A request is one SOCK_SEQPACKET message: the shim's arguments (NUL-separated, without --ready-fd) and two fds
    attached, the ready pipe's write end and shim.log. The zygote ends when the kubelet closes its end; the shims it
    forked have daemonized by then and live on, as ever.
    """
    import socket

    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # each child exits as soon as it has daemonized: no zombies
    sock = socket.socket(fileno=sock_fd)
    while True:
        try:
            msg, anc, _, _ = sock.recvmsg(65536, socket.CMSG_SPACE(2 * 4))
        except InterruptedError:
            continue
        except OSError:
            return 0
        fds = _received_fds(anc)
        if not msg:
            return 0
        if len(fds) == 2:
            if os.fork() == 0:
                sock.close()
                _run_forked(msg.decode().split("\0"), fds[0], fds[1])
        for fd in fds:
            os.close(fd)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--zygote"]:
        sys.exit(zygote(int(sys.argv[2])))
    sys.exit(main())
