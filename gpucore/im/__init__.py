"""Influence maximization: IMM with gIM's GPU sampler and GPU greedy max-cover, the CPU twin, MRIM.

Entry points::

    from gpucore.im import imm
    result = imm(graph, k=50, epsilon=0.5, model="IC", backend="auto")   # dict, see docs/im.md
    result = imm(graph, k=10, epsilon=0.1, model="IC", rounds=5)          # multi-round IM (CR-NAIMM)

Lower-level pieces: ``gpucore.im.theory`` (IMM's formulas), ``gpucore.im.engine`` (the sampler and
selector contract, ``make_engine``), ``gpucore.im.sampling`` (RR sets of given keys on a backend),
``gpucore.im.cpu`` / ``gpucore.im.cuda`` (the two backends), ``gpucore.im.fused`` (FuseIM's fused
sampler, ``sampler="fused"``). Results are checked by the oracle
(``gpucore.oracle.verify_result``), which no solver imports.
"""

from gpucore.im.driver import MODELS, imm
from gpucore.im.engine import SAMPLERS, make_engine
from gpucore.im.rrsets import ESTIMATE_OFFSET, RRCollection
from gpucore.im.theory import IMMParameters, imm_parameters

__all__ = ["ESTIMATE_OFFSET", "IMMParameters", "MODELS", "RRCollection", "SAMPLERS", "imm", "imm_parameters", "make_engine"]
