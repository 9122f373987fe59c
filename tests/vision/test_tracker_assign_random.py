"""The tracker's assignment (rknnx_t_assign, reached as rknnx._kernels.track_assign)
against an exact reference: scipy.optimize.linear_sum_assignment on the explicitly built
(rows + cols) x (rows + cols) extended matrix the kernel reads implicitly since baeda43
(the rows x cols block, costs above `thresh` forbidden; a stand-in per column and per row
at thresh / 2; the stand-ins' corner at 0).  Ties may pick other pairs, so the test holds
the total cost to the optimum's and each match to the rules (a real pair, within thresh,
no column twice)."""

from __future__ import annotations

import numpy as np
import pytest

from rknnx import _kernels

opt = pytest.importorskip("scipy.optimize", reason="scipy is not installed (the reference)")


def _extended(cost, thresh):
    r, c = cost.shape
    k = r + c
    ext = np.zeros((k, k))
    ext[:r, :c] = np.where(cost <= thresh, cost, np.inf)
    ext[:r, c:] = thresh / 2
    ext[r:, :c] = thresh / 2
    return ext


def _total(cost, m, thresh):
    r, c = cost.shape
    rows = np.flatnonzero(m >= 0)
    return (cost[rows, m[rows]].sum() + thresh / 2 * (r - rows.size)
            + thresh / 2 * (c - rows.size))


def _check(cost, thresh):
    m = _kernels.track_assign(cost, thresh)
    r, c = cost.shape
    assert m.shape == (r,)
    hit = m[m >= 0]
    assert np.all(hit < c) and np.unique(hit).size == hit.size
    rows = np.flatnonzero(m >= 0)
    assert np.all(cost[rows, m[rows]] <= thresh)
    ext = _extended(cost, thresh)
    ri, ci = opt.linear_sum_assignment(ext)
    best = ext[ri, ci].sum()
    assert _total(cost, m, thresh) == pytest.approx(best, rel=1e-12, abs=1e-12), (cost, thresh, m)


def _shapes():
    out = [(1, 1), (1, 7), (7, 1), (2, 2), (3, 5), (5, 3), (8, 8), (1, 30), (30, 1),
           (12, 17), (25, 20)]
    return out


@pytest.mark.parametrize("shape", _shapes())
@pytest.mark.parametrize("thresh", [0.0, 0.3, 0.8, 1.0])
def test_random_costs_match_the_extended_optimum(shape, thresh):
    rng = np.random.default_rng(hash((shape, thresh)) & 0xFFFF)
    for _ in range(40):
        cost = rng.random(shape)
        _check(cost, thresh)


@pytest.mark.parametrize("shape", [(1, 6), (6, 1), (4, 4), (9, 6), (6, 9), (16, 16)])
def test_ties_and_quantized_costs(shape):
    # costs on a grid of few values: many equal totals, the optimum's value still holds
    rng = np.random.default_rng(7)
    for thresh in (0.0, 0.5, 1.0):
        for _ in range(60):
            cost = rng.integers(0, 5, shape) / 4.0
            _check(cost, thresh)


def test_all_above_threshold_match_nothing():
    rng = np.random.default_rng(3)
    cost = 0.6 + 0.4 * rng.random((6, 9))
    np.testing.assert_array_equal(_kernels.track_assign(cost, 0.5), np.full(6, -1))
    _check(cost, 0.5)


def test_components_of_many_sizes():
    # a block-diagonal problem (a permuted one): components of 1x1 up to 12x9, with
    # isolated rows and columns between them
    rng = np.random.default_rng(11)
    for _ in range(30):
        sizes = [(1, 1), (1, 3), (3, 1), (2, 2), (5, 4), (12, 9), (1, 0), (0, 2)]
        R = sum(s[0] for s in sizes)
        C = sum(s[1] for s in sizes)
        cost = np.full((R, C), 5.0)
        r0 = c0 = 0
        for a, b in sizes:
            cost[r0:r0 + a, c0:c0 + b] = rng.random((a, b))
            r0 += a
            c0 += b
        cost = cost[rng.permutation(R)][:, rng.permutation(C)]
        for thresh in (0.2, 0.7, 1.0):
            _check(cost, thresh)


def test_thresh_zero_matches_only_zero_costs():
    cost = np.array([[0.0, 0.1, 0.0], [0.2, 0.0, 0.3]])
    m = _kernels.track_assign(cost, 0.0)
    assert (m >= 0).sum() == 2
    _check(cost, 0.0)
