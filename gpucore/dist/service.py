"""Rank 0 answers the requests of every rank while all of them work: the CPU thread of a dynamic
schedule that keeps the status table (the work-stealing table of ``gpucore.dist.stealing``).

    with Service(comm, handler) as service:
        while (reply := service.ask(report)) is not None: ...     # as often as a rank needs
        service.finish()                                          # once: returns when all ranks have

``handler(rank, payload) -> reply`` is called under one lock, so the table needs no locking of its
own. On rank 0 a thread receives the other ranks' requests (``recv`` from any rank, tag
``REQUEST``) and sends each reply (tag ``REPLY``); rank 0's own ``ask`` calls the handler directly.
``finish`` is a barrier without a spinning collective: each rank says it is done and waits (polling)
until rank 0 has heard from every rank; the seconds it waits are the rank's idle time. Over one
rank there is no thread and no message.

Threads and MPI: between entering and ``finish``, rank 0's main thread makes no MPI call (it only
calls the handler), so the two threads are never in MPI at once; the MPI library must grant
``serialized`` threads at least (MPICH and Open MPI grant ``multiple`` to mpi4py). A failure in the
serving thread is raised in rank 0's main thread at its next ``ask`` or at ``finish``, where
``gpucore.dist.run_guarded`` ends every rank with the message.

``worker_comm`` (default ``comm``): what the non-root ranks ask through, for example a ``TimedComm``
that counts their messages, bytes and seconds; rank 0's thread and ``finish`` use ``comm`` itself
and count what they receive and send in ``bytes`` and ``messages`` (on rank 0: every other rank's
requests and the replies), and the handler's seconds in ``handler_seconds``.
"""

from __future__ import annotations

import threading
import time
from typing import Callable

from gpucore.dist.comm import THREAD_LEVELS, Communicator
from gpucore.dist.mpi import POLL_MAX, POLL_MIN
from gpucore.errors import GpucoreError

#: message tags of the requests (to rank 0) and replies (from rank 0)
REQUEST = 7101
REPLY = 7102


class Service:
    """See the module docstring."""

    def __init__(self, comm: Communicator, handler: Callable[[int, object], object],
                 worker_comm: Communicator | None = None):
        self.comm = comm
        self.worker_comm = comm if worker_comm is None else worker_comm
        self.handler = handler
        self.rank, self.size = comm.rank, comm.size
        self.bytes = 0
        self.messages = 0
        self.handler_seconds = 0.0
        self._lock = threading.Lock()
        self._root_done = threading.Event()
        self._thread: threading.Thread | None = None
        self._failure: BaseException | None = None
        self._finished = False

    def __enter__(self) -> "Service":
        if self.rank == 0 and self.size > 1:
            if THREAD_LEVELS.index(self.comm.thread_level) < THREAD_LEVELS.index("serialized"):
                raise GpucoreError(f"the MPI library grants {self.comm.thread_level!r} threads; the work-stealing "
                                   "service on rank 0 needs 'serialized' or 'multiple'")
            self._thread = threading.Thread(target=self._serve, name="gpucore-service", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, kind, value, tb) -> None:
        if kind is None and not self._finished:
            raise RuntimeError("Service: finish() was not called")

    # ---- every rank

    def _answer(self, rank: int, payload):
        with self._lock:
            start = time.perf_counter()
            try:
                return self.handler(rank, payload)
            finally:
                self.handler_seconds += time.perf_counter() - start

    def ask(self, payload):
        """The handler's reply to this rank's request."""
        if self.rank == 0:
            self._raise_failure()
            return self._answer(0, payload)
        self.worker_comm.send(("ask", payload), 0, REQUEST)
        return self.worker_comm.recv(0, REPLY).obj

    def finish(self) -> None:
        """Say this rank is done; return when every rank is."""
        self._finished = True
        if self.rank != 0:  # through ``comm``: the wait is idle time, not a message's
            self.bytes += self.comm.send(("finish", None), 0, REQUEST)
            self.bytes += self.comm.recv(0, REPLY).nbytes
            self.messages += 2
            return
        self._root_done.set()
        if self._thread is not None:
            self._thread.join()
        self._raise_failure()

    # ---- rank 0's thread

    def _raise_failure(self) -> None:
        if self._failure is not None:
            raise RuntimeError(f"the work-stealing service on rank 0 failed: {self._failure!r}") from self._failure

    def _serve(self) -> None:
        finished: list[int] = []
        delay = POLL_MIN
        try:
            while len(finished) < self.size - 1 or not self._root_done.is_set():
                if self.comm.iprobe(None, REQUEST) is None:
                    time.sleep(delay)
                    delay = min(2 * delay, POLL_MAX)
                    continue
                delay = POLL_MIN
                got = self.comm.recv(None, REQUEST)
                self.messages += 1
                self.bytes += got.nbytes
                kind, payload = got.obj
                if kind == "finish":
                    finished.append(got.source)
                    continue
                self.bytes += self.comm.send(self._answer(got.source, payload), got.source, REPLY)
                self.messages += 1
            for rank in finished:  # every rank is done: release them
                self.bytes += self.comm.send(None, rank, REPLY)
                self.messages += 1
        except BaseException as exc:  # noqa: BLE001 - raised again in the main thread
            self._failure = exc
