"""Experience replay (seed 004): steps saved, advice precision, match latency at scale.

A scripted agent works through repeated tasks of six task families (several apps
and intents, one or two slots each). Every family has a true path: the steps that
do the task. Phase 1 explores one task per family and item, noisily (before each
true step it may try something wrong: a failed tap then the retry, a detour it
backs out of, a wait, a repeated tap; ``--noise`` is the chance of each wrong
try), and the store learns the run. Maintenance then generalises. Phase 2 starts
new tasks of four kinds: the same description again, a paraphrase, a new item of a
known pattern, and the same description under a new app version whose UI changed
for one family (the learned path no longer works there). The agent follows the
advice: a replayed path succeeds when it equals the task's true path (right steps,
right slot values); otherwise the agent explores from there. Replays report their
outcome (the success-rate EMA), explorations are learned.

Per strategy the table reports tasks, the advice's precision (its path was right),
and steps: the first exploration of the task's family vs the advised run. The
step ratio follows from the simulated noise (the seed claims 5–8× in time); the
precision is what the store decides. The second table is match latency (routing,
embedding the description, LanceDB look-ups) at ``--scale`` stored experiences,
vectors with the cluster structure of real embeddings (USE embeddings of
generated task descriptions, each stored row a perturbed copy of one), before and
after maintenance builds the indexes.

    .venv/bin/python benchmarks/experience_replay.py                   # ~4 min
    .venv/bin/python benchmarks/experience_replay.py --scale 10000 100000
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import numpy as np
from experience_families import DETOURS, FAMILIES

from loopwarden.agents.experience.learning import build_experience, learnable
from loopwarden.agents.experience.steps import step_of
from loopwarden.agents.experience.store import ExperienceStore
from loopwarden.agents.experience.tasks import OpenTask
from loopwarden.agents.memory.embedding import make_embedder
from loopwarden.schemas.tasks import TaskSpec
from loopwarden.settings import Settings
from loopwarden.streams.client.event_builder import make_action_event

RESULTS = Path(__file__).parent / "results"


def fill(text: str, values: dict[str, str]) -> str:
    for name, value in values.items():
        text = text.replace("{" + name + "}", value)
    return text


def true_path(family: dict[str, Any], values: dict[str, str], version: str) -> list[tuple]:
    path = [(t, {k: fill(v, values) for k, v in p.items()}) for t, p in family["path"]]
    changed = family.get("changed")
    if version != "10.0" and changed is not None:
        path = [changed if step == ("tap", {"target": "buy now"}) else step for step in path]
    return path


def explore(path: list[tuple], noise: float, rng: random.Random) -> list[tuple]:
    """A noisy run that ends up doing ``path``: (action type, params, success) steps."""
    run: list[tuple] = []
    last: tuple | None = None
    for action_type, params in path:
        while rng.random() < noise:
            kind = rng.choice(("fail", "detour", "wait", "repeat"))
            if kind == "fail":
                run.append((action_type, params, False))
            elif kind == "detour":
                run += [("tap", {"target": rng.choice(DETOURS)}, True), ("back", {}, True)]
            elif kind == "wait":
                run.append(("wait", {"seconds": rng.choice((1, 2, 5))}, True))
            else:  # taps the step before again (a double click): nothing changes
                run += [last] if last else []
        run.append((action_type, params, True))
        last = (action_type, params, True)
    return run


def as_task(loop_id: str, spec: TaskSpec, run: list[tuple], detection: Any) -> OpenTask:
    task = OpenTask(loop_id, f"start-{loop_id}", spec.model_dump(mode="json"), 0.0, 0.0)
    for i, (action_type, params, ok) in enumerate(run):
        event = make_action_event(loop_id, action_type, params=params, success=ok)
        task.add_step(event.event_id, step_of(event, detection), float(i), 10_000)
    return task


def advised_path(advice: dict[str, Any]) -> list[tuple]:
    return [(s["action_type"], s["params"]) for s in advice["steps"]]


class Agent:
    """Runs tasks against the store the way a worker's experience agent does."""

    def __init__(self, store: ExperienceStore, noise: float, seed: int) -> None:
        self.store = store
        self.noise = noise
        self.rng = random.Random(seed)
        self.detection = Settings().detection
        self.n = 0
        self.rows: list[dict[str, Any]] = []

    def run(self, family: dict, description: str, values: dict, version: str, kind: str) -> dict:
        self.n += 1
        loop_id = f"loop-{self.n}"
        spec = TaskSpec(
            task_description=description,
            intent=family["intent"],
            app_name=family["app"],
            app_version=version,
        )
        result = self.store.match(spec, f"start-{loop_id}", loop_id, time.time())
        strategy = result.match.strategy
        truth = true_path(family, values, version)
        advised = advised_path(result.advice)
        correct = strategy != "reflexion_explore" and advised == truth
        if strategy == "reflexion_explore":
            run = explore(truth, self.noise, self.rng)
        elif correct:
            run = [(t, p, True) for t, p in truth]
        else:  # follow the advice up to where it goes wrong, then explore the rest
            same = 0
            while same < min(len(advised), len(truth)) and advised[same] == truth[same]:
                same += 1
            wrong = [(*advised[same], False)] if same < len(advised) else []
            rest = explore(truth[same:], self.noise, self.rng)
            run = [(t, p, True) for t, p in truth[:same]] + wrong + rest
        task = as_task(loop_id, spec, run, self.detection)
        task.strategy = strategy
        task.advised_ids = result.advice["experience_ids"]
        success = True  # the agent gets there in the end
        if strategy in ("direct_replay", "adaptive_replay"):
            self.store.record_replay(task.advised_ids[0], f"end-{loop_id}", correct, time.time())
        if learnable(task):
            self.store.learn([(task, {"success": success})], time.time())
        row = {
            "description": description,
            "advised": advised,
            "truth": truth,
            "kind": kind,
            "strategy": strategy,
            "correct": correct,
            "steps": len(run),
            "true_steps": len(truth),
            "experimental": result.advice["experimental"],
            "ms": result.seconds * 1000,
        }
        self.rows.append(row)
        return row


def workload(agent: Agent, rng: random.Random) -> dict[str, float]:
    """Phase 1 (explore every family once per first values), maintenance, phase 2."""
    first_steps: dict[str, list[int]] = defaultdict(list)
    explored: dict[str, list[dict]] = defaultdict(list)
    for family in FAMILIES:
        names = list(family["slots"])
        for i in range(2):
            values = {n: family["slots"][n][i] for n in names}
            row = agent.run(family, fill(family["describe"][0], values), values, "10.0", "explore")
            first_steps[family["app"]].append(row["steps"])
            explored[family["app"]].append(values)
    agent.store.maintain(time.time())
    for family in FAMILIES:
        names = list(family["slots"])
        for values in explored[family["app"]]:
            agent.run(family, fill(family["describe"][0], values), values, "10.0", "repeat")
            phrase = rng.choice(family["paraphrase"])
            agent.run(family, fill(phrase, values), values, "10.0", "paraphrase")
        for j in range(2, len(family["slots"][names[0]])):
            values = {n: family["slots"][n][j % len(family["slots"][n])] for n in names}
            agent.run(family, fill(family["describe"][0], values), values, "10.0", "new item")
        for _ in range(3):  # the new app version: the same task, three times
            values = explored[family["app"]][0]
            agent.run(family, fill(family["describe"][0], values), values, "11.0", "new version")
    return {app: statistics.mean(steps) for app, steps in first_steps.items()}


def steps_table(rows: list[dict], exploration_steps: float) -> list[dict[str, Any]]:
    out = []
    by_strategy: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        if row["kind"] != "explore":
            by_strategy[row["strategy"]].append(row)
    for strategy in ("direct_replay", "adaptive_replay", "guided_exploration", "reflexion_explore"):
        group = by_strategy.get(strategy, [])
        if not group:
            continue
        steps = statistics.mean(r["steps"] for r in group)
        advised = [r for r in group if strategy != "reflexion_explore"]
        out.append(
            {
                "strategy": strategy,
                "tasks": len(group),
                "kinds": dict(Counter(r["kind"] for r in group)),
                "precision": round(sum(r["correct"] for r in advised) / len(advised), 3)
                if advised
                else None,
                "steps_explored": round(exploration_steps, 1),
                "steps_advised_run": round(steps, 1),
                "speedup": round(exploration_steps / steps, 2),
                "experimental": sum(r["experimental"] for r in group),
            }
        )
    return out


def scale_latency(sizes: list[int], queries: int, seed: int) -> list[dict[str, Any]]:
    """Match latency at each size, exact scan and after maintenance (indexes)."""
    settings = Settings()
    embedder = make_embedder(settings.memory)
    rng = np.random.default_rng(seed)
    prng = random.Random(seed)
    adjectives = ["red", "small", "cheap", "wireless", "organic", "vintage", "large", "smart"]
    nouns = ["lamp", "kettle", "backpack", "keyboard", "tea", "camera", "jacket", "speaker"]
    base: list[str] = []
    for family in FAMILIES:
        for a in adjectives:
            for b in nouns:
                for template in family["describe"] + family["paraphrase"]:
                    base.append(fill(template, dict.fromkeys(family["slots"], f"{a} {b}")))
    prng.shuffle(base)
    started = time.perf_counter()
    base_vectors = embedder.embed(base)
    print(f"embedded {len(base)} base descriptions in {time.perf_counter() - started:.1f} s")
    template_task = as_task(
        "t", TaskSpec(task_description="x"), [("open_app", {"app": "x"}, True)], settings.detection
    )
    out = []
    for size in sizes:
        path = tempfile.mkdtemp(prefix="lw-exp-scale-")
        memory = settings.memory.model_copy(update={"uri": path})
        store = ExperienceStore(settings.experience, memory, embedder)
        template_row = build_experience(template_task, True, time.time(), settings.experience)
        for start in range(0, size, 10_000):
            count = min(10_000, size - start)
            picks = rng.integers(0, len(base), count)
            noise = rng.normal(0, 0.02, (count, embedder.dims)).astype(np.float32)
            vectors = base_vectors[picks] + noise
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            rows = []
            for i, pick in enumerate(picks):
                n = start + i
                description = f"{base[pick]} #{n}"
                rows.append(
                    template_row
                    | {
                        "id": f"e{n}",
                        "loop_id": f"l{n}",
                        "task_description": description,
                        "description_hash": f"h{n}",
                        "template": description,
                    }
                )
            store.table.insert_new(rows, vectors)
        for phase in ("exact scan", "after maintenance"):
            if phase == "after maintenance":
                report = store.maintain(time.time())
                print(f"{size}: maintenance {report.seconds:.1f} s, built {report.indexes_built}")
            timings = []
            for q in range(queries):
                family = FAMILIES[q % len(FAMILIES)]
                description = fill(
                    prng.choice(family["paraphrase"]),
                    dict.fromkeys(family["slots"], prng.choice(nouns)),
                )
                spec = TaskSpec(
                    task_description=description, app_name=family["app"], intent=family["intent"]
                )
                timings.append(store.match(spec, f"q{q}", "l", time.time()).seconds * 1000)
            out.append(
                {
                    "experiences": size,
                    "phase": phase,
                    "p50_ms": round(float(np.percentile(timings, 50)), 2),
                    "p95_ms": round(float(np.percentile(timings, 95)), 2),
                }
            )
            print(out[-1])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--noise", type=float, default=0.5, help="Chance of each wrong try.")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--scale", type=int, nargs="*", default=[10_000], help="Store sizes.")
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    settings = Settings()
    memory = settings.memory.model_copy(update={"uri": tempfile.mkdtemp(prefix="lw-exp-")})
    store = ExperienceStore(settings.experience, memory)
    agent = Agent(store, args.noise, args.seed)
    started = time.perf_counter()
    first = workload(agent, random.Random(args.seed))
    exploration = statistics.mean(first.values())
    table = steps_table(agent.rows, exploration)
    print(f"\nworkload: {len(agent.rows)} tasks in {time.perf_counter() - started:.1f} s")
    print(f"{'strategy':<20}{'tasks':>6}{'precision':>10}{'explored':>10}{'advised':>9}{'×':>7}")
    for row in table:
        precision = "-" if row["precision"] is None else f"{row['precision']:.2f}"
        print(
            f"{row['strategy']:<20}{row['tasks']:>6}{precision:>10}{row['steps_explored']:>10}"
            f"{row['steps_advised_run']:>9}{row['speedup']:>7}  {row['kinds']}"
        )
    latency = scale_latency(args.scale, args.queries, args.seed) if args.scale else []
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / "experience_replay.json"
    out.write_text(
        json.dumps({"args": vars(args), "strategies": table, "latency": latency}, indent=2)
    )
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
