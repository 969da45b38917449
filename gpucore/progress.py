"""Progress bars that show in a terminal and stay quiet in logs.

``progress(...)`` returns a tqdm bar when standard error is a terminal (and ``GPUCORE_PROGRESS``
is not ``0``), otherwise a silent stand-in with the same ``update``/``close`` methods. Setting
``GPUCORE_PROGRESS=1`` forces bars on (useful in tests).
"""

import os
import sys


class _Silent:
    def __init__(self, *args, **kwargs):
        self.n = 0

    def update(self, k=1):
        self.n += k

    def set_postfix_str(self, *args, **kwargs):
        pass

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def progress_enabled() -> bool:
    flag = os.environ.get("GPUCORE_PROGRESS")
    if flag is not None:
        return flag not in ("0", "", "false", "no")
    return sys.stderr.isatty()


def progress(total=None, desc: str = "", unit: str = "it", unit_scale: bool = False):
    """A tqdm bar on a terminal, a silent counter elsewhere."""
    if not progress_enabled():
        return _Silent()
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit=unit, unit_scale=unit_scale, file=sys.stderr, leave=False)


def status(message: str) -> None:
    """A one-line progress message on a terminal (nothing in logs)."""
    if progress_enabled():
        print(message, file=sys.stderr, flush=True)
