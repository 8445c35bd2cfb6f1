"""The kill soak's request checks (soak_lib.request_violations) on made-up request logs: each rule fires on the
log that breaks it and stays quiet on the ones it allows."""

from __future__ import annotations

from tests.fixtures.openai_server import RequestRecord
from tests.reliability.soak_lib import SoakResult, request_violations

KEY_OF = {7: ("aime24", "p0", 0), 8: ("aime24", "p0", 1)}


def _req(run: int | None, seed: int, at: float, status: int | None = 200) -> RequestRecord:
    auth = f"Bearer soak-run-{run}" if run is not None else None
    return RequestRecord("/v1/chat/completions", {"seed": seed}, at, at + 0.05, status, authorization=auth)


def test_a_sample_in_flight_at_a_kill_may_be_asked_again_by_the_next_process() -> None:
    # Process 1's request is read by the server after process 1 was killed (received late): not a repeat by 2.
    res = SoakResult()
    log = [_req(1, 7, 1.0, None), _req(1, 8, 1.2, None), _req(2, 7, 3.0), _req(2, 8, 3.1)]
    assert request_violations(log, [(1, set())], KEY_OF, res) == []
    assert res.repeated_requests == 2 and res.retries == 0


def test_a_sample_journaled_at_a_kill_asked_again_by_a_later_process_is_a_violation() -> None:
    log = [_req(1, 7, 1.0), _req(2, 7, 3.0)]
    out = request_violations(log, [(1, {7})], KEY_OF, SoakResult())
    assert len(out) == 1 and "journaled sample(s) were requested again" in out[0] and "aime24" in out[0]


def test_one_process_asking_again_after_an_answer_is_a_violation_but_a_retry_after_a_failure_is_not() -> None:
    res = SoakResult()
    assert request_violations([_req(1, 7, 1.0, 500), _req(1, 7, 1.1)], [], KEY_OF, res) == []
    assert res.retries == 1 and res.repeated_requests == 0
    out = request_violations([_req(1, 7, 1.0), _req(1, 7, 1.1)], [], KEY_OF, SoakResult())
    assert len(out) == 1 and "requested 2 times by process 1" in out[0] and "200, 200" in out[0]


def test_a_request_without_its_process_key_is_a_violation() -> None:
    out = request_violations([_req(None, 7, 1.0)], [], KEY_OF, SoakResult())
    assert out == ["a request came without its process's API key"]
