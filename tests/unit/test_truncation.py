"""Noticing a model server that cut the prompt without an error (`CutWatch`)."""

from __future__ import annotations

import pytest

from engine.model.faults import classify
from engine.model.truncation import MIN_GAP, MIN_GROWTH, CutWatch, PromptCutError


def test_a_count_far_below_the_estimate_is_a_cut() -> None:
    watch = CutWatch()
    with pytest.raises(PromptCutError) as info:
        watch.check(estimate=9_000, counted=2_050)  # Ollama at 4,096: half the window kept
    assert info.value.counted == 2_050 and info.value.estimate == 9_000
    assert "read only 2,050 tokens of a prompt of about 9,000" in str(info.value)


@pytest.mark.parametrize(
    ("estimate", "counted"),
    [
        (1_400, 500),  # a third, but a small prompt: within the estimate's error
        (9_000, 4_600),  # above half: code and prose tokenize at 3-5 bytes
        (9_000, 14_000),  # ideographs: more tokens than 4 bytes each
        (9_000, 0),  # no count at all
    ],
)
def test_counts_within_the_estimates_error_are_not_cuts(estimate: int, counted: int) -> None:
    CutWatch().check(estimate, counted)  # raises if judged a cut
    assert estimate - counted < MIN_GAP or 2 * counted >= estimate or counted == 0


def test_a_count_that_stops_growing_while_the_prompt_grows_is_a_cut() -> None:
    watch = CutWatch()
    watch.check(estimate=1_900, counted=1_950)  # fits: counted about as estimated
    watch.check(estimate=2_300, counted=2_048)  # grew less than MIN_GROWTH: not judged
    with pytest.raises(PromptCutError):  # the old Ollama: every prompt cut to the window
        watch.check(estimate=2_300 + MIN_GROWTH, counted=2_048)


def test_growth_counted_as_estimated_or_a_shrinking_prompt_is_not_a_cut() -> None:
    watch = CutWatch()
    watch.check(estimate=2_000, counted=1_600)
    watch.check(estimate=3_000, counted=2_400)  # grew by 800 estimated, 800 counted
    watch.check(estimate=3_900, counted=2_700)  # a third of the growth: within the margin
    watch.check(estimate=1_200, counted=1_000)  # compacted: smaller
    watch.check(estimate=1_200, counted=1_000)  # the same request again (a retry)
    assert watch.last == (1_200, 1_000)


def test_a_cut_is_classified_with_the_tokens_the_server_read() -> None:
    fault = classify(PromptCutError(2_050, 9_000))
    assert fault.kind == "truncated" and fault.window == 2_050 and not fault.retryable
    wrapped = RuntimeError("while running the agent")
    wrapped.__cause__ = PromptCutError(2_048, 5_000)
    assert classify(wrapped).kind == "truncated"
