"""Parsing of ``NAME[:A[,B]]`` scheme strings used by ``--weights`` and ``--cost``."""

from __future__ import annotations

from gpucore.errors import GpucoreError


def parse_scheme(text: str, option: str, arities: dict[str, tuple[int, ...]]) -> tuple[str, list]:
    """Split ``name:a,b`` and check the name and the number of numeric parameters.

    ``arities`` maps each known name to the allowed parameter counts; a name whose arity tuple is
    ``(-1,)`` takes one raw string parameter (a path).
    """
    name, _, rest = str(text).partition(":")
    name = name.strip().lower()
    if name not in arities:
        raise GpucoreError(f"{option} {text!r}: unknown scheme {name!r}; known: {', '.join(sorted(arities))}")
    allowed = arities[name]
    if allowed == (-1,):
        if not rest:
            raise GpucoreError(f"{option} {text!r}: {name} needs a path, as {name}:PATH")
        return name, [rest]
    parts = [p for p in rest.split(",") if p.strip()] if rest else []
    if len(parts) not in allowed:
        want = " or ".join(str(a) for a in allowed)
        raise GpucoreError(f"{option} {text!r}: {name} takes {want} parameter(s), got {len(parts)}")
    try:
        values = [float(p) for p in parts]
    except ValueError:
        raise GpucoreError(f"{option} {text!r}: parameters must be numbers") from None
    return name, values
