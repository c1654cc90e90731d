"""Other processes: a free port to serve on, and what /proc says of them (Linux)."""

import signal
import socket
from pathlib import Path


def ctrl_c_default() -> None:
    """For ``preexec_fn``: a child that Ctrl-C (SIGINT) stops, also where the tests run
    with SIGINT ignored (a shell's background job passes that on to its children)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def state(pid: int) -> tuple[str, int] | None:
    """A process's state letter and parent pid; None once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return fields[0], int(fields[1])


def exited(pid: int) -> bool:
    found = state(pid)
    return found is None or found[0] in ("Z", "X")


def children(pid: int) -> list[int]:
    """The live processes whose parent is ``pid``."""
    return [
        int(path.name)
        for path in Path("/proc").iterdir()
        if path.name.isdigit() and not exited(int(path.name)) and state(int(path.name))[1] == pid
    ]
