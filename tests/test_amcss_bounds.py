"""The acceptance-test constants (spec: Algorithm 1 with the printed typos fixed), pinned.

Reference values are recomputed here independently (exact binomials with math.comb, the formula
written out step by step) and also pinned as literals for n_i = 10,000, b = 4, eps = 0.5."""

from __future__ import annotations

import math

import pytest

from gpucore.amcss.bounds import coverage_lower, coverage_upper, log_binomial, rho, round_bounds, theta_schedule


def by_hand(n, b, eps):
    delta = 1.0 / n
    eps_hat = (eps - delta) * (1 - delta)
    rho_b = 1 - (1 - 1 / b) ** b
    lnc = math.log(math.comb(n, b))
    l6 = math.log(6 / delta)
    theta_max = 2 * n * (math.sqrt(l6) + math.sqrt((lnc + l6) / rho_b)) ** 2 / (eps_hat**2 * b)
    theta_0 = theta_max * eps_hat**2 * b / n
    H = math.ceil(math.log2(theta_max / theta_0)) + 1
    a2 = math.log(3 * H / delta)
    return dict(delta=delta, eps_hat=eps_hat, rho_b=rho_b, log_binom=lnc, theta_max=theta_max,
                theta_0=theta_0, H=H, a1=a2 + lnc, a2=a2)


@pytest.mark.parametrize("n,b,eps", [(10_000, 4, 0.5), (317_080, 4, 0.5), (1_000, 1, 0.5), (50, 16, 0.2), (7, 2, 0.9)])
def test_constants_match_the_formula(n, b, eps):
    got = round_bounds(n, b, eps).as_dict()
    for key, want in by_hand(n, b, eps).items():
        assert got[key] == pytest.approx(want, rel=1e-12), key


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
        assert B.lower(lam) == pytest.approx((math.sqrt(lam + 2 * B.a1 / 9) - math.sqrt(B.a1 / 2)) ** 2 - B.a1 / 18)
        assert B.upper(lam) == pytest.approx((math.sqrt(lam / B.rho_b + B.a2 / 2) + math.sqrt(B.a2 / 2)) ** 2)
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


def test_theta_schedule_doubles_up_to_theta_max():
    B = round_bounds(1_000, 2, 0.5)
    sched = theta_schedule(B)
    assert sched[0] == B.theta_0_int and sched[-1] == B.theta_max_int
    assert all(b == 2 * a for a, b in zip(sched[:-2], sched[1:-1]))
    assert len(sched) <= B.H + 1
    assert theta_schedule(B, start=10 * B.theta_max_int) == [10 * B.theta_max_int]


@pytest.mark.parametrize("bad", [dict(n_i=0, batch=1, eps=0.5), dict(n_i=10, batch=1, eps=0.0), dict(n_i=10, batch=1, eps=1.0)])
def test_bad_arguments_raise(bad):
    with pytest.raises(ValueError):
        round_bounds(**bad)
