"""The cyclic garbage collector, held off while a server starts (``host.gc_hold``): off while any hold is kept, then
what was built frozen out of it and the collector on again; holds forgotten are let go after ``LIMIT``."""

from __future__ import annotations

import gc
import time

import pytest

from nexus_core import hold_gc
from nexus_core.host import gc_hold


@pytest.fixture(autouse=True)
def collector_on():
    gc.enable()
    yield
    gc.enable()


def test_the_collector_is_off_until_the_last_hold_is_let_go_then_what_was_built_is_frozen() -> None:
    gc.unfreeze()
    first, second = hold_gc(), hold_gc()
    assert not gc.isenabled()
    built = [[] for _ in range(1000)]
    first()
    first()  # a second call counts for nothing
    assert not gc.isenabled()
    second()
    assert gc.isenabled()
    assert gc.get_freeze_count() > len(built)
    gc.unfreeze()


def test_a_collector_someone_else_turned_off_is_left_alone() -> None:
    gc.disable()
    release = hold_gc()
    release()
    assert not gc.isenabled()


def test_holds_still_kept_after_the_limit_are_let_go(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gc_hold, "LIMIT", 0.05)
    forgotten = hold_gc()
    assert not gc.isenabled()
    deadline = time.monotonic() + 5
    while not gc.isenabled() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert gc.isenabled()
    forgotten()  # late: counts for nothing
    later = hold_gc()
    assert not gc.isenabled()
    later()
    assert gc.isenabled()
    gc.unfreeze()


def test_the_garbage_starting_left_is_collected_later(monkeypatch: pytest.MonkeyPatch) -> None:
    """Frozen with the rest when the collector resumes, then collected once, ``TIDY_AFTER`` seconds later."""
    import weakref

    class Cycle:
        pass

    monkeypatch.setattr(gc_hold, "TIDY_AFTER", 0.05)
    release = hold_gc()
    garbage = Cycle()
    garbage.me = garbage  # type: ignore[attr-defined]
    gone = weakref.ref(garbage)
    del garbage
    release()
    assert gone() is not None  # frozen: the collector's next rounds do not see it
    deadline = time.monotonic() + 5
    while gone() is not None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert gone() is None
    gc.unfreeze()
