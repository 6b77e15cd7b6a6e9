"""The graders' last open mutant (issue 44; benchmarks/mutation_equivalent.md): rewards._parse_config_2, math-verify's
box priority 1 instead of 0. Fails with the mutant hand-applied."""

from __future__ import annotations

from test_graders_mutation_kills import verifier  # noqa: F401  (one module-scoped MathVerifier, math-verify required)


def test_an_answer_phrase_inside_the_box_does_not_override_the_box(verifier):
    """We grade what the model boxed, the whole box: a remark inside it is not an anchor. At box priority 0 the box
    and math-verify's priority-0 phrase "final answer is ... I hope" are one group, read rightmost first, so the box
    (which ends last) wins and the text is dropped: 3. At priority 1 (the mutant) the phrase is tried first and its 5
    replaces the boxed 3, an answer the model put in a remark, not in the box's mathematics."""
    completion = "So \\boxed{3 \\text{ final answer is $5$. I hope}}"
    score = verifier.score(completion, "3")
    assert (score.correct, score.status, score.extracted) == (True, "correct", "3 \\text{ final answer is $5$. I hope}")
    assert verifier.score(completion, "5").status == "wrong"
    assert verifier.score("\\boxed{5 \\text{ final answer is $5$. I hope}}", "5").status == "correct"
