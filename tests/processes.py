"""Looking at other processes through /proc (Linux)."""

from pathlib import Path


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
