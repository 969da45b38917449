"""IMM's constants, recomputed here independently (exact binomials, written-out formulas)."""

import math

import pytest

from gpucore.errors import GpucoreError
from gpucore.im.theory import adjusted_ell, imm_parameters, log_binom


def candidates(n):
    """U: the final-phase counts fixed in advance: the search's theta_i (i = 1 .. floor(log2 n) - 1)
    and the grid counts ceil(lambda* / (n 2^(-j/16))), j = 0 .. 16 ceil(log2 n)."""
    return (math.floor(math.log2(n)) - 1) + 16 * math.ceil(math.log2(n)) + 1


def reference(n, k, eps, ell=1.0, rounds=1):
    """Tang et al. 2015, Algorithms 1-3 and Eq. 6, ln C(n,k) from the exact integer binomial, and the
    union over U final counts (docs/im.md) in alpha and beta."""
    ell = ell * (1 + math.log(2) / math.log(n))
    lnc = rounds * math.log(math.comb(n, k))
    gamma = (1 - 1 / math.e) if rounds == 1 else 0.5
    ep = math.sqrt(2) * eps
    lam_p = (2 + 2 * ep / 3) * (lnc + ell * math.log(n) + math.log(math.log2(n))) * n / ep**2
    lnu = math.log(candidates(n))
    alpha = math.sqrt(ell * math.log(n) + math.log(2) + lnu)
    beta = math.sqrt(gamma * (lnc + ell * math.log(n) + math.log(2) + lnu))
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


def test_theta_worked_by_hand_n1024_k1():
    """n = 1024, k = 1, eps = 0.5, ell = 1, worked by hand (ln n = 10 ln 2 = 6.9314718056):

    ell' = 1 + ln 2 / ln n = 1.1; ln C(1024, 1) = ln 1024 = 6.9314718056; eps' = 0.5 sqrt 2 = 0.7071067812
    (eps'^2 = 0.5); log2 n = 10.
    lambda' = (2 + 2/3 * 0.7071067812) * (6.9314718056 + 1.1 * 6.9314718056 + ln 10) * 1024 / 0.5
            = 2.4714045208 * 16.8586758755 * 2048 = 85,329.1168
    theta_1 = ceil(85,329.1168 / 512) = ceil(166.658) = 167; theta_9 = ceil(85,329.1168 / 2) = 42,665.
    U = (10 - 1) + (16 * 10 + 1) = 170; ln U = 5.1357984371.
    alpha = sqrt(1.1 * 6.9314718056 + ln 2 + ln U) = sqrt(13.4536) = 3.6679101139
    beta = sqrt(0.6321205588 * (6.9314718056 + 7.6246189862 + 0.6931471806 + 5.1357984371))
         = sqrt(0.6321205588 * 20.3850364095) = 3.5896797360
    lambda* = 2 * 1024 * (0.6321205588 * 3.6679101139 + 3.5896797360)^2 / 0.25
            = 8192 * 5.9082411269^2 = 285,960.7098
    LB = 1 is grid level j = 160 (1024 * 2^-10 = 1): theta = max(theta_9, ceil(285,960.7098)) = 285,961.
    LB = 100: j = ceil(16 log2(10.24)) = ceil(53.70) = 54, L = 1024 * 2^(-54/16) = 98.70; theta = 2,898.
    """
    p = imm_parameters(1024, 1, 0.5)
    assert p.ell == pytest.approx(1.1, rel=1e-15)
    assert p.max_iterations == 9 and p.candidates == 170
    assert p.lambda_prime == pytest.approx(85_329.1168, rel=1e-9)
    assert p.alpha == pytest.approx(3.6679101139, rel=1e-10)
    assert p.beta == pytest.approx(3.5896797360, rel=1e-10)
    assert p.lambda_star == pytest.approx(285_960.7098, rel=1e-9)
    assert (p.theta_i(1), p.theta_i(9)) == (167, 42_665)
    assert p.theta(1.0, p.theta_i(9)) == 285_961
    assert p.grid_level(100.0) == 54 and p.theta(100.0) == math.ceil(285_960.7098 / (1024 * 2 ** (-54 / 16))) == 2_898
    assert p.theta(100.0, 42_665) == 42_665  # never fewer than the search's sets


def test_theta_worked_by_hand_n65536_k2():
    """n = 2^16, k = 2, eps = 0.1, ell = 1 (ln n = 16 ln 2 = 11.0903548890):

    ell' = 1 + 1/16 = 1.0625; ln C(65536, 2) = ln(65536 * 65535 / 2) = 21.4875473385;
    eps' = 0.1414213562 (eps'^2 = 0.02); log2 n = 16.
    lambda' = (2 + 2/3 * 0.1414213562) * (21.4875473385 + 1.0625 * 11.0903548890 + ln 16) * 65536 / 0.02
            = 2.0942809042 * 36.0436381302 * 3,276,800 = 247,350,896.40
    theta_1 = ceil(lambda' / 32,768) = 7,549; theta_15 = ceil(lambda' / 2) = 123,675,449.
    U = 15 + (16 * 16 + 1) = 272; ln U = 5.6058020662.
    alpha = sqrt(11.7835020695 + 0.6931471806 + 5.6058020662) = 4.2523465659
    beta = sqrt(0.6321205588 * (21.4875473385 + 11.7835020695 + 0.6931471806 + 5.6058020662)) = 5.0013007970
    lambda* = 2 * 65536 * (0.6321205588 * 4.2523465659 + 5.0013007970)^2 / 0.01 = 774,966,875.63
    LB = 1 (the fallback): theta = ceil(lambda*) = 774,966,876.
    """
    p = imm_parameters(65536, 2, 0.1)
    assert p.candidates == 272 and p.max_iterations == 15
    assert p.log_sets == pytest.approx(math.log(65536 * 65535 / 2), rel=1e-15)
    assert p.lambda_prime == pytest.approx(247_350_896.40, rel=1e-10)
    assert p.alpha == pytest.approx(4.2523465659, rel=1e-10)
    assert p.beta == pytest.approx(5.0013007970, rel=1e-10)
    assert p.lambda_star == pytest.approx(774_966_875.63, rel=1e-10)
    assert (p.theta_i(1), p.theta_i(15)) == (7_549, 123_675_449)
    assert p.theta(1.0, p.theta_i(15)) == 774_966_876


def test_grid_levels_round_down():
    p = imm_parameters(75879, 50, 0.05)
    for lb in (1.0, 1.5, 2.0, 99.9, 4742.4375, 37939.5, 75878.0):
        j = p.grid_level(lb)
        assert p.grid_value(j) <= lb < (p.grid_value(j - 1) if j else math.inf)
        assert 0 <= j < p.grid_points
    assert p.theta(10_000.0) == math.ceil(p.lambda_star / p.grid_value(p.grid_level(10_000.0)))


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
