"""A supervisor's dependency bundles: installed beside its rounds, reported once when they fail, removed when unused (issue 51).

:class:`BundleInstalls` keeps the envs this supervisor installed (:mod:`service.deps.envs`, under
``<home>/envs``), installs one bundle at a time in a thread of its own (an install takes
seconds to minutes and must not hold back heartbeats and crash restarts), and knows which
bundles its running workers use, so that an env goes only once no plan and no worker needs it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from service.control.record import TopologyRecord
from service.deps.envs import Env, prepare, sweep
from service.deps.store import ArtifactStore
from service.supervisor.reconcile import WorkerKey
from streams.exceptions import SquallError

log = logging.getLogger("squall.supervisor")


class BundleInstalls:
    """The envs of one supervisor (see the module docstring).

    ``store``: where bundles are read; ``envs_dir``: where they are installed; ``report(topology,
    event)``: writes a ``failed_install`` event; ``supervisor``: its id; ``clock``: wall seconds.
    """

    def __init__(self, store: ArtifactStore, envs_dir: Path, report: Callable[[str, dict[str, Any]], Any], supervisor: str, clock: Callable[[], float]) -> None:
        self.store = store
        self.envs_dir = envs_dir
        self.report = report
        self.supervisor = supervisor
        self.clock = clock
        self.envs: dict[str, Env] = {}
        """Installed bundles, by sha256."""
        self.jobs: dict[str, Future[Env]] = {}
        """Bundles being installed."""
        self.pool = ThreadPoolExecutor(1, thread_name_prefix=f"install-{supervisor}")
        self.errors: dict[str, str] = {}
        """Per topology, why its bundle did not install (until it does)."""
        self.reported: set[tuple[str, int]] = set()
        """(topology, record version) whose failure was already reported."""
        self.by_worker: dict[WorkerKey, str] = {}
        """The env (its directory's name) each running worker was started in."""

    def done(self, records: Iterable[TopologyRecord]) -> set[str]:
        """The topologies whose bundle finished installing (or failing) since: plan them again."""
        return {r.name for r in records if r.artifact is not None and (job := self.jobs.get(str(r.artifact["sha256"]))) is not None and job.done()}

    def env(self, rec: TopologyRecord) -> Env | None:
        """The installed env of ``rec``'s bundle; None while it installs or after it failed (see :attr:`errors`).

        Steps: 1. an env installed before is used at once; 2. else the bundle is read and
        installed in the installer thread; 3. a failure is reported once per record version
        (logged, and a ``failed_install`` event with pip's output, which ``squall status``
        shows); the topology's workers do not start here, and its next change tries again.
        """
        assert rec.artifact is not None
        name, sha = rec.name, str(rec.artifact["sha256"])
        # 1. Installed.
        env = self.envs.get(sha)
        if env is not None:
            self.errors.pop(name, None)
            return env
        # 2. Read and install, beside the rounds.
        job = self.jobs.get(sha)
        if job is None:
            self.jobs[sha] = self.pool.submit(lambda: prepare(self.store.get(sha), sha, self.envs_dir, name))
            log.info("[%s] installing its dependency bundle %s (%s bytes)", name, sha[:12], rec.artifact.get("bytes"))
            return None
        if not job.done():
            return None
        del self.jobs[sha]
        try:
            env = self.envs[sha] = job.result()
            self.errors.pop(name, None)
            log.info("[%s] dependency bundle %s installed in %s", name, sha[:12], env.root)
            return env
        except SquallError as exc:
            why = str(exc)
        except Exception as exc:  # a broker or file error while reading or unpacking
            why = f"[{name}] dependency bundle {sha[:12]}: {type(exc).__name__}: {exc}"
        # 3. Failed: said once per version.
        self.errors[name] = why
        if (name, rec.version) not in self.reported:
            self.reported.add((name, rec.version))
            log.error("%s", why)
            self.report(
                name, {"event": "failed_install", "supervisor": self.supervisor, "worker": -1, "version": rec.version, "reason": why, "at": self.clock()}
            )
        return None

    def started(self, key: WorkerKey, env: Env | None) -> None:
        """Worker ``key`` runs in ``env`` (None: the supervisor's own environment)."""
        if env is not None:
            self.by_worker[key] = env.root.name

    def exited(self, key: WorkerKey) -> None:
        """Worker ``key`` is gone: its env no longer needs to stay for it."""
        self.by_worker.pop(key, None)

    def sweep(self, planned: Iterable[Env | None]) -> None:
        """Remove the envs that no plan (``planned``: the envs of the current plans), no running worker and no install uses."""
        keep = {e.sha256 for e in planned if e is not None} | set(self.by_worker.values()) | {s[:16] for s in self.jobs}
        for gone in sweep(self.envs_dir, keep):
            self.envs = {sha: e for sha, e in self.envs.items() if e.sha256 != gone}
            log.info("removed the dependency env %s: no topology uses it any more", gone)

    def shutdown(self) -> None:
        """Stop the installer (an install under way is abandoned; its directory is redone next time)."""
        self.pool.shutdown(wait=False, cancel_futures=True)
