"""Rule `extract`: stream the edge-list member (out.*) of a KONECT .tar.bz2 archive to a file.

The member is written to a temporary name beside the output and renamed at the end, so a failure
leaves no partial file.
"""

import os
import shutil
import sys
import tarfile
from pathlib import Path


def pick_member(tar: tarfile.TarFile, wanted: str | None) -> tarfile.TarInfo:
    names = []
    for member in tar:
        if not member.isfile():
            continue
        base = os.path.basename(member.name)
        names.append(member.name)
        if (wanted and (member.name == wanted or base == wanted)) or (not wanted and base.startswith("out.")):
            return member
    what = f"member {wanted!r}" if wanted else "an out.* member"
    raise SystemExit(f"{tar.name}: no {what} in the archive (files: {', '.join(names[:20]) or 'none'})")


def extract(archive, output, member: str | None = None, log=print) -> str:
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    tmp = output.with_name(f".{output.name}.tmp")
    try:
        with tarfile.open(archive, "r|*") as tar:  # stream: one pass over the compressed archive
            info = pick_member(tar, member)
            log(f"extracting {info.name} ({info.size:,} bytes) from {archive}")
            with tar.extractfile(info) as src, open(tmp, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
        os.replace(tmp, output)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return info.name


def main(smk) -> None:
    with open(smk.log[0], "w") as logfh:
        try:
            extract(smk.input[0], smk.output[0], smk.params.member, log=lambda m: print(m, file=logfh, flush=True))
        except (tarfile.TarError, OSError, EOFError) as exc:
            print(f"ERROR: {smk.input[0]}: not a readable tar archive: {exc}", file=logfh)
            sys.exit(f"extract failed: {smk.input[0]}: {exc}")


if "snakemake" in globals():
    main(snakemake)  # noqa: F821
