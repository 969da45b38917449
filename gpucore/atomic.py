"""Write files atomically: to a temporary name in the same folder, then rename.

A reader (or Snakemake) never sees a half-written output: either the old file, or the new one.
A place that cannot take the file (a folder of that name, a file where a folder should be, a
device, no permission, a read-only file system) raises ``GpucoreError`` naming the path
(``why_unwritable`` says why, so that commands can check their outputs before they compute); errors
of the writing itself (the body of ``atomic_path``) pass through unchanged and leave no file behind.
"""

import json
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path

from gpucore.errors import GpucoreError


@contextmanager
def atomic_path(path, suffix: str = ""):
    """Yield a temporary path beside ``path``; rename it onto ``path`` only if the block succeeds."""
    path = Path(path)
    if path.exists() and not path.is_file():  # never rename a file onto a folder or a device
        raise GpucoreError(f"{path}: {why_unwritable(path)}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix + ".tmp", dir=path.parent)
    except OSError as exc:
        raise _cannot_write(path, exc) from None
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, 0o666 & ~_umask())
        try:
            os.replace(tmp, path)
        except OSError as exc:
            raise _cannot_write(path, exc) from None
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_json(path, obj) -> None:
    """Write ``obj`` as indented JSON to ``path`` atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(obj, indent=2, sort_keys=False) + "\n")


def why_unwritable(path) -> str | None:
    """Why ``atomic_path`` could not write ``path`` (a phrase), or None when it can: the path must not be a
    folder or a device, and its nearest existing ancestor must be a folder in which a file can be made."""
    path = Path(path)
    if path.is_dir():
        return "is a folder, not a file"
    if path.exists() and not path.is_file():
        return "is not a regular file"
    folder = path.absolute().parent
    while not folder.exists() and not folder.is_symlink() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        return f"{folder} is a file, not a folder"
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        return f"cannot write in {folder} ({exc.strerror or exc})"
    return None


def _cannot_write(path: Path, exc: OSError) -> GpucoreError:
    return GpucoreError(f"{path}: {why_unwritable(path) or f'cannot write here ({exc.strerror or exc})'}")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
