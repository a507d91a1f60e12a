"""The prefix-tree planner (backends/hf/prefix.py), checked against a brute-force count of distinct
prefixes and against hand-drawn trees."""

import math
import random

from localeval.backends.hf.prefix import forwarded_tokens, plan_prefix_tree


def unique_token_bound(seqs) -> int:
    """Every distinct non-empty prefix of any sequence, counted once (brute force)."""
    return len({tuple(s[:k]) for s in seqs for k in range(1, len(s) + 1)})


def shape(node, seqs, parent_depth=0):
    """(own token count, ends, children's shapes), children in order."""
    return (node.depth - parent_depth, sorted(node.ends),
            [shape(c, seqs, node.depth) for c in node.children])


def check_paths(root, seqs):
    """Every sequence ends in exactly one node, and every node's tokens are a prefix of the
    sequences below it."""
    seen, stack = [], [root]
    while stack:
        node = stack.pop()
        for j in node.ends:
            assert len(seqs[j]) == node.depth
            assert list(seqs[j]) == list(seqs[node.source][: node.depth])
        for child in node.children:
            assert child.depth > node.depth
            assert list(seqs[child.source][: node.depth]) == list(seqs[node.source][: node.depth])
        seen += node.ends
        stack.extend(node.children)
    assert sorted(seen) == list(range(len(seqs)))


def test_shared_block_then_questions():
    shared = list(range(100))
    seqs = [shared + [1000 + i] * (i + 1) for i in range(5)] + [[7, 7, 7]]
    root = plan_prefix_tree(seqs)
    assert shape(root, seqs) == (0, [], [
        (100, [], [(i + 1, [i], []) for i in range(5)]),
        (3, [5], []),
    ])
    assert forwarded_tokens(root) == unique_token_bound(seqs) == 100 + 15 + 3


def test_identical_sequences_share_a_leaf_and_a_prefix_sequence_reads_its_own_node():
    a = list(range(40))
    root = plan_prefix_tree([a, a + [50] * 30, a])
    assert shape(root, None) == (0, [], [(40, [0, 2], [(30, [1], [])])])


def test_shieldgemma_shape_forwards_the_unique_token_bound():
    """Preamble, item, then one of four guidelines: three levels, each token once."""
    preamble = list(range(30))
    guidelines = [[1000 + 100 * p + k for k in range(100)] for p in range(4)]
    seqs = [preamble + [500 + 20 * i + k for k in range(12)] + g
            for i in range(50) for g in guidelines]
    root = plan_prefix_tree(seqs)
    (top,) = root.children
    assert top.depth == 30 and len(top.children) == 50
    assert all(item.depth - 30 == 12 and len(item.children) == 4 for item in top.children)
    assert forwarded_tokens(root) == unique_token_bound(seqs) == 30 + 50 * (12 + 400)


def test_a_short_shared_opening_is_not_a_level_of_its_own():
    """Two prompts sharing 3 tokens save 3 as a node; NODE_COST says a level costs more."""
    seqs = [[1, 2, 3] + [10 + i] * 20 for i in range(2)]
    root = plan_prefix_tree(seqs)
    assert [(c.depth, c.ends) for c in root.children] == [(23, [0]), (23, [1])]
    assert forwarded_tokens(root) == 46 == unique_token_bound(seqs) + 3


def test_random_sequences_zero_cost_is_the_bound_and_infinite_cost_is_flat():
    rng = random.Random(7)
    stems = [[rng.randrange(6) for _ in range(rng.randrange(0, 30))] for _ in range(6)]
    seqs = []
    for _ in range(200):
        seq = list(rng.choice(stems)) + [rng.randrange(4) for _ in range(rng.randrange(0, 12))]
        seqs.append(seq or [1])
    for cost in (0, 16, math.inf):
        check_paths(plan_prefix_tree(seqs, cost), seqs)
    assert forwarded_tokens(plan_prefix_tree(seqs, 0)) == unique_token_bound(seqs)
    distinct = {tuple(s) for s in seqs}
    assert forwarded_tokens(plan_prefix_tree(seqs, math.inf)) == sum(map(len, distinct))
    between = forwarded_tokens(plan_prefix_tree(seqs, 16))
    assert unique_token_bound(seqs) <= between <= sum(map(len, distinct))


def test_no_sequences():
    assert plan_prefix_tree([]).children == []


def test_a_generation_budget_drops_levels_that_would_only_split_decode_batches():
    """WildGuard on XSTest: a preamble, a prompt shared by three models' responses, then each
    response. For scoring the prompt is a level (3 rows save 2 x 20 tokens); generating 32
    tokens, a level of its own could cost a decode batch of 32 steps, so the responses hang
    straight off the preamble, which 15 rows still share."""
    preamble = list(range(200))
    seqs = [preamble + [300 + p] * 20 + [1000 + 10 * p + r] * 30 for p in range(5) for r in range(3)]
    (top,) = plan_prefix_tree(seqs).children
    assert top.depth == 200 and [len(c.children) for c in top.children] == [3] * 5
    (top,) = plan_prefix_tree(seqs, extra=[64 * 32] * len(seqs)).children
    assert top.depth == 200 and [c.ends for c in top.children] == [[i] for i in range(15)]
