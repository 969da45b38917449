"""``Graph``: a loaded ``.gcsr`` (read-only, memory-mapped) with the helpers every solver needs."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np

from gpucore.errors import GpucoreError
from gpucore.graph.gcsr import ARRAY_ORDER, map_arrays, read_header
from gpucore.graph.integrity import check_content, check_structure
from gpucore.graph.weights import lt_in_weights


@dataclass
class Graph:
    """A directed graph in both CSR directions with edge probabilities and seed costs.

    Arc identity: the original edge id of an arc is its out-CSR position; ``in_eid`` gives it for
    every in-arc. ``out_prob[e]`` and ``in_prob[k]`` are p of the same arc when ``in_eid[k] == e``.
    """

    path: Path
    n: int
    m: int
    directed: bool
    cost_scale: float
    sha256: str
    meta: dict
    out_indptr: np.ndarray
    out_dst: np.ndarray
    out_prob: np.ndarray
    in_indptr: np.ndarray
    in_src: np.ndarray
    in_eid: np.ndarray
    in_prob: np.ndarray
    cost: np.ndarray
    original_id: np.ndarray
    _device_cache: dict = field(default_factory=dict, repr=False, compare=False)

    @cached_property
    def out_degree(self) -> np.ndarray:
        return np.diff(self.out_indptr)

    @cached_property
    def in_degree(self) -> np.ndarray:
        return np.diff(self.in_indptr)

    @cached_property
    def lt_in_weights(self) -> np.ndarray:
        """In-arc weights for LT (in-CSR order), rescaled where a node's in-weights sum above 1."""
        return lt_in_weights(self.in_indptr, self.in_prob)

    @cached_property
    def lt_out_weights(self) -> np.ndarray:
        """The same LT weights indexed by original edge id (out-CSR order)."""
        w = self.lt_in_weights
        if w is self.in_prob:
            return self.out_prob
        out = np.empty(self.m, dtype=np.float32)
        out[self.in_eid] = w
        return out

    def edge_probabilities(self, model: str) -> tuple[np.ndarray, np.ndarray]:
        """(in-CSR weights, out-CSR weights) for ``model`` ('IC' or 'LT')."""
        if model == "IC":
            return self.in_prob, self.out_prob
        if model == "LT":
            return self.lt_in_weights, self.lt_out_weights
        raise GpucoreError(f"unknown diffusion model {model!r}: choose IC or LT")

    def internal_ids(self, original_ids) -> np.ndarray:
        """Internal ids (0..n-1) of original vertex ids; unknown ids raise GpucoreError."""
        ids = np.asarray(original_ids, dtype=np.int64).reshape(-1)
        pos = np.searchsorted(self.original_id, ids)
        ok = (pos < self.n) & (self.original_id[np.minimum(pos, self.n - 1)] == ids)
        if not ok.all():
            raise GpucoreError(f"{self.path}: unknown vertex id {int(ids[~ok][0])}")
        return pos.astype(np.int64)

    def device_arrays(self, backend, names: tuple[str, ...]) -> dict:
        """The named arrays on ``backend`` (copied to the GPU once, then cached)."""
        out = {}
        for name in names:
            key = (backend.name, name)
            if key not in self._device_cache:
                self._device_cache[key] = backend.asarray(getattr(self, name), what=f"graph array {name}")
            out[name] = self._device_cache[key]
        return out

    def verify(self) -> None:
        """Recompute the content digest; raise GpucoreError if the file's arrays were altered."""
        check_content(self.path, read_header(self.path), force=True)


def load_graph(path, verify: bool | None = None) -> Graph:
    """Map a ``.gcsr`` file after the checks of ``gpucore.graph.integrity``.

    Always: the header (magic, version, CRC, sizes) and the structure (dtypes, lengths, offsets, ids
    in range). The content digest: ``verify=None`` (default) once per version of the file (cached in
    the sidecar by size and modification time), ``True`` always, ``False`` never. A file that fails
    raises ``GpucoreError`` before anything reads its arrays.
    """
    path = Path(path)
    header = read_header(path)
    missing = [name for name in ARRAY_ORDER if name not in header["arrays"]]
    if missing:
        raise GpucoreError(f"{path}: .gcsr file lacks arrays {missing}")
    arrays = map_arrays(path, header)
    check_structure(path, header["n"], header["m"], arrays)
    if verify is not False:
        check_content(path, header, force=bool(verify))
    graph = Graph(
        path=path,
        n=header["n"],
        m=header["m"],
        directed=header["directed"],
        cost_scale=header["cost_scale"],
        sha256=header["sha256"],
        meta=header["meta"],
        **{name: arrays[name] for name in ARRAY_ORDER},
    )
    return graph
