"""Service settings (pydantic-settings): env ``SQUALL_*`` and the service file ``squall.yaml``.

=========================  ==========================  =====================================
setting                    env var                     meaning (unit; default)

=========================  ==========================  =====================================
``bootstrap_servers``      ``SQUALL_BOOTSTRAP_SERVERS`` Kafka to use; set => no embedded broker
``config_file``            ``SQUALL_CONFIG``            service file (path; ``./squall.yaml`` if present)
``metrics_port``           ``SQUALL_METRICS_PORT``      first worker's /metrics port (0 = off; default 0)
``data_dir``               ``SQUALL_DATA_DIR``          caches: corpus, run files (path; ~/.cache/squall)
``log_level``              ``SQUALL_LOG_LEVEL``         logging level (default INFO)
``http_host``              ``SQUALL_HTTP_HOST``         address of every HTTP endpoint: a supervisor's
                                                        /healthz, /readyz, /metrics and the
                                                        workers' /metrics (default 127.0.0.1;
                                                        0.0.0.0 is opt-in)
``http_port``              ``SQUALL_HTTP_PORT``         ``squall serve``'s HTTP port (default 9470)
``shutdown_timeout_secs``  ``SQUALL_SHUTDOWN_TIMEOUT_SECS`` SIGTERM drain bound (seconds; default 30)
``supervisor_id``          ``SQUALL_SUPERVISOR_ID``     names this supervisor (default host-pid)
``ui_token``               ``SQUALL_UI_TOKEN``          the UI's admin token: its actions (deactivate, kill, ...)
                                                     need it; unset: the pages are read-only
``control_namespace``      ``SQUALL_CONTROL_NAMESPACE`` prefix of the control topics and group
                                                        (default squall: squall.__control, ...)
``restart_initial_secs``   ``SQUALL_RESTART_INITIAL_SECS`` first backoff before a crashed worker
                                                        restarts (seconds; doubles; default 1)
``restart_max_secs``       ``SQUALL_RESTART_MAX_SECS``  longest backoff (seconds; default 30)
``restart_give_up_after``  ``SQUALL_RESTART_GIVE_UP_AFTER`` crashes within the window after which
                                                        a worker is given up on (default 5)
``restart_window_secs``    ``SQUALL_RESTART_WINDOW_SECS`` that window (seconds; default 300)

=========================  ==========================  =====================================

The service file may hold ``bootstrap.servers``, a ``topology:`` mapping of Storm keys
(the "service file" layer of the config precedence), ``kafka: {consumer: {}, producer: {}}``
client overrides, and ``kafka: {security: {security.protocol: SASL_SSL, ...}}``, TLS and
SASL settings for every Kafka client (or env ``SQUALL_KAFKA_*``:
:class:`streams.kafka.clients.KafkaSecurity`). Storm keys can also come from env, e.g.
``SQUALL_TOPOLOGY_WORKERS``.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from service.process.restarts import RestartPolicy
from streams.config import env_layer
from streams.exceptions import ConfigError
from streams.kafka.clients import SECURITY_ENV


class ServiceSettings(BaseSettings):
    """The service layer's settings: ``squall.yaml`` (``SQUALL_CONFIG``), then ``SQUALL_*`` env vars, then flags."""

    model_config = SettingsConfigDict(env_prefix="SQUALL_", extra="ignore")

    bootstrap_servers: str | None = Field(None, description="Kafka bootstrap servers; set => no embedded broker")
    config_file: Path | None = Field(None, validation_alias="SQUALL_CONFIG")
    metrics_port: int = Field(0, ge=0, le=65535, description="first worker's metrics port; 0 = off")
    data_dir: Path = Field(Path.home() / ".cache" / "squall")
    log_level: str = "INFO"
    http_host: str = Field("127.0.0.1", description="HTTP bind address; 127.0.0.1 unless opted in")
    http_port: int = Field(9470, ge=0, le=65535, description="squall serve's /healthz, /readyz, /metrics port (0 = any free port)")
    shutdown_timeout_secs: float = Field(30.0, gt=0, description="SIGTERM drain bound (seconds)")
    supervisor_id: str | None = Field(None, description="names this supervisor in logs, metrics and events")
    ui_token: str | None = Field(None, description="the UI's admin token: its actions need it; none: the pages are read-only")
    control_namespace: str = Field("squall", pattern=r"^[A-Za-z0-9._-]+$", description="prefix of the control topics and supervisor group")
    restart_initial_secs: float = Field(1.0, gt=0, description="first backoff before a crashed worker restarts (seconds; doubles)")
    restart_max_secs: float = Field(30.0, gt=0, description="longest restart backoff (seconds)")
    restart_give_up_after: int = Field(5, ge=1, description="crashes within the window after which a worker is given up on")
    restart_window_secs: float = Field(300.0, gt=0, description="the crash-counting window (seconds)")

    def state_layer(self, topology: str) -> dict[str, Any]:
        """The service layer's default state store for ``topology`` (``squall.state.url``).

        ``sqlite:///<data_dir>/state/<topology>.db``, one file per topology on this machine.
        Topologies whose committers run on several machines need ``postgresql://...``.
        """
        return {"squall.state.url": f"sqlite:///{(self.data_dir / 'state' / f'{topology}.db').resolve()}"}

    def restart_policy(self) -> RestartPolicy:
        """Crash backoff and give-up for ``squall run`` and ``squall serve`` alike."""
        return RestartPolicy(self.restart_initial_secs, self.restart_max_secs, self.restart_give_up_after, self.restart_window_secs)

    def service_file(self) -> dict[str, Any]:
        """The parsed service file (empty if there is none). Raises ConfigError if unreadable."""
        path = self.config_file or (Path("squall.yaml") if Path("squall.yaml").exists() else None)
        if path is None:
            return {}
        try:
            data = yaml.safe_load(Path(path).read_text()) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise ConfigError(f"[service] cannot read service file {path}: {exc}") from exc
        if not isinstance(data, dict):
            raise ConfigError(f"[service] service file {path} must hold a mapping")
        return data

    def topology_layer(self) -> dict[str, Any]:
        """The service-level Storm keys: service file ``topology:`` then ``SQUALL_*`` env."""
        layer = dict(self.service_file().get("topology") or {})
        layer.update(env_layer())
        return layer

    def kafka_overrides(self) -> dict[str, Any]:
        """The service file's ``kafka: {consumer: {}, producer: {}}`` client overrides."""
        return {k: v for k, v in (self.service_file().get("kafka") or {}).items() if k != "security"}

    def export_kafka_security(self, environ: MutableMapping[str, str] | None = None) -> dict[str, str]:
        """Put the service file's ``kafka: {security: {librdkafka key: value}}`` into the env.

        As ``SQUALL_KAFKA_*`` (:class:`streams.kafka.clients.KafkaSecurity`), unless the env sets
        it already. Returns what it set. Raises ConfigError naming an unknown key.
        """
        env = os.environ if environ is None else environ
        section = (self.service_file().get("kafka") or {}).get("security") or {}
        set_now: dict[str, str] = {}
        for key, value in section.items():
            var = SECURITY_ENV.get(key)
            if var is None:
                raise ConfigError(f"[service] kafka.security.{key} is not a security setting (one of {sorted(SECURITY_ENV)})")
            if var not in env:
                env[var] = set_now[var] = str(value)
        return set_now

    def resolved_bootstrap(self) -> str | None:
        """``bootstrap.servers``: the flag or env var, else the service file's; None: start the embedded broker."""
        return self.bootstrap_servers or self.service_file().get("bootstrap.servers")


__all__ = ["ServiceSettings"]
