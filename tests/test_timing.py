"""codegen.timing: the one interleaved-timing helper of the CLI, the tuner, the tutorials and the benchmarks."""

import pytest

from codegen import timing


class FakeClock:
    """A clock that only moves when a timed function runs (each call costs its ``cost`` times the drift)."""

    def __init__(self, drift):
        self.t = 0.0
        self.drift = iter(drift)
        self.sleeps = []

    def __call__(self):
        return self.t

    def fn(self, cost):
        def run():
            self.t += cost * next(self.drift)
        return run


def test_interleaved_alternates_batches_and_pauses_before_each(monkeypatch):
    clock = FakeClock([1.0] * 1000)
    monkeypatch.setattr(timing.time, "sleep", clock.sleeps.append)
    order = []

    def tagged(name, cost):
        run = clock.fn(cost)
        return lambda: (order.append(name), run())

    runs = timing.interleaved({"a": tagged("a", 1.0), "b": tagged("b", 3.0)}, repeat=3, number=2, settle=0.5,
                              clock=clock)
    assert runs == {"a": [1.0] * 3, "b": [3.0] * 3}
    assert order == ["a", "a", "b", "b"] * 3  # one batch of each in turn; no warm-up with a fixed number
    assert clock.sleeps == [0.5] * 6
    assert timing.paired_ratio(runs, "b", "a").median == pytest.approx(3.0)


def test_interleaved_sizes_batches_to_the_budget(monkeypatch):
    clock = FakeClock([1.0] * 10_000)
    monkeypatch.setattr(timing.time, "sleep", lambda s: None)
    runs = timing.interleaved({"fast": clock.fn(0.001), "slow": clock.fn(0.05)}, repeat=2, budget=0.1, clock=clock)
    assert runs["fast"] == pytest.approx([0.001, 0.001]) and runs["slow"] == pytest.approx([0.05, 0.05])
    assert timing.calls_per_batch(clock.fn(0.001), 0.1, clock) in (99, 100)  # float rounding
    assert timing.calls_per_batch(clock.fn(5.0), 0.1, clock) == 1


def test_paired_ratios_are_taken_per_round(monkeypatch):
    """``paired`` times every function in each round; ``paired_ratio`` divides within a round,
    where the machine's drift, which moves both alike, cancels."""
    clock = FakeClock([1.0] * 8 + [3.0, 3.0, 3.0] * 2 + [2.0, 2.0, 2.0] * 2 + [0.5] * 1000)
    monkeypatch.setattr(timing.time, "perf_counter", clock)
    monkeypatch.setattr(timing.time, "sleep", lambda s: None)
    rounds = timing.paired({"a": clock.fn(1.0), "b": clock.fn(2.0)}, seconds=100.0, times=3)
    assert len(rounds["a"]) == len(rounds["b"]) >= 6
    assert rounds["a"][:3] == [1.0, 3.0, 2.0]  # the fastest of 3 calls, the round's drift on it
    median, lo, hi, n = timing.paired_ratio(rounds, "a", "b")
    assert (median, lo, hi) == pytest.approx((0.5, 0.5, 0.5)) and n == len(rounds["a"])


def test_summaries():
    assert timing.spread([1.0, 2.0, 3.0]) == pytest.approx(1.0)
    assert timing.format_time(2.5) == "2.50 s" and timing.format_time(0.0025) == "2.50 ms"
    assert timing.format_time(2.5e-6) == "2.5 us"
    assert timing.format_samples([0.001, 0.002, 0.003]) == (
        "2.00 ms median (min 1.00 ms, max 3.00 ms, spread 100%, 3 batches)")


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="at least one function"):
        timing.interleaved({})
    with pytest.raises(ValueError, match="repeat must be >= 1"):
        timing.interleaved({"a": lambda: None}, repeat=0)
    with pytest.raises(ValueError, match="no round with a positive time of 'b'"):
        timing.paired_ratio({"a": [1.0], "b": [0.0]}, "a", "b")


def test_summary_gives_each_names_median_fastest_batch_and_spread():
    from codegen.timing import summary

    row = summary({"a": [3.0, 1.0, 2.0], "b": [4.0]})
    assert row == {"a": 2.0, "a_best": 1.0, "a_spread": 1.0, "b": 4.0, "b_best": 4.0, "b_spread": 0.0}
