#!/usr/bin/env python3
"""Check pyk8s's GPU path on a machine with a real NVIDIA GPU and driver (run as root).

1. NVML discovery (`pyk8s.gpu.discovery.discover`) lists the GPUs nvidia-smi lists.
2. `pyk8s device-plugin gpu` (a real process) registers nvidia.com/gpu with the kubelet's
   device manager (the real one, in this process, on a temporary root dir) over v1beta1 gRPC.
3. A container asking for one GPU is admitted and allocated; what Allocate returned
   (NVIDIA_VISIBLE_DEVICES, /dev/nvidia*, the driver's libraries and nvidia-smi) goes into
   a runc spec built by the kubelet's own `build_spec`, and `nvidia-smi -L` runs in it.
Prints one line per check, PASS/FAIL; exit status 0 when all passed.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

RESULTS: list[tuple[str, bool, str]] = []


def check(name: str, ok: bool, detail: str = "") -> bool:
    RESULTS.append((name, ok, detail))
    print(f"{'PASS' if ok else 'FAIL'} {name}: {detail}", flush=True)
    return ok


def host_gpus() -> list[str]:
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=60).stdout
    except OSError:
        return []
    return [line for line in out.splitlines() if line.startswith("GPU ")]


def make_rootfs(root: str) -> None:
    """busybox and the host's C library: what an image such as ubuntu gives nvidia-smi."""
    for d in ("bin", "dev", "proc", "sys", "tmp", "etc", "lib64", "lib/x86_64-linux-gnu", "usr/bin",
              "usr/lib/x86_64-linux-gnu"):
        os.makedirs(os.path.join(root, d), exist_ok=True)
    bb = shutil.which("busybox") or os.path.join(os.path.dirname(__file__), "busybox")
    shutil.copy(bb, os.path.join(root, "bin/busybox"))
    for app in ("sh", "ls", "cat", "env"):
        os.symlink("busybox", os.path.join(root, "bin", app))
    libs = ("ld-linux-x86-64.so.2", "libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "librt.so.1")
    for lib in libs:
        for d in ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64"):
            p = os.path.join(d, lib)
            if os.path.exists(p):
                shutil.copy(os.path.realpath(p), os.path.join(root, "lib/x86_64-linux-gnu", lib))
                break
    if os.path.exists(os.path.join(root, "lib/x86_64-linux-gnu/ld-linux-x86-64.so.2")):
        os.symlink("../lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", os.path.join(root, "lib64/ld-linux-x86-64.so.2"))
    with open(os.path.join(root, "etc/passwd"), "w") as f:
        f.write("root:x:0:0:root:/root:/bin/sh\n")


async def main() -> int:
    from pyk8s.deviceplugin.manager import DeviceManager
    from pyk8s.gpu.discovery import discover
    from pyk8s.kubelet.devices import apply_run_options
    from pyk8s.kubelet.runtime.interface import ContainerConfig
    from pyk8s.kubelet.runtime.spec import SandboxView, build_spec

    fake = os.environ.get("FAKE_GPUS")  # only to try this script where no GPU is
    listed = host_gpus()
    gpus = discover(fake, node="gpu-node")
    print("nvidia-smi -L:", listed, "\ndiscover():", gpus, flush=True)
    check("NVML discovery", bool(gpus) and (fake is not None or len(gpus) == len(listed)
                                          and all(g.uuid in " ".join(listed) for g in gpus)),
          f"{len(gpus)} GPU(s): " + ", ".join(f"{g.index} {g.name} {g.uuid} {g.memory_bytes >> 20} MiB minor {g.minor}"
                                             for g in gpus))

    tmp = tempfile.mkdtemp(prefix="gpucheck-")
    os.chmod(tmp, 0o700)
    dp_dir = os.path.join(tmp, "device-plugins")
    changed = asyncio.Event()
    dm = DeviceManager(dp_dir, lambda: set(), changed.set)
    await dm.start()
    cmd = [sys.executable, "-m", "pyk8s.cli", "device-plugin", "gpu", "--device-plugin-path", dp_dir,
           "--node-name", "gpu-node", "--v", "2"] + (["--fake-gpus", fake] if fake else [])
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    plugin = subprocess.Popen(cmd, env=env, stdout=open(os.path.join(tmp, "plugin.log"), "w"), stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        cap: dict[str, str] = {}
        while time.monotonic() < deadline:
            cap, alloc = dm.capacity()
            if cap.get("nvidia.com/gpu") not in (None, "0"):
                break
            await asyncio.sleep(0.2)
        check("plugin registered, capacity", cap.get("nvidia.com/gpu") == str(len(gpus)), json.dumps(cap))

        pod = {"metadata": {"name": "smi", "namespace": "default", "uid": "0c0ffee0-0000-4000-8000-000000000001"},
               "spec": {"containers": [{"name": "smi", "image": "x",
                                        "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}
        refused = await dm.admit(pod)
        check("admitted and allocated", refused is None, str(refused))
        opts = await dm.run_options(pod["metadata"]["uid"], "smi")
        print("Allocate ->", opts, flush=True)
        vis = opts.envs.get("NVIDIA_VISIBLE_DEVICES", "")
        check("NVIDIA_VISIBLE_DEVICES is one discovered GPU", vis in {g.uuid for g in gpus}, vis)
        devs = sorted(c for c, _, _ in opts.devices)
        check("device nodes", fake is not None or ("/dev/nvidiactl" in devs and any(
            d.startswith("/dev/nvidia") and d[11:].isdigit() for d in devs)), " ".join(devs))
        smi_mounted = any(c == "/usr/bin/nvidia-smi" for c, _, _ in opts.mounts)
        check("driver mounted (nvidia-smi, libnvidia-ml)", fake is not None or smi_mounted and any(
            "libnvidia-ml.so.1" in c for c, _, _ in opts.mounts), " ".join(c for c, _, _ in opts.mounts))

        runc = shutil.which("runc") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "runc")
        bundle = os.path.join(tmp, "bundle")
        rootfs = os.path.join(bundle, "rootfs")
        make_rootfs(rootfs)
        cfg = ContainerConfig(name="smi", image="x",
                              command=["/usr/bin/nvidia-smi" if not fake else "/bin/env"],
                              args=["-L"] if not fake else [])
        apply_run_options(cfg, opts)
        sb = SandboxView(hostname="smi", ns_paths={}, host_pid=False, hosts_path="", resolv_path="",
                         hostname_path="", shm_path="", cgroup_parent="")
        spec = build_spec(config=cfg, image_cfg={"Env": ["PATH=/usr/bin:/bin"]}, rootfs=rootfs, sandbox=sb,
                          user=(0, 0, []), container_id="gpucheck", allowed_caps=[], nofile=1024,
                          oom_score_adj=0, memsw=False, cgroup_v2=os.path.exists("/sys/fs/cgroup/cgroup.controllers"))
        # this check runs outside a kubelet: no sandbox files to bind
        spec["mounts"] = [m for m in spec["mounts"] if not m.get("source", "").startswith(("/etc", tmp)) or
                          m["destination"].startswith(("/usr", "/lib", "/dev"))]
        with open(os.path.join(bundle, "config.json"), "w") as f:
            json.dump(spec, f, indent=1)
        shutil.copy(os.path.join(bundle, "config.json"), os.path.join(os.environ.get("OUT", tmp), "config.json"))
        r = subprocess.run([runc, "--root", os.path.join(tmp, "runc"), "run", "--bundle", bundle, "gpucheck"],
                           capture_output=True, text=True, timeout=120)
        print("runc rc", r.returncode, "\nstdout:", r.stdout, "\nstderr:", r.stderr[-3000:], flush=True)
        want = vis if fake else f"UUID: {vis}"
        check("nvidia-smi in a runc container sees its GPU" if not fake else "env in a runc container",
              bool(vis) and r.returncode == 0 and want in r.stdout, r.stdout.strip()[:500])
    finally:
        plugin.terminate()
        plugin.wait(10)
        await dm.stop()
        print("--- plugin log\n" + open(os.path.join(tmp, "plugin.log")).read()[-3000:], flush=True)
    return 0 if all(ok for _, ok, _ in RESULTS) else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
