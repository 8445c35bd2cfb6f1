"""results.scope.decide: what scoring one command's scope does to the run directory, as a pure function of the
headline's scope and completeness and the command's (the rule score_run follows; docs/reporting.md)."""

from __future__ import annotations

from reasoneval.results.scope import Decision, TaskScope, decide, view_name

P = tuple(f"k{i}" for i in range(10))


def test_a_narrower_command_is_a_view_and_a_complete_uniform_headline_is_not_scored_again() -> None:
    headline = {"aime24": TaskScope(P, 8)}
    smoke = {"aime24": TaskScope(P[:3], 1)}
    d = decide(headline, {"aime24": True}, smoke, {"aime24": True})
    assert d == Decision(headline=headline, view=view_name(smoke, headline), reorder=False, rescore_headline=False)
    assert d.view == "aime24-limit3-n1"


def test_the_headline_is_scored_again_beside_a_view_when_it_may_have_changed() -> None:
    headline = {"aime24": TaskScope(P, 8)}
    smoke = {"aime24": TaskScope(P[:3], 1)}
    assert decide(headline, {"aime24": False}, smoke, {"aime24": True}).rescore_headline  # it was not complete
    adaptive = {"aime24": TaskScope(P, 16, adaptive=True)}
    assert decide(adaptive, {"aime24": True}, smoke, {"aime24": True}).rescore_headline  # samples may have arrived
    # A view of one task beside a new task that joins the headline: the headline changed.
    d = decide(headline, {"aime24": True}, {"aime24": TaskScope(P[:3], 1), "gpqa": TaskScope(P, 4)},
               {"aime24": True, "gpqa": True})
    assert d.view is not None and d.headline == {"aime24": TaskScope(P, 8), "gpqa": TaskScope(P, 4)}
    assert d.rescore_headline


def test_a_wider_complete_command_is_the_headline_in_the_headlines_task_order() -> None:
    headline = {"aime24": TaskScope(P, 4), "math500": TaskScope(P, 4)}
    wider = {"math500": TaskScope(P, 8), "aime24": TaskScope(P, 8)}
    d = decide(headline, {"aime24": True, "math500": True}, wider, {"aime24": True, "math500": True})
    assert d.view is None and d.reorder and not d.rescore_headline
    assert list(d.headline) == ["aime24", "math500"] and d.headline == wider
    same_order = {"aime24": TaskScope(P, 8), "math500": TaskScope(P, 8)}
    assert not decide(headline, {}, same_order, {"aime24": True, "math500": True}).reorder


def test_a_wider_command_that_is_not_complete_leaves_a_complete_headline() -> None:
    headline = {"aime24": TaskScope(P, 4)}
    wider = {"aime24": TaskScope(P, 8)}
    d = decide(headline, {"aime24": True}, wider, {"aime24": False})
    assert d.headline == headline and d.view == "aime24-n8" and not d.rescore_headline
