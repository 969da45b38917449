"""One exception type for every user-facing failure.

A ``GpucoreError`` carries a one-line message that names the file (or parameter) and the problem.
The CLI prints it as ``gpucore: error: <message>`` and exits with status 2, without a traceback.
"""


class GpucoreError(Exception):
    """A user-facing error with a one-line message."""

    def __init__(self, message: str):
        super().__init__(" ".join(str(message).split()))


class OutOfMemoryError(GpucoreError):
    """A request that would exceed a memory budget; the message names the size needed."""


def format_bytes(nbytes: float) -> str:
    """Human-readable size, e.g. '1.50 GiB'."""
    size = float(nbytes)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(size) < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.2f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")
