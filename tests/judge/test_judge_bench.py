"""The judging benchmark runs end to end on a small project and its figures hold together (the figures
themselves are printed by `python bench/judge_bench.py`, never asserted as timings)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def load_bench():  # noqa: ANN201 - the bench module
    spec = importlib.util.spec_from_file_location("judge_bench", REPO / "bench" / "judge_bench.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def test_judge_bench_small_run(tmp_path: Path) -> None:
    out = load_bench().main(["--n", "40", "--concurrency", "8", "--latency", "0.01", "--repeats", "2",
                             "--per-item-n", "4", "--json", str(tmp_path / "figures.json")])
    throughput = out["throughput"]
    assert throughput["http_calls_per_repeat"] == [40, 40]  # every repeat judged a fresh, unjudged copy
    assert len(throughput["wall_s_each"]) == 2 and throughput["ideal_s"] == 40 * 0.01 / 8
    for name in ("gcpc", "bare", "bare_as_gcpc"):  # the server's CPU is measured, the floor never beats the ideal
        assert throughput["fake_server_cpu_s_per_request_ms"][name] > 0
        assert throughput["cpu_floor_s"][name] >= throughput["ideal_s"]
        assert throughput["cpu_floor_s"][name] >= throughput["cpu_s_per_request_ms"][name] * 40 / 1000 - 0.001
    resumed = out["rerun"]["resumed"]
    assert (resumed["http_calls"], resumed["judged"]) == (0, 0)
    forced = out["rerun"]["forced_from_cache"]
    assert (forced["http_calls"], forced["judged"], forced["cache_hits"]) == (0, 40, 40)
    calls = out["calls_per_trajectory"]
    assert calls["default"] == 1.0 and calls["per_item"] == calls["mean_items"] > 1
    assert (tmp_path / "figures.json").is_file()
