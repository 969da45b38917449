"""The acceptance-test constants (spec: Algorithm 1 with the printed typos fixed), pinned from
values worked by hand, and the coverage bounds of Lemma 8.1 checked against exact binomial tails."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binom

from gpucore.amcss.bounds import coverage_lower, coverage_upper, log_binomial, rho, round_bounds


def test_hand_worked_cases():
    """Two cases worked step by step (not by the module's code):

    n = 100, b = 1, eps = 0.5: delta = 0.01, eps_hat = 0.49 * 0.99 = 0.4851, rho_1 = 1,
    ln C(100, 1) = ln 100 = 4.605170, ln(6 / delta) = ln 600 = 6.396930;
    sqrt(6.396930) + sqrt((4.605170 + 6.396930) / 1) = 2.529215 + 3.316941 = 5.846157, squared 34.17755;
    theta_max = 2 * 100 * 34.17755 / 0.4851^2 = 6835.509 / 0.23532201 = 29047.47;
    theta_0 = theta_max * 0.4851^2 * 1 / 100 = 2 * 34.17755 = 68.3551;
    H = ceil(log2(100 / 0.23532201)) + 1 = ceil(8.7312) + 1 = 10;
    a2 = ln(3 * 10 / 0.01) = ln 3000 = 8.006368, a1 = a2 + ln 100 = 12.611538.

    n = 20, b = 2, eps = 0.3: delta = 0.05, eps_hat = 0.25 * 0.95 = 0.2375, rho_2 = 1 - 1/4 = 0.75,
    ln C(20, 2) = ln 190 = 5.247024, ln(6 / 0.05) = ln 120 = 4.787492;
    sqrt(4.787492) + sqrt((5.247024 + 4.787492) / 0.75) = 2.188034 + 3.657780 = 5.845814, squared 34.17354;
    theta_max = 2 * 20 * 34.17354 / (0.2375^2 * 2) = 1366.941 / 0.11281250 = 12116.93;
    theta_0 = 2 * 34.17354 = 68.3471; H = ceil(log2(20 / 0.1128125)) + 1 = ceil(7.4700) + 1 = 9;
    a2 = ln(3 * 9 / 0.05) = ln 540 = 6.291569, a1 = a2 + ln 190 = 11.538593.
    """
    for (n, b, eps), want in {
        (100, 1, 0.5): dict(delta=0.01, eps_hat=0.4851, rho_b=1.0, log_binom=4.605170, theta_max=29047.47,
                            theta_0=68.3551, a1=12.611538, a2=8.006368),
        (20, 2, 0.3): dict(delta=0.05, eps_hat=0.2375, rho_b=0.75, log_binom=5.247024, theta_max=12116.93,
                           theta_0=68.3471, a1=11.538593, a2=6.291569),
    }.items():
        got = round_bounds(n, b, eps)
        for key, value in want.items():
            assert getattr(got, key) == pytest.approx(value, rel=2e-6), (n, key)
        assert got.H == (10 if n == 100 else 9)


@pytest.mark.parametrize("theta,mu,a", [(1000, 0.05, 3.0), (200, 0.3, 2.0), (5000, 0.01, 5.0), (50, 0.5, 1.0),
                                        (20000, 0.002, 4.0)])
def test_coverage_bounds_hold_on_exact_binomial_tails(theta, mu, a):
    """Lemma 8.1: for a coverage Lambda ~ Binomial(theta, mu) (theta independent sets, each covered
    with probability mu), Lambda_l(Lambda) > theta mu and Lambda_u(Lambda) < theta mu (rho = 1) each
    happen with probability at most e^-a. Exact tail sums, no sampling; a bound written wrongly
    (a term dropped, a sign flipped) exceeds e^-a here."""
    cov = np.arange(theta + 1)
    pmf = binom.pmf(cov, theta, mu)
    lower = np.array([coverage_lower(x, a) for x in cov])
    upper = np.array([coverage_upper(x, 1.0, a) for x in cov])
    assert pmf[lower > theta * mu].sum() <= math.exp(-a)
    assert pmf[upper < theta * mu].sum() <= math.exp(-a)
    # and they are bounds of the right side: at the mean they straddle it
    assert lower[int(theta * mu)] < theta * mu < upper[int(theta * mu)]


def test_pinned_reference_case():
    B = round_bounds(10_000, 4, 0.5)
    assert B.rho_b == 0.68359375
    assert B.eps_hat == pytest.approx(0.49985001, rel=1e-12)
    assert B.log_binom == pytest.approx(math.log(416_416_712_497_500), rel=1e-14)
    assert B.theta_max == pytest.approx(2_600_827.7215870935, rel=1e-10)
    assert B.theta_0 == pytest.approx(259.92675630305365, rel=1e-10)
    assert B.H == 15
    assert B.a1 == pytest.approx(46.679710449290496, rel=1e-12)
    assert B.a2 == pytest.approx(13.017002861746503, rel=1e-12)
    assert (B.theta_0_int, B.theta_max_int) == (260, 2_600_828)
    # Lambda_l / Lambda_u at a few coverages (by hand: sqrt forms of Lemma 8.1)
    for lam, lo, up in [(100, 29.609292853264183, 222.37288035069236), (500, 312.83523848984976, 883.0509781474562)]:
        assert B.lower(lam) == pytest.approx(lo, rel=1e-12)
        assert B.upper(lam) == pytest.approx(up, rel=1e-12)
    assert not B.accept(100) and B.accept(500)


def test_printed_typos_are_fixed():
    # rho_b = 1 - (1 - 1/b)^b, not (1 - 1/b)^b (which is 0 for b = 1)
    assert rho(1) == 1.0 and rho(2) == 0.75 and rho(4) == 0.68359375
    B = round_bounds(10_000, 4, 0.5)
    # theta_max has the square and ln(6/delta) (the printed line 5 had neither) ...
    l6 = math.log(6 / B.delta)
    no_square = 2 * B.n * (math.sqrt(l6) + math.sqrt((B.log_binom + l6) / B.rho_b)) / (B.eps_hat**2 * B.b)
    assert B.theta_max > 10 * no_square
    # ... and ln C(n, b), not ln(n / b)
    assert B.log_binom == pytest.approx(log_binomial(10_000, 4)) and B.log_binom > 4 * math.log(10_000 / 4)
    # theta_0 = 2 (sqrt(ln 6/delta) + sqrt((ln C + ln 6/delta)/rho))^2, independent of eps
    assert B.theta_0 == pytest.approx(2 * (math.sqrt(l6) + math.sqrt((B.log_binom + l6) / B.rho_b)) ** 2)


def test_lower_bound_is_vacuous_for_small_coverage():
    a1 = 40.0
    for lam in (0, 1, 5, 5 * a1 / 18):
        assert coverage_lower(lam, a1) <= 1e-12
    assert coverage_lower(5 * a1 / 18 + 1, a1) > -a1 / 18
    assert coverage_upper(0, 0.5, 10.0) == pytest.approx(20.0)


def test_accept_is_monotone_in_coverage():
    B = round_bounds(2_000, 8, 0.5)
    flips = [lam for lam in range(0, 5000, 7) if B.accept(lam)]
    assert flips and all(B.accept(lam) for lam in range(flips[0], 5000, 13))


def test_small_residual_and_batch_clamps():
    B = round_bounds(3, 4, 0.5)  # b clamps to n_i; delta clamps to eps/2 so that eps_hat > 0
    assert B.b == 3 and B.delta == 0.25 and B.eps_hat > 0 and B.log_binom == 0.0
    assert round_bounds(1, 1, 0.5).theta_max > 0


@pytest.mark.parametrize("bad", [dict(n_i=0, batch=1, eps=0.5), dict(n_i=10, batch=1, eps=0.0), dict(n_i=10, batch=1, eps=1.0)])
def test_bad_arguments_raise(bad):
    with pytest.raises(ValueError):
        round_bounds(**bad)
