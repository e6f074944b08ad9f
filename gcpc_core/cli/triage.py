"""The auditor's loop on the command line: `triage` lists disagreements ranked by what correcting them
would move, proposes the next audits with the judge's error-rate estimate, plays simulated audits
(in memory, never stored), and runs the active-vs-uniform simulation."""

from __future__ import annotations

import argparse
import json
import math
from typing import TYPE_CHECKING

from ..defaults import AUDIT_TARGET_WIDTH
from .common import ITEM_JUDGE_CHOICES, add_db, add_limit, add_seed, add_verb, count, fail, open_db
from .compare import add_run_choice, chosen_labels

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["add_triage"]

SHOWN = ["rank", "kind", "trajectory_id", "judge", "item_id", "route", "verdict_raw", "proposed", "impact",
         "delta_auc", "delta_mean_pc", "delta_share", "n_open", "joint_impact", "link"]


def add_triage(sub: argparse._SubParsersAction) -> None:
    p = add_verb(sub, "triage", help="disagreements ranked by impact, next audits, simulated audits",
                 example="--db project.db --judge gcpc --limit 20 --next 10 --seed 0",
                 description="List every open item verdict on which the judge, the verifier's CTRF report and "
                 "the item auditors disagree (judge vs verifier, judge vs auditor, auditor vs auditor; one the "
                 "auditors' consensus settled is left out and counted), ranked by how much correcting it would move "
                 "the reported figures (each judge's AUC, mean partial credit per condition, matched-pair shares), "
                 "each change in units of its figure's interval width, alone and with the other open verdicts of "
                 "its trajectory, each with its item-audit link. "
                 "--next K proposes the next K audits per judge with the judge's error-rate estimate and "
                 "interval; --simulate-audits N plays N audits answered by the verifier (in memory, nothing "
                 "is stored) and prints the figures before and after; --simulate runs the active-vs-uniform "
                 "simulation (no DB; over --n-seeds seeds from --seed). Exit 0 ok, 2 unusable input.")
    add_db(p, required=False)
    p.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    p.add_argument("--judge", choices=ITEM_JUDGE_CHOICES, metavar="JUDGE",
                   help="only this judge's item verdicts: %(choices)s")
    add_limit(p, "print at most N disagreements")
    p.add_argument("--next", type=int, default=0, metavar="K", help="propose the next K audits per judge")
    p.add_argument("--target-width", type=float, default=AUDIT_TARGET_WIDTH,
                   help="interval width of the error rate at which auditing can stop (default %(default)s)")
    p.add_argument("--simulate-audits", type=int, default=0, metavar="N",
                   help="play N verifier-answered audits in memory and print figures before and after")
    p.add_argument("--simulate", action="store_true", help="active vs uniform random auditing on synthetic data")
    p.add_argument("--scenario", default="concentrated", choices=["concentrated", "spread"],
                   help="simulation scenario (default %(default)s)")
    p.add_argument("--n-seeds", type=count, default=100, metavar="N",
                   help="simulations, seeded --seed, --seed + 1, … (default %(default)s)")
    add_seed(p, "seed of the proposals and the first simulation")
    add_run_choice(p, repeat=True)
    p.add_argument("--base-url", help="the app's address the item-audit links start with (default: $GCPC_PUBLIC_URL, "
                   "else the address `streamlit run app.py` serves under the committed config)")
    p.set_defaults(func=_cmd_triage)


def _records(frame: pd.DataFrame) -> list[dict]:
    return [{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()}
            for row in frame.to_dict("records")]


def _print(title: str, frame: pd.DataFrame) -> None:
    print(f"\n{title}")
    print(frame.to_string(index=False, float_format=lambda v: f"{v:.4f}") if len(frame) else "(none)")


def _estimate(items: pd.DataFrame, audits: pd.DataFrame, judge: str, target: float,
              verifier: pd.DataFrame | None = None) -> dict:
    from ..analysis.active import estimate_error, population, should_stop

    est = estimate_error(population(items, audits, judge, verifier=verifier))
    return {"judge": judge, "estimate": est.estimate, "low": est.low, "high": est.high, "width": est.width,
            "n_audited": est.n_audited, "n_population": est.n_population, "stop": should_stop(est, target),
            "by_route": _records(est.by_route)}


def _triage_of(args: argparse.Namespace, frames: dict[str, pd.DataFrame]) -> tuple[pd.DataFrame, dict]:
    """The ranked disagreements and what `triage` reports about them (proposals, simulated audits)."""
    import pandas as pd

    from annotations.tokens import default_base_url

    from ..analysis.active import population, propose, verifier_audits, verifier_truth
    from ..analysis.audits import selection_note
    from ..analysis.calibration import audited_figures
    from ..analysis.triage import IMPACT_SCALE, audit_link, item_verdicts, triage
    from ..judge.registry import item_judges_among

    items, audits = frames["items"], frames["audits"]
    base_url = args.base_url or default_base_url()
    ranked = triage(frames, base_url=base_url)
    judges = item_judges_among(items["judge"].unique())
    out: dict = {"db": str(args.db), "n_disagreements": len(ranked), "n_settled": ranked.attrs.get("n_settled", 0),
                 "impact_scale": IMPACT_SCALE,
                 "disagreements": _records(ranked if args.limit is None else ranked.head(args.limit))}
    if args.next:  # what is known: the auditors' consensus, else the verifier's per-test truth
        known = verifier_truth(items, frames["ctrf"])
        out["estimates"] = [_estimate(items, audits, j, args.target_width, known) for j in judges]
        proposals = pd.concat([propose(population(items, audits, j, verifier=known), args.next,
                                       seed=args.seed).assign(judge=j) for j in judges], ignore_index=True)
        # drawn at random: an audit made from one of these links records so, and estimates the error rate
        proposals["link"] = [audit_link(base_url, r.trajectory_id, r.judge, r.item_id, drawn=True)
                             for r in proposals.itertuples(index=False)]
        out["proposals"] = _records(proposals)
        out["selection"] = selection_note(audits)
    if args.simulate_audits:
        verdicts = item_verdicts(items, frames["ctrf"], audits)
        decided = verdicts[verdicts["verifier"].notna()]
        simulated = []
        for j in judges:
            pop = population(items.merge(decided[["trajectory_id", "judge", "item_id"]]), audits, j)
            if len(pop):
                simulated.append(verifier_audits(verdicts, propose(pop, args.simulate_audits, seed=args.seed)))
        played = pd.concat([audits, *simulated], ignore_index=True) if simulated else audits
        n_played = sum(map(len, simulated))
        before, _ = audited_figures(items, frames["scores"], audits, n_boot=1000, seed=0, ctrf=frames["ctrf"])
        after, overrides = audited_figures(items, frames["scores"], played, n_boot=1000, seed=0, ctrf=frames["ctrf"])
        out["simulated_audits"] = {
            "n_audits": n_played, "n_overrides": len(overrides),
            "estimates_before": [_estimate(items, audits, j, args.target_width) for j in judges],
            "estimates_after": [_estimate(items, played, j, args.target_width) for j in judges],
            "figures_before": _records(before), "figures_after": _records(after)}
    return ranked, out


def _triage_counts(found: tuple[pd.DataFrame, dict]) -> dict[str, int]:
    """What the ledger records a `triage` run found."""
    ranked, out = found
    return {"disagreements": len(ranked), "proposals": len(out.get("proposals", [])),
            "simulated_audits": out["simulated_audits"]["n_audits"] if "simulated_audits" in out else 0}


def _cmd_triage(args: argparse.Namespace) -> int:
    import pandas as pd

    from ..analysis.active import STRATA, compare, summarize
    from ..analysis.frames import FrameContractError
    from ..project_frames import frames_from_store
    from ..runs import RunKind, counts_of_one, run_stage

    if args.simulate:
        table = compare(args.scenario, target_width=args.target_width, seeds=range(args.seed, args.seed + args.n_seeds))
        claim = summarize(table)
        if args.json:
            print(json.dumps({"scenario": args.scenario, "target_width": args.target_width, "summary": claim,
                              "runs": _records(table)}))
            return 0
        if args.n_seeds <= 20:
            _print(f"audits to reach interval width {args.target_width:g} ({args.scenario} scenario, strata "
                   f"{' × '.join(STRATA)}): active vs uniform random, one estimator and stopping rule", table)
        print(f"\nover {claim['n_seeds']} seeds ({args.scenario}, width {args.target_width:g}): active auditing needed "
              f"{claim['ratio']:.2f}× the audits of uniform random auditing (Σ active / Σ uniform; a seed: "
              f"{claim['active_mean']:.0f} vs {claim['uniform_mean']:.0f} audits on average); per seed {claim['ratio_min']:.2f}–"
              f"{claim['ratio_max']:.2f}× (5–95 %: {claim['ratio_p05']:.2f}–{claim['ratio_p95']:.2f}×, median "
              f"{claim['ratio_median']:.2f}×); final intervals covering the true error rate: active "
              f"{claim['active_coverage']:.0%}, uniform {claim['uniform_coverage']:.0%} of seeds"
              + ("" if args.n_seeds <= 20 else " (--json lists every seed)"))
        return 0
    if args.db is None:
        fail("triage", "--db is required (or --simulate)")
    store = open_db("triage", args.db)
    try:
        frames = frames_from_store(store, labels=chosen_labels("triage", store, args.run))
    except FrameContractError as exc:
        fail("triage", f"{args.db}: {exc}")
    items = frames["items"]
    if args.judge:
        items = items[items["judge"] == args.judge]
    if items.empty:
        fail("triage", f"{args.db}: no item verdicts{f' of judge {args.judge}' if args.judge else ''}: run `judge` "
                       "and `score` first")
    frames["items"] = items
    run = run_stage(store, RunKind("triage"), [frames], lambda chosen, _: _triage_of(args, chosen), prompt_version="-",
                    params={"judge": args.judge, "next": args.next, "simulate_audits": args.simulate_audits,
                            "seed": args.seed, "target_width": args.target_width},
                    counts=counts_of_one(_triage_counts))
    ranked, out = run.results[0]
    if args.json:
        print(json.dumps(out, default=str))
        return 0
    shown = ranked[SHOWN] if args.limit is None else ranked[SHOWN].head(args.limit)
    _print(f"{len(ranked)} open disagreements, most impactful first (showing {len(shown)}; {out['n_settled']} settled "
           f"by the auditors' consensus left out). {out['impact_scale']}.", shown)
    if args.next:
        _print("error rate of each judge's raw item verdicts (the auditors' consensus, else the verifier's truth, "
               "≠ raw verdict)",
               pd.DataFrame(out["estimates"]).drop(columns="by_route"))
        _print(f"next audits (up to {args.next} per judge)", pd.DataFrame(out["proposals"]))
    if args.simulate_audits:
        sim = out["simulated_audits"]
        print(f"\nsimulated: {sim['n_audits']} audits answered with the verifier's CTRF truth (in memory, not stored); "
              f"{sim['n_overrides']} item verdicts overridden. The audited figures count the verifier's truth as "
              "evidence already, so these audits move the auditors' error-rate estimate; a figure moves only where a stored "
              "audit contradicted the verifier.")
        _print("the auditors' error rate before (the verifier not counted: it answers the simulated audits)",
               pd.DataFrame(sim["estimates_before"]).drop(columns="by_route"))
        _print("the auditors' error rate after", pd.DataFrame(sim["estimates_after"]).drop(columns="by_route"))
        keys = ["judge", "figure", "group"]
        shown = {"audited": "", "error_low": "_low", "error_high": "_high", "error_width": "_width"}
        table = (pd.DataFrame(sim["figures_before"])[[*keys, *shown]]
                 .rename(columns={c: f"before{s}" for c, s in shown.items()})
                 .merge(pd.DataFrame(sim["figures_after"])[[*keys, *shown, "n_overrides"]]
                        .rename(columns={c: f"after{s}" for c, s in shown.items()}), on=keys))
        table.insert(table.columns.get_loc("after"), "delta", table["after"] - table["before"])
        _print("figures before and after the simulated audits (before: with the stored audits), each with its "
               "judge-error interval (low–high, width)", table)
    return 0
