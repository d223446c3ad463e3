"""A small LAN of hosts on one machine: Linux network namespaces, veth pairs and a bridge, and nftables to cut links.

Each host is a namespace with one interface, ``eth0``, on ``10.231.N.0/24`` (``N`` picked per
LAN from the process id, so parallel runs do not meet); the bridge lives in a namespace of
its own, so nothing is added to the machine's own network. :meth:`Lan.cut` drops a host's
traffic to and from another host (both ways, in the host's own namespace); :meth:`Lan.lossy`
drops a share of a host's packets at random; :meth:`Lan.heal` removes either. :meth:`Lan.close`
kills what runs in the namespaces and deletes them.

Needs root (``ip netns``) and ``nft`` (``apt-get install nftables``); :func:`require` fails
with the reason otherwise, never skips.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import uuid
from pathlib import Path

CUT_TABLE = "squall_cut"


def require() -> str | None:
    """Why the LAN cannot be built here, or None."""
    if os.geteuid() != 0:
        return "network namespaces need root (ip netns)"
    for tool in ("ip", "nft"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (apt-get install iproute2 nftables)"
    return None


def sh(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run a command; on failure raise with its output."""
    got = subprocess.run(list(args), capture_output=True, text=True, timeout=30)
    if check and got.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} exited {got.returncode}: {got.stderr.strip()}")
    return got


class Lan:
    """Hosts on one bridge (see the module docstring).

    Args: hosts: the host names (short: they name namespaces and interfaces).
    """

    def __init__(self, hosts: list[str]) -> None:
        self.tag = uuid.uuid4().hex[:5]
        self.subnet = 10 + os.getpid() % 200
        self.bridge_ns = f"sq{self.tag}-lan"
        self.ns: dict[str, str] = {h: f"sq{self.tag}-{h}" for h in hosts}
        self.ip: dict[str, str] = {h: f"10.231.{self.subnet}.{i + 1}" for i, h in enumerate(hosts)}
        self.procs: list[subprocess.Popen[bytes]] = []
        self.built = False

    def build(self) -> Lan:
        """Create the namespaces, the bridge and one veth pair per host."""
        self.built = True
        sh("ip", "netns", "add", self.bridge_ns)
        sh("ip", "-n", self.bridge_ns, "link", "add", "br0", "type", "bridge")
        sh("ip", "-n", self.bridge_ns, "link", "set", "br0", "up")
        for i, (host, ns) in enumerate(self.ns.items()):
            sh("ip", "netns", "add", ns)
            port = f"p{i}"
            sh("ip", "-n", self.bridge_ns, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", ns)
            sh("ip", "-n", self.bridge_ns, "link", "set", port, "master", "br0", "up")
            sh("ip", "-n", ns, "addr", "add", f"{self.ip[host]}/24", "dev", "eth0")
            sh("ip", "-n", ns, "link", "set", "eth0", "up")
            sh("ip", "-n", ns, "link", "set", "lo", "up")
        return self

    def exec_args(self, host: str) -> list[str]:
        """The prefix that runs a command on ``host``."""
        return ["ip", "netns", "exec", self.ns[host]]

    def popen(self, host: str, args: list[str], log: Path, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        """Start ``args`` on ``host`` (killed by :meth:`close`); output goes to ``log``."""
        with open(log, "ab") as out:
            proc = subprocess.Popen([*self.exec_args(host), *args], stdout=out, stderr=subprocess.STDOUT, env=env)
        self.procs.append(proc)
        return proc

    def run(self, host: str, args: list[str], env: dict[str, str] | None = None, timeout_s: float = 300) -> subprocess.CompletedProcess[str]:
        """Run ``args`` on ``host`` to its end."""
        return subprocess.run([*self.exec_args(host), *args], capture_output=True, text=True, env=env, timeout=timeout_s)

    def _nft(self, host: str, rules: str) -> None:
        sh(*self.exec_args(host), "nft", "delete", "table", "inet", CUT_TABLE, check=False)
        outgoing = rules.replace("saddr", "daddr")
        script = (
            f"table inet {CUT_TABLE} {{\n"
            f" chain input {{ type filter hook input priority 0; {rules} }}\n"
            f" chain output {{ type filter hook output priority 0; {outgoing} }}\n}}\n"
        )
        got = subprocess.run([*self.exec_args(host), "nft", "-f", "-"], input=script, capture_output=True, text=True, timeout=30)
        if got.returncode != 0:
            raise RuntimeError(f"nft on {host}: {got.stderr.strip()}")

    def cut(self, host: str, peer: str) -> None:
        """Drop every packet between ``host`` and ``peer`` (in ``host``'s namespace)."""
        self._nft(host, f"ip saddr {self.ip[peer]} drop;")

    def isolate(self, host: str) -> None:
        """Drop every packet between ``host`` and every other host of the LAN."""
        self._nft(host, f"ip saddr 10.231.{self.subnet}.0/24 drop;")

    def lossy(self, host: str, percent: int) -> None:
        """Drop ``percent`` % of ``host``'s packets, each way, at random."""
        self._nft(host, f"ip saddr 10.231.{self.subnet}.0/24 numgen random mod 100 < {percent} drop;")

    def heal(self, host: str) -> None:
        """Remove a cut or loss on ``host``."""
        sh(*self.exec_args(host), "nft", "delete", "table", "inet", CUT_TABLE)

    def close(self) -> None:
        """Kill what runs on the hosts; delete the namespaces (the veths go with them)."""
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
        for proc in self.procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(10)
        if not self.built:
            return
        for ns in [*self.ns.values(), self.bridge_ns]:
            pids = sh("ip", "netns", "pids", ns, check=False).stdout.split()
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, ValueError):
                    os.kill(int(pid), 9)
            sh("ip", "netns", "delete", ns, check=False)
