"""IMM's sample-count formulas (Tang, Shi, Xiao, SIGMOD 2015), with the final phase reusing R.

Spec ``im-gim.md`` section 1; we follow IMM's *theory*, not its released code (pitfall 8):

- ``ell`` is first replaced by ``ell * (1 + ln 2 / ln n)`` (IMM Algorithm 1, line 1);
- ``eps' = sqrt(2) * eps``;
- ``lambda' = (2 + 2/3 eps') (ln C(n,k) + ell ln n + ln log2 n) n / eps'^2`` (Eq. 9, 2/3 in floats);
- the lower-bound search runs ``i = 1 .. floor(log2 n) - 1`` with ``x_i = n / 2^i`` and
  ``theta_i = ceil(lambda' / x_i)``; it stops at the first ``i`` with ``n F_R(S_i) >= (1 + eps') x_i``
  and then ``LB = n F_R(S_i) / (1 + eps')``; if it never stops, ``LB = 1``;
- the final phase keeps R and extends it: it uses the first ``theta`` sets, ``theta`` the larger
  of the sets R already holds and ``ceil(lambda* / L)``, where ``L = n 2^(-j/g)`` is LB rounded
  down to a grid of ``g = GRID_STEPS`` points per halving (``j = ceil(g log2(n / LB))``);
- ``theta`` is thus one of ``U`` counts fixed before any sampling (the theta_i and the grid
  counts), and ``lambda*`` pays for a union bound over them (``docs/im.md``, "Reusing the
  estimation sets"): ``alpha = sqrt(ell ln n + ln 2 + ln U)``,
  ``beta = sqrt(gamma (ln C + ell ln n + ln 2 + ln U))``, ``lambda* = 2 n (gamma alpha + beta)^2 / eps^2``,
  where ``gamma`` is the approximation ratio of the greedy (``1 - 1/e`` for IM). With ``U = 1``
  these are IMM's Eq. 6 constants.

Multi-round IM (CR-NAIMM, spec section 3) uses the same formulas with the count of feasible seed
sets ``C(n,k)^T`` (k seeds in each of T rounds; so ``ln C`` becomes ``T ln C(n,k)``) and the ratio
``gamma = 1/2`` of the cross-round greedy on a partition matroid [inferred; Sun et al. 2018 prove
1/2 - eps for CR-NAIMM]. With T = 1 everything reduces to IMM.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from gpucore.errors import GpucoreError

GAMMA_IM = 1.0 - 1.0 / math.e
GAMMA_MRIM = 0.5
#: grid points per halving of the lower bound (rounding LB down costs at most 2^(1/g) more sets)
GRID_STEPS = 16


def log_binom(n: int, k: int) -> float:
    """ln C(n, k) in float64: an exactly rounded sum of ln(n - i) - ln(i + 1), i < min(k, n - k).

    (``lgamma`` differences lose ~1e-8 absolute at n = 10^7, enough to move ceil(lambda'/x).)
    """
    if not 0 <= k <= n:
        raise ValueError(f"log_binom: need 0 <= k <= n, got n={n}, k={k}")
    kk = min(k, n - k)
    i = np.arange(kk, dtype=np.float64)
    return math.fsum(np.log(n - i)) - math.fsum(np.log(i + 1.0))


def adjusted_ell(ell: float, n: int) -> float:
    """IMM Algorithm 1, line 1: ell * (1 + ln 2 / ln n)."""
    return ell * (1.0 + math.log(2.0) / math.log(n))


@dataclass(frozen=True)
class IMMParameters:
    """Every constant of one IMM run (``ell`` is the adjusted value)."""

    n: int
    k: int
    epsilon: float
    ell_input: float
    ell: float
    rounds: int
    gamma: float
    log_sets: float  # ln of the number of feasible seed sets: rounds * ln C(n, k)
    epsilon_prime: float
    lambda_prime: float
    lambda_star: float
    alpha: float
    beta: float
    max_iterations: int  # floor(log2 n) - 1
    grid_steps: int  # g: grid points per halving of LB
    grid_points: int  # J + 1: grid levels j = 0 .. J with n 2^(-J/g) <= 1
    candidates: int  # U = max_iterations + J + 1: the final counts the union bound covers

    def x(self, i: int) -> float:
        """x_i = n / 2^i."""
        return self.n / 2.0**i

    def theta_i(self, i: int) -> int:
        """ceil(lambda' / x_i): RR sets needed in LB-search iteration i."""
        return int(math.ceil(self.lambda_prime / self.x(i)))

    def grid_level(self, lb: float) -> int:
        """The smallest j with n 2^(-j/g) <= LB (LB in [1, n])."""
        j = max(0, math.ceil(self.grid_steps * math.log2(self.n / lb)))
        while self.grid_value(j) > lb:  # guard against rounding in log2
            j += 1
        while j > 0 and self.grid_value(j - 1) <= lb:
            j -= 1
        return j

    def grid_value(self, j: int) -> float:
        """L_j = n 2^(-j/g)."""
        return self.n * 2.0 ** (-j / self.grid_steps)

    def theta(self, lb: float, lb_sets: int = 0) -> int:
        """RR sets of the final selection: max(lb_sets, ceil(lambda* / L_j)) with L_j = LB rounded down
        to the grid (``lb_sets``: the sets the lower-bound search left, reused)."""
        return max(int(lb_sets), int(math.ceil(self.lambda_star / self.grid_value(self.grid_level(lb)))))

    def lb_test(self, i: int, covered_fraction: float) -> float | None:
        """LB if n F_R(S_i) >= (1 + eps') x_i, else None."""
        est = self.n * covered_fraction
        if est >= (1.0 + self.epsilon_prime) * self.x(i):
            return est / (1.0 + self.epsilon_prime)
        return None

    def to_dict(self) -> dict:
        return asdict(self)


def validate(n: int, k: int, epsilon: float, ell: float = 1.0, rounds: int = 1) -> None:
    """Raise GpucoreError (one line) for parameters IMM cannot run with."""
    if n < 2:
        raise GpucoreError(f"graph has {n} vertices: influence maximization needs at least 2")
    if not isinstance(k, (int,)) or isinstance(k, bool):
        raise GpucoreError(f"--k must be an integer, got {k!r}")
    if k <= 0 or k > n:
        raise GpucoreError(f"--k {k}: must satisfy 1 <= k <= n = {n}")
    if not (isinstance(epsilon, (int, float)) and math.isfinite(epsilon) and 0.0 < epsilon < 1.0):
        raise GpucoreError(f"--eps {epsilon}: must lie strictly between 0 and 1")
    if not (math.isfinite(ell) and ell > 0):
        raise GpucoreError(f"--ell {ell}: must be a positive number")
    if not isinstance(rounds, int) or rounds < 1:
        raise GpucoreError(f"--rounds {rounds}: must be an integer >= 1")
    if rounds * n >= 2**31:
        raise GpucoreError(f"--rounds {rounds}: rounds * n = {rounds * n} must stay below 2^31 (int32 elements)")


def imm_parameters(n: int, k: int, epsilon: float, ell: float = 1.0, rounds: int = 1) -> IMMParameters:
    """All constants of IMM (rounds = 1) or CR-NAIMM (rounds = T > 1)."""
    validate(n, k, epsilon, ell, rounds)
    ell_adj = adjusted_ell(ell, n)
    gamma = GAMMA_IM if rounds == 1 else GAMMA_MRIM
    log_sets = rounds * log_binom(n, k)
    ln_n = math.log(n)
    eps_p = math.sqrt(2.0) * epsilon
    lambda_prime = (2.0 + 2.0 / 3.0 * eps_p) * (log_sets + ell_adj * ln_n + math.log(math.log2(n))) * n / eps_p**2
    max_iterations = max(0, n.bit_length() - 2)
    grid_points = GRID_STEPS * math.ceil(math.log2(n)) + 1
    candidates = max_iterations + grid_points
    log_u = math.log(candidates)
    alpha = math.sqrt(ell_adj * ln_n + math.log(2.0) + log_u)
    beta = math.sqrt(gamma * (log_sets + ell_adj * ln_n + math.log(2.0) + log_u))
    lambda_star = 2.0 * n * (gamma * alpha + beta) ** 2 / epsilon**2
    return IMMParameters(
        n=n,
        k=k,
        epsilon=float(epsilon),
        ell_input=float(ell),
        ell=ell_adj,
        rounds=rounds,
        gamma=gamma,
        log_sets=log_sets,
        epsilon_prime=eps_p,
        lambda_prime=lambda_prime,
        lambda_star=lambda_star,
        alpha=alpha,
        beta=beta,
        max_iterations=max_iterations,
        grid_steps=GRID_STEPS,
        grid_points=grid_points,
        candidates=candidates,
    )
