"""new_uid: version 4 UUIDs cut from batched urandom reads, never handed out twice (threads, fork)."""

from __future__ import annotations

import os
import threading
import uuid

from pyk8s.apiserver.objectmeta import new_uid


def test_uids_are_version_4_and_unique_across_threads() -> None:
    got: list[str] = []

    def take() -> None:
        got.extend(new_uid() for _ in range(3000))

    threads = [threading.Thread(target=take) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(got)) == len(got) == 12000
    for u in got[:100]:
        parsed = uuid.UUID(u)
        assert str(parsed) == u and parsed.version == 4 and parsed.variant == uuid.RFC_4122


def test_a_forked_child_does_not_repeat_the_parents_uids() -> None:
    new_uid()  # the batch is read: the child would inherit it
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.write(w, new_uid().encode())
        os._exit(0)
    os.close(w)
    os.waitpid(pid, 0)
    child = os.read(r, 64).decode()
    os.close(r)
    assert child != new_uid()
