"""Kubernetes manifests: rendered with kustomize, validated against the Kubernetes schemas.

Rendering uses a real kustomize: ``kustomize`` or ``kubectl kustomize`` on PATH, else one built
with ``go install`` into ~/.cache/groundwatch/bin when Go is present. Without any of them (no
Debian package exists) the overlays cannot be rendered and those tests skip with the reason —
the documented gap; the base and component files are still schema-checked one by one.

Schemas: the ``kubernetes-validate`` package ships the Kubernetes OpenAPI schemas (strict mode:
unknown fields are errors) for every built-in kind. The CRDs (ServiceMonitor, PrometheusRule,
KEDA ScaledObject) have no schema there; they get the semantic checks below instead (selectors
match, names and ports exist, rules equal deploy/prometheus/rules).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "k8s"
KUBERNETES_VERSION = "1.30.0"
KUSTOMIZE_VERSION = "v5.5.0"
OVERLAYS = {"dev": "groundwatch-dev", "prod": "groundwatch", "prod-keda": "groundwatch"}
SERVICES = {
    "generator": 8001,
    "rag-runner": 8002,
    "judge": 8003,
    "analytics": 8004,
    "reference-rag": 8005,
}
CRDS = {"ServiceMonitor", "PrometheusRule", "ScaledObject"}
CLUSTER_SCOPED = {"Namespace"}
PROMETHEUSRULE = K8S / "components" / "prometheus-operator" / "prometheusrule.yaml"


@cache
def kustomize() -> list[str] | None:
    """A kustomize command, building one with Go if that is all there is."""
    if found := shutil.which("kustomize"):
        return [found, "build"]
    if (kubectl := shutil.which("kubectl")) and subprocess.run(
        [kubectl, "kustomize", "--help"], capture_output=True, timeout=30
    ).returncode == 0:
        return [kubectl, "kustomize"]
    cache_dir = (
        Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "groundwatch" / "bin"
    )
    built = cache_dir / f"kustomize-{KUSTOMIZE_VERSION}"
    if not built.exists() and (go := shutil.which("go")):
        gobin = cache_dir / "go-build"
        result = subprocess.run(
            [go, "install", f"sigs.k8s.io/kustomize/kustomize/v5@{KUSTOMIZE_VERSION}"],
            env={**os.environ, "GOBIN": str(gobin), "CGO_ENABLED": "0"},
            capture_output=True,
            text=True,
            timeout=600,
        )
        if result.returncode == 0:
            (gobin / "kustomize").rename(built)
    return [str(built), "build"] if built.exists() else None


def render(path: Path) -> list[dict[str, Any]]:
    command = kustomize()
    if command is None:
        pytest.skip(
            "no kustomize: neither kustomize nor kubectl on PATH and no Go to build it "
            "(Debian packages neither); overlays not rendered — documented gap"
        )
    result = subprocess.run([*command, str(path)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return [d for d in yaml.safe_load_all(result.stdout) if d]


@pytest.fixture(scope="module", params=sorted(OVERLAYS))
def overlay(request: pytest.FixtureRequest) -> tuple[str, list[dict[str, Any]]]:
    return request.param, render(K8S / "overlays" / request.param)


def validate(doc: dict[str, Any]) -> None:
    import kubernetes_validate

    kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)


def patch_files() -> set[Path]:
    """Files the kustomizations use as patches (partial objects, not manifests)."""
    out: set[Path] = set()
    for kfile in K8S.rglob("kustomization.yaml"):
        for patch in yaml.safe_load(kfile.read_text()).get("patches", []):
            if "path" in patch:
                out.add((kfile.parent / patch["path"]).resolve())
    return out


def source_documents() -> Iterator[tuple[Path, dict[str, Any]]]:
    patches = patch_files()
    for path in sorted(K8S.rglob("*.yaml")):
        if path.name == "kustomization.yaml" or path.resolve() in patches:
            continue
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and "apiVersion" in doc and "$patch" not in doc:
                yield path, doc


def by_kind(docs: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for d in docs if d["kind"] == kind}


def pod_spec(workload: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = workload["spec"]["template"]["spec"]
    return spec


def test_every_source_manifest_matches_the_kubernetes_schema() -> None:
    """The files as written (before kustomize): complete built-in objects must validate."""
    checked = 0
    for path, doc in source_documents():
        if doc["kind"] in CRDS:
            continue
        try:
            validate(doc)
        except Exception as exc:
            pytest.fail(f"{path.relative_to(ROOT)} {doc['kind']}/{doc['metadata']['name']}: {exc}")
        checked += 1
    assert checked >= 20


def test_validator_rejects_a_broken_manifest() -> None:
    """Strict mode is on: a misspelt field or a wrong type fails."""
    import kubernetes_validate

    deployment = next(d for p, d in source_documents() if d["kind"] == "Deployment")
    broken = yaml.safe_load(yaml.safe_dump(deployment))
    broken["spec"]["template"]["spec"]["containers"][0]["readinesProbe"] = {
        "httpGet": {"path": "/readyz"}
    }
    with pytest.raises(kubernetes_validate.ValidationError):
        validate(broken)
    wrong = yaml.safe_load(yaml.safe_dump(deployment))
    wrong["spec"]["replicas"] = "two"
    with pytest.raises(kubernetes_validate.ValidationError):
        validate(wrong)


def test_rendered_overlay_validates(overlay: tuple[str, list[dict[str, Any]]]) -> None:
    name, docs = overlay
    kinds = {d["kind"] for d in docs}
    assert {
        "Namespace",
        "ConfigMap",
        "Deployment",
        "Service",
        "PodDisruptionBudget",
        "Job",
    } <= kinds
    for doc in docs:
        if doc["kind"] in CRDS:
            continue
        try:
            validate(doc)
        except Exception as exc:
            pytest.fail(f"{name}: {doc['kind']}/{doc['metadata']['name']}: {exc}")


def test_rendered_overlay_is_consistent(overlay: tuple[str, list[dict[str, Any]]]) -> None:
    name, docs = overlay
    namespace = OVERLAYS[name]
    assert by_kind(docs, "Namespace").keys() == {namespace}
    for doc in docs:
        if doc["kind"] not in CLUSTER_SCOPED:
            assert doc["metadata"].get("namespace") == namespace, (
                f"{doc['kind']}/{doc['metadata']['name']}"
            )
    deployments = by_kind(docs, "Deployment")
    services = by_kind(docs, "Service")
    config_maps = by_kind(docs, "ConfigMap")
    secrets = by_kind(docs, "Secret")
    assert SERVICES.keys() <= deployments.keys()
    for svc, port in SERVICES.items():
        deploy = deployments[svc]
        pod = deploy["spec"]["template"]
        assert (
            deploy["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
        )
        (container,) = pod["spec"]["containers"]
        assert container["command"] == [f"groundwatch-{svc}"]
        assert {"name": "http", "containerPort": port} in container["ports"]
        env = {e["name"]: e.get("value") for e in container.get("env", [])}
        assert env["GW_PORT"] == str(port)
        assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
        assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
        for key in ("requests", "limits"):
            assert {"cpu", "memory"} <= container["resources"][key].keys(), f"{svc} {key}"
        annotations = pod["metadata"]["annotations"]
        assert annotations == {
            "prometheus.io/scrape": "true",
            "prometheus.io/port": str(port),
            "prometheus.io/path": "/metrics",
        }
        assert pod["spec"]["securityContext"]["runAsNonRoot"] is True
        service = services[svc]
        assert service["spec"]["selector"].items() <= pod["metadata"]["labels"].items()
        assert service["spec"]["ports"] == [{"name": "http", "port": port, "targetPort": "http"}]
        assert any(
            p["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
            for p in by_kind(docs, "PodDisruptionBudget").values()
        ), f"{svc} has no PDB"
        assert container["image"].startswith("groundwatch:")
    # Every workload's config and secret references resolve (prod's Secret is made out of band).
    for workload in [
        *deployments.values(),
        *by_kind(docs, "Job").values(),
        *by_kind(docs, "StatefulSet").values(),
    ]:
        for container in pod_spec(workload)["containers"]:
            for ref in container.get("envFrom", []):
                if "configMapRef" in ref:
                    assert ref["configMapRef"]["name"] in config_maps
                if "secretRef" in ref:
                    secret = ref["secretRef"]["name"]
                    assert secret in secrets or (
                        name.startswith("prod") and secret == "groundwatch-secrets"
                    )
    (config,) = (
        config_maps.values()
        if len(config_maps) == 1
        else [c for n, c in config_maps.items() if n.startswith("groundwatch-config")]
    )
    assert config["data"]["GW_BUS"] == "kafka" and config["data"]["GW_HOST"] == "0.0.0.0"
    if name == "dev":
        url = secrets[next(n for n in secrets if n.startswith("groundwatch-secrets"))]
        assert "GW_DATABASE_URL" in url["data"] and "GW_API_TOKEN" in url["data"]


def test_config_map_keys_are_settings_fields(overlay: tuple[str, list[dict[str, Any]]]) -> None:
    from tests.integration.test_deploy_compose import known_gw_variables

    known = known_gw_variables()
    for doc in by_kind(overlay[1], "ConfigMap").values():
        assert set(doc["data"]) <= known, set(doc["data"]) - known
    for deploy in by_kind(overlay[1], "Deployment").values():
        for container in pod_spec(deploy)["containers"]:
            names = {e["name"] for e in container.get("env", []) if e["name"].startswith("GW_")}
            assert names <= known, names - known


def test_judge_autoscaling(overlay: tuple[str, list[dict[str, Any]]]) -> None:
    name, docs = overlay
    partitions = int(
        next(
            c for n, c in by_kind(docs, "ConfigMap").items() if n.startswith("groundwatch-config")
        )["data"]["GW_PARTITIONS"]
    )
    judge = by_kind(docs, "Deployment")["judge"]
    assert "replicas" not in judge["spec"], "the autoscaler owns the judge's replica count"
    hpas = by_kind(docs, "HorizontalPodAutoscaler")
    scaled = by_kind(docs, "ScaledObject")
    if name == "prod-keda":
        assert hpas == {}, "KEDA owns the judge's HPA; the CPU HPA must be gone"
        spec = scaled["judge"]["spec"]
        assert spec["scaleTargetRef"]["name"] == "judge"
        assert spec["maxReplicaCount"] <= partitions
        kafka = next(t for t in spec["triggers"] if t["type"] == "kafka")["metadata"]
        config = next(
            c for n, c in by_kind(docs, "ConfigMap").items() if n.startswith("groundwatch-config")
        )["data"]
        assert kafka["bootstrapServers"] == config["GW_KAFKA_BOOTSTRAP"]
        assert kafka["topic"] == f"{config['GW_TOPIC_PREFIX']}responses"
        from services.judge.settings import JudgeServiceSettings

        assert kafka["consumerGroup"] == JudgeServiceSettings.model_fields["judge_group"].default
    else:
        assert scaled == {}
        hpa = hpas["judge"]["spec"]
        assert hpa["scaleTargetRef"] == {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "name": "judge",
        }
        assert hpa["metrics"][0]["resource"]["name"] == "cpu"
        assert hpa["minReplicas"] <= hpa["maxReplicas"] <= partitions


def test_prod_monitoring_objects(overlay: tuple[str, list[dict[str, Any]]]) -> None:
    name, docs = overlay
    monitors = by_kind(docs, "ServiceMonitor")
    if name == "dev":
        assert monitors == {}, "dev scrapes through the prometheus.io annotations"
        return
    spec = monitors["groundwatch"]["spec"]
    selected = [
        s
        for s in by_kind(docs, "Service").values()
        if spec["selector"]["matchLabels"].items() <= s["metadata"].get("labels", {}).items()
    ]
    assert {s["metadata"]["name"] for s in selected} == set(SERVICES)
    (endpoint,) = spec["endpoints"]
    assert all(endpoint["port"] in {p["name"] for p in s["spec"]["ports"]} for s in selected)
    assert endpoint["path"] == "/metrics" and endpoint["honorLabels"] is True
    relabels = {r["targetLabel"]: r for r in endpoint["relabelings"]}
    assert relabels["system"]["replacement"] == "groundwatch" and "component" in relabels
    assert by_kind(docs, "PrometheusRule")["groundwatch"]["spec"]["groups"] == rule_groups()


def rule_groups() -> list[dict[str, Any]]:
    groups: list[dict[str, Any]] = []
    for path in sorted((ROOT / "deploy" / "prometheus" / "rules").glob("*.yml")):
        groups += yaml.safe_load(path.read_text())["groups"]
    return groups


class _Block(yaml.SafeDumper):
    pass


_Block.add_representer(
    str,
    lambda d, v: d.represent_scalar("tag:yaml.org,2002:str", v, style="|" if "\n" in v else None),
)

_HEADER = """\
# GENERATED from deploy/prometheus/rules/*.yml: edit those, then rewrite this file with
#   GW_WRITE_PROMETHEUSRULE=1 .venv/bin/pytest tests/integration/test_deploy_k8s.py -k prometheusrule
# (the same test fails while the two differ). kube-prometheus-stack selects rules by its release
# label: add `release: <your release>` in an overlay if yours does.
"""


def test_prometheusrule_equals_the_rule_files() -> None:
    doc = {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {"name": "groundwatch", "labels": {"app.kubernetes.io/name": "groundwatch"}},
        "spec": {"groups": rule_groups()},
    }
    if os.environ.get("GW_WRITE_PROMETHEUSRULE") == "1":
        PROMETHEUSRULE.write_text(
            _HEADER
            + yaml.dump(doc, Dumper=_Block, sort_keys=False, width=10**6, allow_unicode=True)
        )
    assert yaml.safe_load(PROMETHEUSRULE.read_text()) == doc, (
        "k8s/components/prometheus-operator/prometheusrule.yaml differs from deploy/prometheus/rules"
    )


def test_kustomizations_reference_existing_files() -> None:
    """Holds without kustomize too: every resource, component and patch path exists."""
    for kfile in K8S.rglob("kustomization.yaml"):
        spec = yaml.safe_load(kfile.read_text())
        paths = [
            *spec.get("resources", []),
            *spec.get("components", []),
            *(p["path"] for p in spec.get("patches", []) if "path" in p),
        ]
        for rel in paths:
            target = (kfile.parent / rel).resolve()
            assert target.exists(), f"{kfile.relative_to(ROOT)}: {rel} missing"
            if target.is_dir():
                assert (target / "kustomization.yaml").is_file(), f"{rel} is not a kustomization"


def test_replication_is_configured_for_a_cluster(overlay: tuple[str, list[dict[str, Any]]]) -> None:
    """Issue 30: every overlay says how its topics are replicated; prod asks a real cluster for
    three replicas, two in sync (one broker may be lost without a pause or a loss)."""
    name, docs = overlay
    (config,) = [
        d for n, d in by_kind(docs, "ConfigMap").items() if n.startswith("groundwatch-config")
    ]
    data = config["data"]
    rf, isr = data["GW_KAFKA_REPLICATION_FACTOR"], data["GW_KAFKA_MIN_INSYNC_REPLICAS"]
    if name.startswith("prod"):
        assert (rf, isr) == ("3", "2")
    else:
        assert (rf, isr) == ("0", "0")  # the dev overlay's single node: RF 1, min ISR 1
