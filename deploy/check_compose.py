"""Cross-reference checks of deploy/compose.yaml that a JSON schema cannot express.

The compose-spec schema (check-jsonschema) says each key is well-formed; this says the file
hangs together: references resolve, files exist, images are pinned, long-running services
have a healthcheck, and every replica gets the same signing key. Run by scripts/check-deploy
with the validators' virtualenv (PyYAML comes with them). Exit status 1 lists every problem.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml

DEPLOY = Path(__file__).resolve().parent
LONG_RUNNING_RESTARTS = {"always", "unless-stopped", "on-failure"}


def _env_file(entry: str | dict[str, Any]) -> Path:
    return DEPLOY / (entry if isinstance(entry, str) else entry["path"])


def _env_keys(path: Path) -> dict[str, str]:
    """Variables of an env file, or of its committed .example when the real one is absent."""
    source = path if path.exists() else path.with_name(path.name + ".example")
    pairs = {}
    for line in source.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.lstrip().startswith("#") and "=" in line:
            key, _, value = line.partition("=")
            pairs[key.strip()] = value.strip()
    return pairs


def _check_image(name: str, svc: dict[str, Any]) -> list[str]:
    image = str(svc.get("image", ""))
    last = image.rsplit("/", 1)[-1]
    if "@sha256:" in image or (":" in last and not last.endswith(":latest")):
        return []
    return [f"{name}: image {image!r} is not pinned to a tag or digest"]


def _check_references(name: str, svc: dict[str, Any], spec: dict[str, Any]) -> list[str]:
    problems = [
        f"{name}: depends_on names the unknown service {target!r}"
        for target in svc.get("depends_on", {})
        if target not in spec["services"]
    ]
    problems += [
        f"{name}: network {network!r} is not declared"
        for network in svc.get("networks", [])
        if network not in (spec.get("networks") or {})
    ]
    for volume in svc.get("volumes", []):
        source = str(volume).split(":", 1)[0]
        if source.startswith((".", "/")):
            if not (DEPLOY / source).exists():
                problems.append(f"{name}: bind mount source {source} does not exist")
        elif source not in (spec.get("volumes") or {}):
            problems.append(f"{name}: volume {source!r} is not declared")
    return problems


def _check_service(name: str, svc: dict[str, Any], spec: dict[str, Any]) -> list[str]:
    problems = _check_image(name, svc) + _check_references(name, svc, spec)
    for entry in svc.get("env_file", []):
        path = _env_file(entry)
        if not path.exists() and not path.with_name(path.name + ".example").exists():
            problems.append(f"{name}: env_file {path.relative_to(DEPLOY)} has no .example")
    if svc.get("restart") in LONG_RUNNING_RESTARTS and "healthcheck" not in svc:
        problems.append(f"{name}: long-running service without a healthcheck")
    return problems


def _check_process(name: str, svc: dict[str, Any]) -> tuple[list[str], str]:
    """Problems of one web or worker service, and the signing key its env files give it."""
    env: dict[str, str] = {}
    for entry in svc.get("env_file", []):
        env.update(_env_keys(_env_file(entry)))
    problems = [
        f"{name}: {required} is not set by its env files"
        for required in ("DATABASE_URL", "CPERSONA_SIGNING_KEY", "CPERSONA_ALLOWED_HOSTS")
        if not env.get(required)
    ]
    if svc.get("environment", {}).get("CPERSONA_DB_POOLER") != "pgbouncer":
        problems.append(f"{name}: CPERSONA_DB_POOLER should be pgbouncer")
    condition = svc.get("depends_on", {}).get("migrate", {}).get("condition")
    if condition != "service_completed_successfully":
        problems.append(f"{name}: must wait for migrate to complete successfully")
    return problems, env.get("CPERSONA_SIGNING_KEY", "")


def _check_cpersona(spec: dict[str, Any]) -> list[str]:
    services = spec["services"]
    problems: list[str] = []
    keys = set()
    for name in ("web", "worker"):
        found, key = _check_process(name, services[name])
        problems += found
        keys.add(key)
    if len(keys) != 1:
        problems.append("web and worker do not share one CPERSONA_SIGNING_KEY")
    if services["migrate"].get("restart") != "no":
        problems.append("migrate: a one-shot job must not restart")
    if services["web"].get("deploy", {}).get("replicas", 1) < 2:
        problems.append("web: expected at least two replicas")
    return problems


def main() -> int:
    path = DEPLOY / "compose.yaml"
    spec = yaml.safe_load(path.read_text(encoding="utf-8"))
    problems = []
    for name, svc in spec["services"].items():
        problems += _check_service(name, svc, spec)
    problems += _check_cpersona(spec)
    for problem in problems:
        sys.stderr.write(f"{path.name}: {problem}\n")
    if not problems:
        sys.stdout.write(f"{path.name}: {len(spec['services'])} services, references resolve\n")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
