"""The acceptance test of MERIT's Algorithm 1 ([MERIT] Section 3, with the paper's typos fixed).

Pure functions of (n_i, b, eps) and the coverage Lambda; no arrays, no randomness. Per round::

    delta     = 1 / n_i                      (clamped to eps / 2 when n_i < 2 / eps, so eps_hat > 0)
    eps_hat   = (eps - delta) (1 - delta)
    rho_b     = 1 - (1 - 1/b)^b
    theta_max = 2 n_i (sqrt(ln(6/delta)) + sqrt((ln C(n_i, b) + ln(6/delta)) / rho_b))^2 / (eps_hat^2 b)
    theta_0   = theta_max eps_hat^2 b / n_i
    H         = ceil(log2(theta_max / theta_0)) + 1                         (at least 1)
    a1        = ln(3 H / delta) + ln C(n_i, b)
    a2        = ln(3 H / delta)
    Lambda_l  = (sqrt(Lambda + 2 a1 / 9) - sqrt(a1 / 2))^2 - a1 / 18
    Lambda_u  = (sqrt(Lambda / rho_b + a2 / 2) + sqrt(a2 / 2))^2
    accept   <=> Lambda_l > rho_b (1 - eps_hat) Lambda_u

``b`` is the batch size of the round, ``min(batch, n_i)`` (C(n_i, b) needs b <= n_i). Note that
``Lambda_l <= 0`` whenever ``Lambda <= 5 a1 / 18`` (the square root difference is negative there),
so a small coverage is always rejected. The set counts a regenerating round tries are the integers
``ceil(theta_0) * 2^t`` capped at ``ceil(theta_max)`` (``gpucore.amcss.driver.select_batch``).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass


def log_binomial(n: int, k: int) -> float:
    """ln C(n, k) for 0 <= k <= n (a sum of logs for small k, lgamma beyond)."""
    if not 0 <= k <= n:
        raise ValueError(f"log_binomial: need 0 <= k <= n, got n={n}, k={k}")
    kk = min(k, n - k)
    if kk <= 4096:
        return math.fsum(math.log((n - i) / (i + 1)) for i in range(kk))
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)


@dataclass(frozen=True)
class RoundBounds:
    """The constants of one round's acceptance test."""

    n: int
    b: int
    eps: float
    delta: float
    eps_hat: float
    rho_b: float
    log_binom: float
    theta_max: float
    theta_0: float
    H: int
    a1: float
    a2: float

    @property
    def theta_max_int(self) -> int:
        return max(int(math.ceil(self.theta_max)), self.theta_0_int)

    @property
    def theta_0_int(self) -> int:
        return max(1, int(math.ceil(self.theta_0)))

    def lower(self, coverage: float) -> float:
        return coverage_lower(coverage, self.a1)

    def upper(self, coverage: float) -> float:
        return coverage_upper(coverage, self.rho_b, self.a2)

    def accept(self, coverage: float) -> bool:
        """Lambda_l > rho_b (1 - eps_hat) Lambda_u."""
        return self.lower(coverage) > self.rho_b * (1.0 - self.eps_hat) * self.upper(coverage)

    @property
    def min_coverage(self) -> int:
        """The smallest integer coverage the test accepts (``accept`` is monotone in the coverage:
        Lambda_l grows like Lambda and rho_b (1 - eps_hat) Lambda_u like (1 - eps_hat) Lambda)."""
        hi = 1
        while not self.accept(hi):
            hi *= 2
        lo = hi // 2  # rejected (or 0)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.accept(mid):
                hi = mid
            else:
                lo = mid
        return hi

    def as_dict(self) -> dict:
        return asdict(self)


def rho(b: int) -> float:
    """rho_b = 1 - (1 - 1/b)^b (b = 1 gives 1)."""
    if b < 1:
        raise ValueError(f"rho: batch size must be >= 1, got {b}")
    return 1.0 - (1.0 - 1.0 / b) ** b


def coverage_lower(coverage: float, a1: float) -> float:
    """Lambda_l = (sqrt(Lambda + 2 a1/9) - sqrt(a1/2))^2 - a1/18 (Lemma 8.1, lower tail)."""
    root = math.sqrt(coverage + 2.0 * a1 / 9.0) - math.sqrt(a1 / 2.0)
    return root * root - a1 / 18.0  # <= 0 whenever root <= 0 (coverage <= 5 a1 / 18)


def coverage_upper(coverage: float, rho_b: float, a2: float) -> float:
    """Lambda_u = (sqrt(Lambda/rho_b + a2/2) + sqrt(a2/2))^2 (Lemma 8.1, upper tail, via Lemma 8.2)."""
    root = math.sqrt(coverage / rho_b + a2 / 2.0) + math.sqrt(a2 / 2.0)
    return root * root


def round_bounds(n_i: int, batch: int, eps: float) -> RoundBounds:
    """The constants of the round with ``n_i`` residual nodes, batch ``batch`` and error ``eps``."""
    if n_i < 1:
        raise ValueError(f"round_bounds: n_i must be >= 1, got {n_i}")
    if not 0.0 < eps < 1.0:
        raise ValueError(f"round_bounds: eps must lie in (0, 1), got {eps}")
    b = max(1, min(int(batch), int(n_i)))
    delta = min(1.0 / n_i, eps / 2.0)
    eps_hat = (eps - delta) * (1.0 - delta)
    rho_b = rho(b)
    lnc = log_binomial(n_i, b)
    l6 = math.log(6.0 / delta)
    inner = math.sqrt(l6) + math.sqrt((lnc + l6) / rho_b)
    theta_max = 2.0 * n_i * inner * inner / (eps_hat * eps_hat * b)
    theta_0 = theta_max * eps_hat * eps_hat * b / n_i
    H = max(1, int(math.ceil(math.log2(theta_max / theta_0))) + 1)
    a2 = math.log(3.0 * H / delta)
    a1 = a2 + lnc
    return RoundBounds(
        n=int(n_i), b=b, eps=float(eps), delta=delta, eps_hat=eps_hat, rho_b=rho_b, log_binom=lnc,
        theta_max=theta_max, theta_0=theta_0, H=H, a1=a1, a2=a2,
    )

