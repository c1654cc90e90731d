"""Reading ahead: forked reader processes parse, redact and count words while the ingester writes.

``JobStream`` hands the ingester each job's items in order. For small runs
it reads in this process; for large ones ``readers`` forked processes take
the jobs in turn and send pickled items through their own queues, so the
database ends the same either way.
"""

from __future__ import annotations

import copyreg
import dataclasses
import functools
import multiprocessing
import operator
import os
import pickle
import queue as queue_module
import sys
import threading
import traceback
from dataclasses import dataclass
from typing import Callable, Iterator

from .. import records as record_types
from .reader import Job, Reader

READERS = 2
BUFFER_MB = 48  # what one reader may have read ahead of the writer
POLL_SECONDS = 0.5


class _End:
    """Marks the end of one job's items."""


def _pickle_records_as_tuples() -> None:
    """Pickle records as their field values: several times faster than the
    dataclass default, which builds a list of fields per object."""
    for cls in vars(record_types).values():
        if dataclasses.is_dataclass(cls) and isinstance(cls, type):
            values = operator.attrgetter(*[f.name for f in dataclasses.fields(cls)])
            copyreg.pickle(cls, lambda record, cls=cls, values=values: (cls, values(record)))


_pickle_records_as_tuples()


class JobStream:
    """The items of jobs, in order; read here or by forked reader processes.

    With ``ahead``, ``readers`` processes take the jobs in turn (job ``i``
    goes to reader ``i % readers``), each through its own queue holding at
    most about ``BUFFER_MB`` of pickled items; while a queue is empty,
    ``idle`` is called for work that can be done meanwhile.
    ``items(job)`` must be called for the jobs in the order they were given,
    each drained before the next. Closing stops the readers.
    """

    def __init__(self, reader: Reader, jobs: list[Job], *, ahead: bool, readers: int = READERS,
                 idle: Callable[[], bool] | None = None):
        self.reader = reader
        self.jobs = jobs
        self.idle = idle  # work to do while waiting; returns False when there is none
        self.workers: list[tuple] = []
        self.taken = 0
        # Forking is safe on Linux in a process with no other thread (a child
        # inherits locks other threads may hold); otherwise (macOS frameworks,
        # Windows, a threaded caller) read inline.
        if ahead and jobs and sys.platform.startswith("linux") and threading.active_count() == 1:
            context = multiprocessing.get_context("fork")
            count = max(1, min(readers, len(jobs)))
            for k in range(count):
                queue, room = context.Queue(), context.Semaphore(BUFFER_MB)
                process = context.Process(
                    target=self._work, args=(jobs[k::count], queue, room, os.getpid()), daemon=True
                )
                process.start()
                self.workers.append((process, queue, room))

    def items(self, job: Job) -> Iterator:
        if not self.workers:
            yield from self.reader.read_job(job)
            return
        assert self.jobs[self.taken] is job, "jobs must be taken in the order given"
        process, queue, room = self.workers[self.taken % len(self.workers)]
        self.taken += 1
        while True:
            item = self._get(process, queue, room)
            if isinstance(item, _End):
                return
            yield item

    def _get(self, process, queue, room):
        while True:
            if self.idle is not None:
                while queue.empty() and self.idle():
                    pass
            try:
                size, payload = queue.get(timeout=POLL_SECONDS)
            except queue_module.Empty:
                if not process.is_alive():
                    raise RuntimeError(f"a reader process died (exit status {process.exitcode})")
                continue
            for _ in range(size):
                room.release()
            item = pickle.loads(payload)
            if isinstance(item, _Crash):
                raise RuntimeError(f"a reader process failed:\n{item.text}")
            return item

    def _work(self, jobs: list[Job], queue, room, parent: int) -> None:
        take = functools.partial(self._take_room, room=room, parent=parent)
        put = functools.partial(self._put, queue=queue, take=take)
        try:
            for job in jobs:
                for item in self.reader.read_job(job):
                    put(item)
                put(_End())
        except BaseException:
            put(_Crash(traceback.format_exc()))
        # Leave once the ingester has taken every item: on the way out the
        # queue waits until its pipe is drained, which a killed ingester never
        # does, and the reader would be left hanging forever.
        take(BUFFER_MB)

    @staticmethod
    def _take_room(megabytes: int, *, room, parent: int) -> None:
        """Wait until the ingester has taken enough items; exit if it is gone."""
        for _ in range(megabytes):
            while not room.acquire(timeout=POLL_SECONDS):
                if os.getppid() != parent:
                    os._exit(0)

    @staticmethod
    def _put(item, *, queue, take) -> None:
        # Pickled now, not later by the queue's thread: the parser may still
        # change records it has already returned.
        payload = pickle.dumps(item, protocol=pickle.HIGHEST_PROTOCOL)
        size = min(BUFFER_MB, 1 + (len(payload) >> 20))
        take(size)
        queue.put((size, payload))

    def close(self) -> None:
        for process, queue, _ in self.workers:
            process.terminate()
            process.join()
            queue.close()
        self.workers = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


@dataclass
class _Crash:
    text: str
