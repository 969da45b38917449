"""Stream identifiers: the second word of a key says what a random word is *for*.

Two different purposes never share a key prefix, so e.g. the coin of edge 7 of sample j and the
7th root draw of the same sample are independent. Values are part of the file format of results
(anyone replaying a run needs them) and mirrored in ``gpucore/kernels/common/gc_random.cuh``.
Never renumber an existing stream.
"""

from enum import IntEnum


class Stream(IntEnum):
    """Purpose of a keyed random word (the ``stream`` word of ``mix(run_seed, stream, ...)``)."""

    #: IC coin of an edge inside sample j: mix(run_seed, COIN, j, original_edge_id)
    COIN = 1
    #: root draws of sample j: mix(run_seed, ROOT, j, round, draw_index)
    ROOT = 2
    #: LT in-neighbour choice inside sample j: mix(run_seed, LT_CHOICE, j, v, attempt)
    LT_CHOICE = 3
    #: per-sample uniform u_j deciding multi-root counts floor(k + u_j): mix(run_seed, ROOT_COUNT, j)
    ROOT_COUNT = 4
    #: IC geometric jump i among the in-arcs of a skipping node v in sample s (``gpucore.im.skipping``):
    #: mix(run_seed, SKIP, s, v, i)
    SKIP = 5
    #: hash-drawn edge weights at preprocessing: mix(weight_seed, WEIGHT, edge_id[, 1])
    WEIGHT = 16
    #: hash-drawn seed costs at preprocessing: mix(cost_seed, COST, vertex)
    COST = 17
    #: synthetic graph generators: mix(seed, GENERATOR, kind, counter...)
    GENERATOR = 18
    #: oracle Monte-Carlo runs (forward simulations): mix(seed, ORACLE, run, ...)
    ORACLE = 19
    #: world realization seeds of an adaptive experiment: mix(seed, WORLD, realization)
    WORLD = 20
    #: DiFuseR (gpucore.im.sketch): the Murmur3 seed of the edge hashes, mix(seed, SKETCH_EDGE)
    SKETCH_EDGE = 40
    #: DiFuseR's per-world random number X_r (xor sampling), drawn as mix(seed, SKETCH_X, r) >> 33
    SKETCH_X = 41
    #: DiFuseR's register hash of vertex u in world r: mix(seed, SKETCH_REGISTER, r, u)
    SKETCH_REGISTER = 42
    #: DiFuseR's keyed coin of arc e in world r (keyed sampling): mix(seed, SKETCH_COIN, r, e) >> 33
    SKETCH_COIN = 43
    #: the cost-model sample of multi-GPU structural diversity search: mix(0, SDS_SAMPLE, vertex)
    SDS_SAMPLE = 21
