"""IMM's constants, recomputed here independently (exact binomials, written-out formulas)."""

import math

import pytest

from gpucore.errors import GpucoreError
from gpucore.im.theory import adjusted_ell, imm_parameters, log_binom


def reference(n, k, eps, ell=1.0, rounds=1):
    """Tang et al. 2015, Algorithm 1-3, with ln C(n,k) from the exact integer binomial."""
    ell = ell * (1 + math.log(2) / math.log(n))
    lnc = rounds * math.log(math.comb(n, k))
    gamma = (1 - 1 / math.e) if rounds == 1 else 0.5
    ep = math.sqrt(2) * eps
    lam_p = (2 + 2 * ep / 3) * (lnc + ell * math.log(n) + math.log(math.log2(n))) * n / ep**2
    alpha = math.sqrt(ell * math.log(n) + math.log(2))
    beta = math.sqrt(gamma * (lnc + ell * math.log(n) + math.log(2)))
    lam_s = 2 * n * (gamma * alpha + beta) ** 2 / eps**2
    return ell, ep, lam_p, lam_s


CASES = [(75879, 50, 0.05), (75879, 50, 0.5), (1000, 10, 0.5), (4847571, 50, 0.05), (1632803, 50, 0.05), (2, 1, 0.9)]


@pytest.mark.parametrize("n,k,eps", CASES)
def test_constants_match_the_paper_formulas(n, k, eps):
    p = imm_parameters(n, k, eps)
    ell, ep, lam_p, lam_s = reference(n, k, eps)
    assert p.ell == pytest.approx(ell, rel=1e-12)
    assert p.epsilon_prime == pytest.approx(ep, rel=1e-15)
    assert p.lambda_prime == pytest.approx(lam_p, rel=1e-9)
    assert p.lambda_star == pytest.approx(lam_s, rel=1e-9)
    assert p.max_iterations == max(0, math.floor(math.log2(n)) - 1)
    for i in range(1, p.max_iterations + 1):
        assert p.theta_i(i) == math.ceil(lam_p / (n / 2**i))


def test_mrim_constants():
    p = imm_parameters(75879, 10, 0.1, rounds=5)
    _ell, _ep, lam_p, lam_s = reference(75879, 10, 0.1, rounds=5)
    assert p.lambda_prime == pytest.approx(lam_p, rel=1e-9)
    assert p.lambda_star == pytest.approx(lam_s, rel=1e-9)
    assert p.gamma == 0.5 and p.rounds == 5


def test_pinned_theta_values():
    # Epinions-sized cell of gIM's Table 2 (n = 75,879, k = 50, eps = 0.05).
    p = imm_parameters(75879, 50, 0.05)
    assert p.max_iterations == 15
    assert p.theta_i(1) == 350_525  # ceil(lambda' / (n/2)), lambda' = 1.3299e10
    assert p.theta(1.0) == 21_125_770_364
    assert p.theta(1.0) == math.ceil(p.lambda_star)
    # final theta for LB = 10,000: ceil(lambda* / LB)
    assert p.theta(10_000.0) == math.ceil(reference(75879, 50, 0.05)[3] / 10_000.0)
    # a small case worked by hand: n = 1000, k = 10, eps = 0.5
    q = imm_parameters(1000, 10, 0.5)
    assert q.max_iterations == 8
    assert q.theta_i(1) == math.ceil(reference(1000, 10, 0.5)[2] / 500)


def test_lb_test_threshold():
    p = imm_parameters(1024, 5, 0.5)
    x1 = 512.0
    need = (1 + p.epsilon_prime) * x1
    assert p.lb_test(1, need / 1024 * 0.999) is None
    lb = p.lb_test(1, need / 1024)
    assert lb == pytest.approx(need / (1 + p.epsilon_prime))


def test_helpers():
    assert log_binom(10, 3) == pytest.approx(math.log(120))
    assert log_binom(5_000_000, 50) == pytest.approx(math.log(math.comb(5_000_000, 50)), rel=1e-12)
    assert adjusted_ell(1.0, 1024) == pytest.approx(1.1)


@pytest.mark.parametrize(
    "n,k,eps,msg",
    [(100, 0, 0.5, "--k 0"), (100, 101, 0.5, "--k 101"), (100, -3, 0.5, "--k -3"), (100, 5, 0.0, "--eps 0.0"),
     (100, 5, 1.0, "--eps 1.0"), (100, 5, -0.2, "--eps -0.2"), (100, 5, float("nan"), "--eps nan"),
     (1, 1, 0.5, "at least 2")],
)
def test_bad_parameters(n, k, eps, msg):
    with pytest.raises(GpucoreError, match=msg.replace(".", r"\.").replace("-", r"\-")):
        imm_parameters(n, k, eps)
