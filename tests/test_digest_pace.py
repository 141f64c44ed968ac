"""Digest rebuilds while files are busy are spaced by their own cost (``DigestPace``)."""

from __future__ import annotations

from helixd.daemon.pacing import EVERY, SHARE_INVERSE, DigestPace


def test_the_first_rebuild_and_one_after_a_quiet_spell_run_at_once() -> None:
    pace = DigestPace()
    assert pace.wait(0.0) == 0.0
    pace.ran(10.0, 10.05)
    assert pace.wait(100.0) == 0.0


def test_a_cheap_rebuild_waits_the_floor_of_a_second() -> None:
    pace = DigestPace()
    pace.ran(10.0, 10.01)
    assert abs(pace.wait(10.01) - (EVERY - 0.01)) < 1e-9
    assert pace.wait(11.0) == 0.0


def test_a_costly_rebuild_waits_ten_times_its_cost() -> None:
    """A rebuild of big busy sessions that took 0.6 s: the next starts 6 s after it started
    (digests take a tenth of the worker's time, the reads the rest)."""
    pace = DigestPace()
    pace.ran(10.0, 10.6)
    assert SHARE_INVERSE == 10
    assert abs(pace.wait(10.6) - 5.4) < 1e-9
    assert abs(pace.wait(15.0) - 1.0) < 1e-9
    assert pace.wait(16.0) == 0.0
    pace.ran(16.0, 16.02)  # the sessions went quiet: the pace is the floor again
    assert abs(pace.wait(16.02) - 0.98) < 1e-9
