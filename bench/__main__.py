"""``python -m bench <command>``: see bench/README.md."""

from __future__ import annotations

import argparse
import json
import tempfile


def parse_setting(kv: str) -> tuple[str, object]:
    """``KEY=VALUE`` with VALUE read as JSON when it parses (``topology.workers=6``)."""
    key, _, raw = kv.partition("=")
    try:
        return key, json.loads(raw)
    except ValueError:
        return key, raw


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1 (argparse prints the error and exits 2 otherwise)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench")
    sub = parser.add_subparsers(dest="command", required=True)
    a = sub.add_parser("acker", help="acker throughput, complete latency and memory")
    a.add_argument("--trees", type=int, default=200_000)
    a.add_argument("--rate", type=int, default=5_000, help="trees/s for the latency run")
    a.add_argument("--seconds", type=float, default=10.0)
    a.add_argument("--pending", type=int, default=1_000_000)
    a.add_argument("--runtimes", nargs="+", default=["native", "faust"])
    u = sub.add_parser("acker-cpu", help="the acker's CPU per tree, no broker (ledger, changelog discipline, outcomes)")
    u.add_argument("--trees", type=int, default=200_000)
    u.add_argument("--repeats", type=int, default=3)
    k = sub.add_parser("kit", help="the test kit's time for whole examples (Shakespeare word count, flights), no broker")
    k.add_argument("--repeats", type=int, default=1)
    k.add_argument("--json", default=None, help="write results as JSON here")
    c = sub.add_parser("all", help="every contender on both workloads, side by side")
    c.add_argument("--smoke", action="store_true", help="tiny input, every contender, correctness only")
    c.add_argument(
        "--workloads", nargs="+", default=["wordcount", "flights", "latency", "windows", "join"], choices=["wordcount", "flights", "latency", "windows", "join"]
    )
    c.add_argument("--broker", choices=["kafka", "tansu", "both"], default="both", help="Apache Kafka (single node), the embedded broker, or both in one run")
    c.add_argument("--contenders", nargs="+", default=None)
    c.add_argument("--latency-seconds", type=float, default=10.0)
    c.add_argument(
        "--input-copies",
        type=int,
        default=1,
        metavar="N",
        help="word count and flights: the input N times over, so that start-up and the final drain weigh less (a sustained rate)",
    )
    c.add_argument(
        "--latency-settle",
        type=float,
        default=3.0,
        metavar="SECONDS",
        help="latency workload: seconds at half rate before its latency is counted (a new topology's start is not its steady state)",
    )
    c.add_argument(
        "--rounds",
        type=positive_int,
        default=1,
        metavar="N",
        help="each contender's throughput run N times, in a new order each round (bench/rounds.py); its row is its median run",
    )
    c.add_argument(
        "--warm-round",
        action="store_true",
        help="first run every contender once, unmeasured (bench/rounds.py::schedule): a fresh broker's JIT compiles each contender's paths then",
    )
    c.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a topology config key for squall-acked/-unacked (JSON value), repeatable")
    c.add_argument("--set-eo", action="append", default=[], metavar="KEY=VALUE", help="a topology config key for squall-exactly-once (JSON value), repeatable")
    s = sub.add_parser("spark", help="word count: split as a SparkBolt vs the same as a Python bolt")
    s.add_argument("--smoke", action="store_true", help="tiny input, correctness only")
    s.add_argument("--latency-seconds", type=float, default=10.0)
    u.add_argument("--json", default=None, help="write results as JSON here")
    t = sub.add_parser("trace", help="what sampled tracing (1%% of trees) costs squall-acked, in ABBA pairs")
    t.add_argument("--runs", type=int, default=4, help="pairs of runs (acked + traced), alternating which runs first")
    t.add_argument("--broker", choices=["kafka", "tansu"], default="tansu")
    t.add_argument("--smoke", action="store_true", help="tiny input, correctness only")
    pr = sub.add_parser("pairs", help="contender B over contender A on one workload, in ABBA pairs (median of the pairs' ratios)")
    pr.add_argument("a", help="the contender compared with, e.g. squall-acked")
    pr.add_argument("b", help="the contender measured, e.g. squall-stateful")
    pr.add_argument("--workload", choices=["wordcount", "flights", "join"], default="wordcount")
    pr.add_argument("--runs", type=int, default=4, help="pairs of runs, alternating which runs first")
    pr.add_argument("--broker", choices=["kafka", "tansu"], default="tansu")
    pr.add_argument("--target", type=float, default=None, help="the least median ratio B/A that is good enough")
    pr.add_argument("--smoke", action="store_true", help="tiny input, correctness only")
    pr.add_argument("--warm-round", action="store_true", help="first run A and B once each, unmeasured: a fresh broker's JIT compiles their paths then")
    pr.add_argument(
        "--set-b",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a topology config key (JSON value) for B's runs only (squall-acked, -unacked, -traced and -exactly-once), repeatable: "
        "B may then be A itself (what a setting changes, in ABBA pairs)",
    )
    pr.add_argument(
        "--input-copies", type=int, default=1, metavar="N", help="word count and flights: the input N times over (a sustained rate, as in bench all)"
    )
    i = sub.add_parser("idle", help="the CPU of topologies with no input, per worker (issue 28)")
    i.add_argument("--seconds", type=float, default=20.0, help="how long each idle topology is measured")
    i.add_argument("--examples", nargs="+", default=None, help="examples/ files (default: word count acked, stateful and exactly once; flights exactly once)")
    i.add_argument("--broker", choices=["kafka", "tansu"], default="tansu")
    sb = sub.add_parser("state", help="a committer's state transaction per batch, SQLite and PostgreSQL (issue 28)")
    sb.add_argument("--lines", type=int, default=146_569, help="Shakespeare lines")
    sb.add_argument("--batch-lines", type=int, default=2_000, help="lines per batch (2 partitions x squall.batch.records)")
    sb.add_argument("--stores", nargs="+", choices=["sqlite", "postgres"], default=["sqlite", "postgres"])
    sb.add_argument("--postgres", default=None, help="a PostgreSQL URL (default: a throw-away server)")
    sb.add_argument("--json", default=None, help="write results as JSON here")
    tc = sub.add_parser("trace-cpu", help="the CPU sampled tracing adds on the real executor paths, no broker")
    tc.add_argument("--lines", type=int, default=146_569, help="Shakespeare lines through spout, split, count and acker")
    tc.add_argument("--chunk", type=int, default=1_000, help="lines per chunk: the variants alternate chunk by chunk")
    tc.add_argument("--repeats", type=int, default=1, help="passes over the lines")
    tc.add_argument("--json", default=None, help="write results as JSON here")
    ac = sub.add_parser("ack-cpu", help="the CPU acking adds per record, hop by hop, on the real executor paths, no broker (issue 49)")
    ac.add_argument("--workloads", nargs="+", choices=["wordcount", "flights"], default=["wordcount", "flights"])
    ac.add_argument("--records", type=int, default=100_000, help="input records per workload")
    ac.add_argument("--chunk", type=int, default=10_000, help="records per chunk: the variants alternate chunk by chunk")
    ac.add_argument("--json", default=None, help="write results as JSON here")
    sk = sub.add_parser("soak", help="the broker's disk and Squall's memory under a steady feed on Apache Kafka (issue 51)")
    sk.add_argument("--minutes", type=float, default=10.0, help="how long to feed")
    sk.add_argument("--rate", type=float, default=800.0, help="lines/s fed to the word count")
    sk.add_argument("--every", type=float, default=15.0, metavar="SECONDS", help="between two samples")
    sk.add_argument("--update-at", type=float, default=None, metavar="MINUTE", help="run squall update (new code, same shape) at this minute")
    sk.add_argument(
        "--retention-minutes", type=float, default=None, help="squall.topic.retention.ms of the topology (default: 7 days): what its input and output keep"
    )
    sk.add_argument("--json", default=None, help="write results as JSON here")
    sm = sub.add_parser("state-memory", help="a stateful bolt's memory at full speed on Apache Kafka: the count workers' RSS (issue 51)")
    sm.add_argument("--minutes", type=float, default=20.0, help="how long to run")
    sm.add_argument("--lead", type=int, default=200_000, help="lines produced ahead of the spout's committed offsets")
    sm.add_argument("--every", type=float, default=15.0, metavar="SECONDS", help="between two samples")
    sm.add_argument("--limit-mb", type=float, default=500.0, help="the most a count worker may hold (MB)")
    sm.add_argument("--flat-mb-per-min", type=float, default=2.0, help="the largest RSS slope over the last third still called flat (MB/min)")
    sm.add_argument("--json", default=None, help="write results as JSON here")
    wi = sub.add_parser("wire", help="the bytes a word-count line costs between components, raw and as the broker stores them (issue 51)")
    wi.add_argument("--compression", nargs="+", default=["default", "none"], help="variants: default (the topology's setting) or a codec")
    wi.add_argument("--smoke", action="store_true", help="a few lines, correctness only")
    wi.add_argument("--json", default=None, help="write results as JSON here")
    o = sub.add_parser("ops", help="how fast a supervisor answers: every /api/v1 path and the reading verbs, with a topology at work (issue 48)")
    o.add_argument("--broker", choices=["tansu", "kafka", "both"], default="both", help="the embedded broker, Apache Kafka (started here), or both")
    o.add_argument("--requests", type=int, default=50, help="requests per path, after one that warms it")
    o.add_argument("--pause", type=float, default=0.05, metavar="SECONDS", help="between two requests of a path")
    o.add_argument("--verb-runs", type=int, default=5, help="runs of each verb")
    o.add_argument("--rate", type=float, default=1000.0, help="lines/s fed to the word count while measuring")
    o.add_argument("--settle", type=float, default=10.0, metavar="SECONDS", help="feeding before the first request")
    o.add_argument("--broker-warmup", type=float, default=30.0, metavar="SECONDS", help="traffic to warm a fresh Apache Kafka's JIT before measuring (0: none)")
    o.add_argument("--json", default=None, help="write results as JSON here")
    sc = sub.add_parser("scale", help="the acked word count with 1, 2, 4 workers and 2, 4, 8 partitions per component, on Apache Kafka (issue 49)")
    sc.add_argument("--workers", type=int, nargs="*", default=[1, 2, 4], help="worker counts of the workers sweep (none: no sweep)")
    sc.add_argument("--at-tasks", type=int, default=4, help="partitions per component in the workers sweep")
    sc.add_argument("--tasks", type=int, nargs="*", default=[2, 4, 8], help="partitions per component of the partitions sweep (none: no sweep)")
    sc.add_argument("--at-workers", type=int, default=2, help="workers in the partitions sweep")
    sc.add_argument("--smoke", action="store_true", help="a few lines, correctness only")
    sc.add_argument(
        "--per-component", action=argparse.BooleanOptionalAction, default=True, help="also one run with each component in a worker of its own (CPU per hop)"
    )
    for p in (a, c, s, t, pr, i, sc):
        p.add_argument("--json", default=None, help="write results as JSON here")
        p.add_argument("--bootstrap", default=None, help="use this Kafka instead of starting brokers")
        p.add_argument(
            "--broker-warmup", type=float, default=30.0, metavar="SECONDS", help="traffic to warm a fresh Apache Kafka's JIT before measuring (0: none)"
        )
        p.add_argument("--workdir", default=None, help="where workers keep their logs and state (default: a new temporary directory)")
    args = parser.parse_args(argv)
    if getattr(args, "workdir", "unset") is None:
        args.workdir = tempfile.mkdtemp(prefix="squall-bench-")
    if hasattr(args, "set"):
        args.set = dict(parse_setting(kv) for kv in args.set)
    if hasattr(args, "set_b"):
        args.set_b = dict(parse_setting(kv) for kv in args.set_b)
    if hasattr(args, "set_eo"):
        args.set_eo = dict(parse_setting(kv) for kv in args.set_eo)
    if args.command == "scale":
        from bench import scale

        scale.run(args)
    elif args.command == "acker":
        from bench import acker

        acker.run(args)
    elif args.command == "acker-cpu":
        from bench import acker_cpu

        acker_cpu.run(args)
    elif args.command == "kit":
        from bench import kit

        kit.run(args)
    elif args.command == "all":
        from bench import compare

        args.contenders = args.contenders or compare.CONTENDERS
        compare.run(args)
    elif args.command == "trace":
        from bench import trace_cost

        trace_cost.run(args)
    elif args.command == "pairs":
        from bench import pairs

        pairs.run(args)
    elif args.command == "idle":
        from bench import idle

        args.examples = [e if e.endswith(".py") else f"{e}.py" for e in args.examples or idle.EXAMPLES]
        idle.run(args)
    elif args.command == "state":
        from bench import state

        state.run(args)
    elif args.command == "ack-cpu":
        from bench import ack_cpu

        ack_cpu.run(args)
    elif args.command == "trace-cpu":
        from bench import trace_cpu

        trace_cpu.run(args)
    elif args.command == "ops":
        from bench import ops

        ops.run(args)
    elif args.command == "soak":
        from bench import soak

        soak.run(args)
    elif args.command == "state-memory":
        from bench import state_memory

        state_memory.run(args)
    elif args.command == "wire":
        from bench import wire

        wire.run(args)
    elif args.command == "spark":
        from bench import compare

        args.workloads, args.contenders, args.broker = ["wordcount"], ["squall-acked", "squall-spark"], "tansu"
        compare.run(args)


if __name__ == "__main__":
    main()
