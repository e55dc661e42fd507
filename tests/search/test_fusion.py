"""Reciprocal rank fusion: the sums, the weights, the order of ties, bad parameters."""

from __future__ import annotations

import pytest

from cogitator_memory.exceptions import InvalidInput
from cogitator_memory.search.fusion import Fused, reciprocal_rank_fusion


def test_each_item_scores_the_sum_of_one_over_k_plus_its_rank():
    # given: keyword ranks x, y, z; vector ranks y, w
    rankings = {"keyword": ["x", "y", "z"], "vector": ["y", "w"]}
    # when
    fused = reciprocal_rank_fusion(rankings)
    # then: y 1/62 + 1/61, x 1/61, w 1/62, z 1/63
    assert [(item.id, item.score) for item in fused] == [
        ("y", pytest.approx(1 / 62 + 1 / 61)),
        ("x", pytest.approx(1 / 61)),
        ("w", pytest.approx(1 / 62)),
        ("z", pytest.approx(1 / 63)),
    ]
    assert fused[0].ranks == {"keyword": 2, "vector": 1}


def test_weights_scale_each_channels_share():
    # given
    rankings = {"keyword": ["x", "y"], "vector": ["y", "x"]}
    # when
    fused = reciprocal_rank_fusion(rankings, weights={"keyword": 2.0, "vector": 0.5}, k=10)
    # then: x 2/11 + 0.5/12, y 2/12 + 0.5/11
    assert [(item.id, item.score) for item in fused] == [
        ("x", pytest.approx(2 / 11 + 0.5 / 12)),
        ("y", pytest.approx(2 / 12 + 0.5 / 11)),
    ]


def test_a_channel_of_weight_zero_adds_nothing_but_keeps_its_items():
    # given
    rankings = {"keyword": ["x"], "vector": ["y", "x"]}
    # when
    fused = reciprocal_rank_fusion(rankings, weights={"vector": 0})
    # then
    assert [(item.id, item.score) for item in fused] == [("x", 1 / 61), ("y", 0.0)]


def test_equal_scores_go_to_the_better_best_rank_then_the_smaller_id():
    # given: c and d mirror each other, 1/61 + 1/62 each
    rankings = {"keyword": ["d", "c"], "vector": ["c", "d"]}
    # when
    fused = reciprocal_rank_fusion(rankings)
    # then: same score, same best rank: the smaller id first
    assert [item.id for item in fused] == ["c", "d"]
    assert fused[0].score == fused[1].score


def test_of_two_equal_scores_the_one_ranked_higher_somewhere_comes_first():
    # given: with k = 0, z ranks 1st in one channel (1/1) and y 2nd in both (1/2 + 1/2)
    rankings = {"keyword": ["z", "y"], "vector": ["x", "y"]}
    # when
    fused = reciprocal_rank_fusion(rankings, k=0)
    # then
    assert fused[:3] == [
        Fused("x", 1.0, {"vector": 1}),
        Fused("z", 1.0, {"keyword": 1}),
        Fused("y", 1.0, {"keyword": 2, "vector": 2}),
    ]


def test_an_id_repeated_in_one_channel_counts_once_at_its_best_place():
    # when
    fused = reciprocal_rank_fusion({"keyword": ["x", "y", "x"]})
    # then
    assert [(item.id, item.score, item.ranks) for item in fused] == [
        ("x", 1 / 61, {"keyword": 1}),
        ("y", 1 / 62, {"keyword": 2}),
    ]


def test_no_rankings_fuse_to_nothing():
    # when / then
    assert reciprocal_rank_fusion({}) == []
    assert reciprocal_rank_fusion({"keyword": [], "vector": []}) == []


@pytest.mark.parametrize("weight", [-1, float("nan"), float("inf"), "1", True])
def test_a_weight_that_is_not_a_finite_number_of_zero_or_more_is_refused(weight: object):
    # when / then
    with pytest.raises(
        InvalidInput,
        match=r"^weights: The weight of 'vector' must be a finite number of 0 or more\.$",
    ):
        reciprocal_rank_fusion({"vector": ["x"]}, weights={"vector": weight})  # type: ignore[dict-item]


@pytest.mark.parametrize("k", [-1, float("nan"), float("inf")])
def test_a_negative_or_non_finite_k_is_refused(k: float):
    # when / then
    with pytest.raises(InvalidInput, match=r"^k: k must be a finite number of 0 or more\.$"):
        reciprocal_rank_fusion({"vector": ["x"]}, k=k)
