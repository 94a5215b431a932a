"""The HorizontalPodAutoscaler controller, as upstream's pkg/controller/podautoscaler/horizontal.go.

Every HPA is reconciled once per sync period (--horizontal-pod-autoscaler-sync-period, 15 s): read
the target's /scale subresource, compute a replica count from each metric (the largest wins), bring it
through stabilization and the scaling limits (normalize.py), write the new scale, and record
status, conditions and events with upstream's reasons and messages. As upstream, an HPA is first
reconciled one sync period after it appears, and every period after that.
"""

from __future__ import annotations

import copy
import logging
import re
import time
from typing import Any
from urllib.parse import quote

from ...api.errors import StatusError
from ...api.labels import SelectorParseError, parse_selector, selector_from_label_selector
from ...api.quantity import Quantity, parse_quantity
from ...api.timefmt import format_time
from ..base import GVRS, Controller, ControllerContext
from .metrics_client import MetricsClient, MetricsError
from .normalize import Condition, History, normalize, normalize_with_behaviors
from .replica_calculator import (
    DEFAULT_CPU_INITIALIZATION_PERIOD,
    DEFAULT_INITIAL_READINESS_DELAY,
    DEFAULT_TOLERANCE,
    ReplicaCalcError,
    ReplicaCalculator,
)

__all__ = ["HorizontalController", "hpa_options"]

log = logging.getLogger("pyk8s.controllers.hpa")

HPA = GVRS["horizontalpodautoscalers"]
_GROUP_VERSION = re.compile(r"([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?v[0-9]+((alpha|beta)[0-9]+)?")
DEFAULT_SYNC_PERIOD = 15.0
DEFAULT_DOWNSCALE_STABILIZATION = 300.0


class ComputeError(Exception):
    """A metric could not be turned into a replica count; `condition` is ScalingActive's (already evented)."""

    def __init__(self, message: str, condition: Condition | None = None) -> None:
        super().__init__(message)
        self.condition = condition


def hpa_options(options: dict[str, Any]) -> dict[str, float]:
    """The controller's settings from the manager's options (kube-controller-manager's flag names)."""
    def get(name: str, default: float) -> float:
        v = options.get(name)
        return default if v is None else float(v)

    return {"sync_period": get("horizontal_pod_autoscaler_sync_period", DEFAULT_SYNC_PERIOD),
            "tolerance": get("horizontal_pod_autoscaler_tolerance", DEFAULT_TOLERANCE),
            "cpu_initialization_period": get("horizontal_pod_autoscaler_cpu_initialization_period",
                                             DEFAULT_CPU_INITIALIZATION_PERIOD),
            "initial_readiness_delay": get("horizontal_pod_autoscaler_initial_readiness_delay",
                                           DEFAULT_INITIAL_READINESS_DELAY),
            "downscale_stabilization": get("horizontal_pod_autoscaler_downscale_stabilization",
                                           DEFAULT_DOWNSCALE_STABILIZATION)}


def set_condition(hpa: dict[str, Any], ctype: str, status: str, reason: str, message: str) -> None:
    """setCondition: the transition time moves only when the status changes."""
    conds = hpa.setdefault("status", {}).setdefault("conditions", [])
    cur = next((c for c in conds if c.get("type") == ctype), None)
    if cur is None:
        cur = {"type": ctype}
        conds.append(cur)
    if cur.get("status") != status:
        cur["lastTransitionTime"] = format_time(time.time())
    cur.update(status=status, reason=reason, message=message)


def _milli_quantity(milli: int) -> str:
    return str(Quantity.from_milli(milli))


def _go_selector(sel: dict[str, Any] | None) -> str:
    """`%+v` of a *metav1.LabelSelector (its generated String()), as upstream's metric names print it."""
    if sel is None:
        return "<nil>"
    labels = "".join(f"{k}: {v}," for k, v in sorted((sel.get("matchLabels") or {}).items()))
    exprs = "".join(f"LabelSelectorRequirement{{Key:{e.get('key', '')},Operator:{e.get('operator', '')},"
                    f"Values:[{' '.join(e.get('values') or [])}],}},"
                    for e in sel.get("matchExpressions") or [])
    return (f"&LabelSelector{{MatchLabels:map[string]string{{{labels}}},"
            f"MatchExpressions:[]LabelSelectorRequirement{{{exprs}}},}}")


class HorizontalController(Controller):
    name = "horizontal-pod-autoscaler"
    workers = 5  # upstream's --concurrent-horizontal-pod-autoscaler-syncs
    component = "horizontal-pod-autoscaler"  # the events' source, as upstream's

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        o = hpa_options(ctx.options)
        self.sync_period = o["sync_period"]
        self.downscale_stabilization = o["downscale_stabilization"]
        self.calc = ReplicaCalculator(o["tolerance"], o["cpu_initialization_period"], o["initial_readiness_delay"])
        self.metrics = MetricsClient(ctx.client)
        self.history: dict[str, History] = {}
        self.selectors: dict[str, Any] = {}  # HPA key -> its target's last parsed selector
        self._resources: dict[tuple[str, str], str | None] = {}  # (apiVersion, kind) -> plural

    def setup(self) -> None:
        self.hpas = self.ctx.informer("horizontalpodautoscalers")
        self.pods = self.ctx.informer("pods")
        # as upstream, every HPA waits one sync period in the queue: adds and updates do not jump it
        self.hpas.add_handlers(on_add=lambda o: self.enqueue_after(o, self.sync_period),
                               on_update=lambda old, new: self.enqueue_after(new, self.sync_period),
                               on_delete=self._deleted)

    def _deleted(self, hpa: dict[str, Any]) -> None:
        key = f"{hpa['metadata'].get('namespace', '')}/{hpa['metadata']['name']}"
        self.history.pop(key, None)
        self.selectors.pop(key, None)

    async def sync(self, key: str) -> None:
        hpa = self.hpas.get(key)
        if hpa is None:
            return
        try:
            await self.reconcile(key, hpa)
        except Exception as e:  # reported as upstream's HandleError; the next period retries
            log.info("horizontal-pod-autoscaler: %s", e)
        finally:
            if self.hpas.get(key) is not None:
                self.enqueue_after(key, self.sync_period)

    # ---- one HPA ------------------------------------------------------------------------
    async def reconcile(self, key: str, shared: dict[str, Any]) -> None:
        hpa = copy.deepcopy(shared)
        original_status = copy.deepcopy(hpa.get("status") or {})
        spec = hpa.get("spec") or {}
        ns = hpa["metadata"].get("namespace", "")
        ref = spec.get("scaleTargetRef") or {}
        reference = f"{ref.get('kind', '')}/{ns}/{ref.get('name', '')}"
        history = self.history.setdefault(key, History())

        try:
            scale, path = await self._get_scale(ns, ref)
        except (StatusError, LookupError) as e:
            msg = e.message if isinstance(e, StatusError) else str(e)
            self.recorder.event(hpa, "Warning", "FailedGetScale", msg)
            set_condition(hpa, "AbleToScale", "False", "FailedGetScale",
                          f"the HPA controller was unable to get the target's current scale: {msg}")
            await self._update_status_if_needed(original_status, hpa)
            raise RuntimeError(f"failed to query scale subresource for {reference}: {msg}") from e
        set_condition(hpa, "AbleToScale", "True", "SucceededGetScale",
                      "the HPA controller was able to get the target's current scale")

        now = time.time()
        current = int((scale.get("spec") or {}).get("replicas") or 0)
        history.record_initial(current, now)
        min_replicas = 1 if spec.get("minReplicas") is None else int(spec["minReplicas"])
        max_replicas = int(spec.get("maxReplicas") or 0)
        statuses: list[dict[str, Any]] = []
        rescale_reason = ""
        rescale = True
        desired = 0
        error: Exception | None = None
        if current == 0 and min_replicas != 0:
            # the target was scaled to zero by someone else: autoscaling is off until it is scaled up
            desired, rescale = 0, False
            set_condition(hpa, "ScalingActive", "False", "ScalingDisabled",
                          "scaling is disabled since the replica count of the target is zero")
        elif current > max_replicas:
            rescale_reason, desired = "Current number of replicas above Spec.MaxReplicas", max_replicas
        elif current < min_replicas:
            rescale_reason, desired = "Current number of replicas below Spec.MinReplicas", min_replicas
        else:
            proposal, metric_name, statuses, error = await self._compute_replicas_for_metrics(
                key, hpa, scale, spec.get("metrics") or [])
            if proposal == -1:
                self._set_status(hpa, current, current, statuses, rescale=False, keep_desired=True)
                await self._update_status_if_needed(original_status, hpa)
                self.recorder.event(hpa, "Warning", "FailedComputeMetricsReplicas", str(error))
                raise RuntimeError(f"failed to compute desired number of replicas based on listed metrics "
                                   f"for {reference}: {error}")
            desired = proposal
            if desired > current:
                rescale_reason = f"{metric_name} above target"
            if desired < current:
                rescale_reason = "All metrics below target"
            behavior = spec.get("behavior")
            if behavior is None:
                desired, conds = normalize(history, current, desired, min_replicas, max_replicas,
                                           self.downscale_stabilization, now)
            else:
                desired, conds = normalize_with_behaviors(history, behavior, current, desired, min_replicas,
                                                          max_replicas, self.downscale_stabilization, now)
            for c in conds:
                set_condition(hpa, *c)
            rescale = desired != current

        if rescale:
            new_scale = {**scale, "spec": {**(scale.get("spec") or {}), "replicas": desired}}
            try:
                await self.client.request("PUT", path, new_scale)
            except StatusError as e:
                self.recorder.event(hpa, "Warning", "FailedRescale",
                                    f"New size: {desired}; reason: {rescale_reason}; error: {e.message}")
                set_condition(hpa, "AbleToScale", "False", "FailedUpdateScale",
                              f"the HPA controller was unable to update the target scale: {e.message}")
                self._set_status(hpa, current, current, statuses, rescale=False, keep_desired=True)
                await self._update_status_if_needed(original_status, hpa)
                raise RuntimeError(f"failed to rescale {reference}: {e.message}") from e
            set_condition(hpa, "AbleToScale", "True", "SucceededRescale",
                          f"the HPA controller was able to update the target scale to {desired}")
            self.recorder.event(hpa, "Normal", "SuccessfulRescale", f"New size: {desired}; reason: {rescale_reason}")
            history.store_scale_event(spec.get("behavior"), current, desired, time.time())
            log.info("Successful rescale of %s, old size: %d, new size: %d, reason: %s",
                     hpa["metadata"]["name"], current, desired, rescale_reason)
        else:
            desired = current
        self._set_status(hpa, current, desired, statuses, rescale)
        await self._update_status_if_needed(original_status, hpa)
        if error is not None:
            raise RuntimeError(str(error))

    def _set_status(self, hpa: dict[str, Any], current: int, desired: int, statuses: list[dict[str, Any]],
                    rescale: bool, keep_desired: bool = False) -> None:
        old = hpa.get("status") or {}
        status: dict[str, Any] = {"currentReplicas": current,
                                  "desiredReplicas": old.get("desiredReplicas", 0) if keep_desired else desired}
        if old.get("lastScaleTime"):
            status["lastScaleTime"] = old["lastScaleTime"]
        if rescale:
            status["lastScaleTime"] = format_time(time.time())
        if statuses:
            status["currentMetrics"] = statuses
        if old.get("conditions"):
            status["conditions"] = old["conditions"]
        hpa["status"] = status

    async def _update_status_if_needed(self, original: dict[str, Any], hpa: dict[str, Any]) -> None:
        if original == hpa.get("status"):
            return
        try:
            await self.client.update_status(HPA, hpa)
        except StatusError as e:
            self.recorder.event(hpa, "Warning", "FailedUpdateStatus", e.message)
            raise RuntimeError(f"failed to update status for {hpa['metadata']['name']}: {e.message}") from e

    # ---- the target's scale -------------------------------------------------------------
    async def _resource_for(self, api_version: str, kind: str) -> str | None:
        """The plural that serves kind in api_version (discovery, cached; a miss is asked again)."""
        cached = self._resources.get((api_version, kind))
        if cached is not None:
            return cached
        if not _GROUP_VERSION.fullmatch(api_version):  # nothing else may name a path on the server
            return None
        path = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
        try:
            body = await self.client.request("GET", path)
        except StatusError:
            return None
        for r in (body or {}).get("resources") or []:
            if r.get("kind") == kind and "/" not in r.get("name", ""):
                self._resources[(api_version, kind)] = r["name"]
                return str(r["name"])
        return None

    async def _get_scale(self, ns: str, ref: dict[str, Any]) -> tuple[dict[str, Any], str]:
        api_version, kind, name = ref.get("apiVersion") or "", ref.get("kind") or "", ref.get("name") or ""
        group = api_version.split("/")[0] if "/" in api_version else ""
        if api_version.count("/") > 1:
            raise LookupError(f"unexpected GroupVersion string: {api_version}")
        # only a well-formed group/version is looked up: nothing else can name a path on the server
        resource = await self._resource_for(api_version, kind)
        if resource is None:
            raise LookupError(f'no matches for kind "{kind}" in group "{group}"')
        base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
        path = f"{base}/namespaces/{quote(ns)}/{resource}/{quote(name, safe='')}/scale"
        return await self.client.request("GET", path), path

    # ---- metrics ------------------------------------------------------------------------
    def _validate_selector(self, key: str, hpa: dict[str, Any], selector: str) -> Any:
        if not selector:
            self.recorder.event(hpa, "Warning", "SelectorRequired", "selector is required")
            set_condition(hpa, "ScalingActive", "False", "InvalidSelector",
                          "the HPA target's scale is missing a selector")
            raise ComputeError("selector is required")
        try:
            parsed = parse_selector(selector)
        except SelectorParseError as e:
            msg = f"couldn't convert selector into a corresponding internal selector object: {e}"
            self.recorder.event(hpa, "Warning", "InvalidSelector", msg)
            set_condition(hpa, "ScalingActive", "False", "InvalidSelector", msg)
            raise ComputeError(msg) from e
        self.selectors[key] = parsed
        ns = hpa["metadata"].get("namespace", "")
        pods = [p for p in self.pods.list(ns) if parsed.matches(p["metadata"].get("labels") or {})]
        # two HPAs scaling the same pods would fight: upstream refuses both
        owners = sorted(k for k, sel in self.selectors.items() if k.split("/", 1)[0] == ns and self.hpas.get(k)
                        and any(sel.matches(p["metadata"].get("labels") or {}) for p in pods))
        if len(owners) > 1:
            msg = f"pods by selector {selector} are controlled by multiple HPAs: [{' '.join(owners)}]"
            self.recorder.event(hpa, "Warning", "AmbiguousSelector", msg)
            set_condition(hpa, "ScalingActive", "False", "AmbiguousSelector", msg)
            raise ComputeError(msg)
        return parsed

    async def _compute_replicas_for_metrics(self, key: str, hpa: dict[str, Any], scale: dict[str, Any],
                                            specs: list[dict[str, Any]]
                                            ) -> tuple[int, str, list[dict[str, Any]], Exception | None]:
        """(replicas or -1, the metric that decided, metric statuses, the first error)."""
        selector_text = (scale.get("status") or {}).get("selector") or ""
        try:
            selector = self._validate_selector(key, hpa, selector_text)
        except ComputeError as e:
            return -1, "", [], e
        spec_replicas = int((scale.get("spec") or {}).get("replicas") or 0)
        status_replicas = int((scale.get("status") or {}).get("replicas") or 0)
        ns = hpa["metadata"].get("namespace", "")
        pods = [p for p in self.pods.list(ns) if selector.matches(p["metadata"].get("labels") or {})]
        statuses: list[dict[str, Any]] = []
        replicas, metric = 0, ""
        invalid = 0
        first: ComputeError | None = None
        for spec in specs:
            status: dict[str, Any] = {"type": ""}
            statuses.append(status)
            try:
                proposal, name = await self._compute_for_metric(hpa, spec, spec_replicas, status_replicas,
                                                                 selector_text, pods, status)
            except ComputeError as e:
                if first is None:
                    first = e
                invalid += 1
                continue
            if replicas == 0 or proposal > replicas:
                replicas, metric = proposal, name
        error: Exception | None = None
        if first is not None:
            error = RuntimeError(f"invalid metrics ({invalid} invalid out of {len(specs)}), first error is: {first}")
        # every metric failed, or some failed and the rest would scale down: do nothing
        if invalid >= len(specs) or (invalid > 0 and replicas < spec_replicas):
            if first is not None and first.condition is not None:
                set_condition(hpa, *first.condition)
            # no metrics at all cannot pass defaulting; say so rather than fail on it
            return -1, "", statuses, error or RuntimeError("no metrics to compute a replica count from")
        set_condition(hpa, "ScalingActive", "True", "ValidMetricFound",
                      f"the HPA was able to successfully calculate a replica count from {metric}")
        return replicas, metric, statuses, error

    def _unable(self, hpa: dict[str, Any], reason: str, message: str) -> Condition:
        self.recorder.event(hpa, "Warning", reason, message)
        return ("ScalingActive", "False", reason, f"the HPA was unable to compute the replica count: {message}")

    async def _compute_for_metric(self, hpa: dict[str, Any], spec: dict[str, Any], spec_replicas: int,
                                  status_replicas: int, selector: str, pods: list[dict[str, Any]],
                                  status: dict[str, Any]) -> tuple[int, str]:
        mtype = spec.get("type")
        ns = hpa["metadata"].get("namespace", "")
        if mtype == "Resource":
            src = spec.get("resource") or {}
            return await self._resource(hpa, "Resource", "resource", "FailedGetResourceMetric", src, "",
                                        spec_replicas, selector, pods, status,
                                        f"failed to get {src.get('name', '')} resource metric value")
        if mtype == "ContainerResource":
            src = spec.get("containerResource") or {}
            return await self._resource(hpa, "ContainerResource", "containerResource",
                                        "FailedGetContainerResourceMetric", src, src.get("container") or "",
                                        spec_replicas, selector, pods, status,
                                        f"failed to get {src.get('container', '')} container metric value")
        if mtype == "Pods":
            src = spec.get("pods") or {}
            m = src.get("metric") or {}
            try:
                self._metric_selector(m.get("selector"))
                try:
                    info, _ = await self.metrics.raw_metric(m.get("name", ""), ns, selector, m.get("selector"))
                except MetricsError as e:
                    raise ReplicaCalcError(f"unable to get metric {m.get('name', '')}: {e}") from e
                target = parse_quantity((src.get("target") or {}).get("averageValue") or 0).to_milli()
                replicas, usage = self.calc.plain_metric_replicas(spec_replicas, target, "", pods, info, time.time())
            except (ReplicaCalcError, ValueError) as e:
                raise ComputeError(f"failed to get pods metric value: {e}",
                                   self._unable(hpa, "FailedGetPodsMetric", str(e))) from e
            status.clear()
            status.update(type="Pods", pods={"metric": m, "current": {"averageValue": _milli_quantity(usage)}})
            return replicas, f"pods metric {m.get('name', '')}"
        if mtype == "Object":
            return await self._object(hpa, spec.get("object") or {}, spec_replicas, status_replicas, pods, status)
        if mtype == "External":
            return await self._external(hpa, spec.get("external") or {}, spec_replicas, status_replicas, pods, status)
        err = f'unknown metric source type "{mtype}"'
        raise ComputeError(err, self._unable(hpa, "InvalidMetricSourceType", err))

    @staticmethod
    def _metric_selector(sel: dict[str, Any] | None) -> str:
        try:
            return "" if sel is None else str(selector_from_label_selector(sel))
        except SelectorParseError as e:
            raise ValueError(str(e)) from e

    async def _resource(self, hpa: dict[str, Any], mtype: str, field: str, reason: str, src: dict[str, Any],
                        container: str, current: int, selector: str, pods: list[dict[str, Any]],
                        status: dict[str, Any], wrap: str) -> tuple[int, str]:
        resource = src.get("name") or ""
        target = src.get("target") or {}
        ns = hpa["metadata"].get("namespace", "")
        try:
            if target.get("averageValue") is not None:
                try:
                    info, _ = await self._resource_metric(resource, ns, selector, container)
                    replicas, raw = self.calc.plain_metric_replicas(
                        current, parse_quantity(target["averageValue"]).to_milli(), resource, pods, info, time.time())
                except ReplicaCalcError as e:
                    raise ReplicaCalcError(f"failed to get {resource} usage: {e}") from e
                current_value: dict[str, Any] = {"averageValue": _milli_quantity(raw)}
                name = f"{resource} resource"
            elif target.get("averageUtilization") is not None:
                try:
                    info, _ = await self._resource_metric(resource, ns, selector, container)
                    replicas, util, raw = self.calc.resource_replicas(
                        current, int(target["averageUtilization"]), resource, pods, info, container, time.time())
                except ReplicaCalcError as e:
                    raise ReplicaCalcError(f"failed to get {resource} utilization: {e}") from e
                current_value = {"averageUtilization": util, "averageValue": _milli_quantity(raw)}
                kind = "container resource" if mtype == "ContainerResource" else "resource"
                name = f"{resource} {kind} utilization (percentage of request)"
            else:
                raise ReplicaCalcError("invalid resource metric source: neither an average utilization target "
                                       "nor an average value (usage) target was set")
        except ReplicaCalcError as e:
            raise ComputeError(f"{wrap}: {e}", self._unable(hpa, reason, str(e))) from e
        status.clear()
        body: dict[str, Any] = {"name": resource, "current": current_value}
        if mtype == "ContainerResource":
            body = {"name": resource, "container": container, "current": current_value}
        status.update({"type": mtype, field: body})
        return replicas, name

    async def _resource_metric(self, resource: str, ns: str, selector: str, container: str) -> Any:
        try:
            return await self.metrics.resource_metric(resource, ns, selector, container)
        except MetricsError as e:
            raise ReplicaCalcError(f"unable to get metrics for resource {resource}: {e}") from e

    async def _object(self, hpa: dict[str, Any], src: dict[str, Any], spec_replicas: int, status_replicas: int,
                      pods: list[dict[str, Any]], status: dict[str, Any]) -> tuple[int, str]:
        ns = hpa["metadata"].get("namespace", "")
        m = src.get("metric") or {}
        obj = src.get("describedObject") or {}
        target = src.get("target") or {}
        metric_name = m.get("name", "")
        try:
            self._metric_selector(m.get("selector"))
        except ValueError as e:
            raise ComputeError(f"failed to get object metric value: {e}",
                               self._unable(hpa, "FailedGetObjectMetric", str(e))) from e
        kind = obj.get("kind", "")
        try:
            if target.get("type") == "Value" and target.get("value") is not None:
                usage = await self._object_usage(metric_name, ns, obj, m.get("selector"))
                replicas = self.calc.object_metric_replicas(spec_replicas, parse_quantity(target["value"]).to_milli(),
                                                            usage, pods)
                current = {"value": _milli_quantity(usage)}
                name = f"{kind} metric {metric_name}"
            elif target.get("type") == "AverageValue" and target.get("averageValue") is not None:
                usage = await self._object_usage(metric_name, ns, obj, m.get("selector"))
                replicas, usage = self.calc.per_pod_replicas(status_replicas,
                                                             parse_quantity(target["averageValue"]).to_milli(), usage)
                current = {"averageValue": _milli_quantity(usage)}
                name = f"external metric {metric_name}({_go_selector(m.get('selector'))})"
            else:
                raise ReplicaCalcError("invalid object metric source: neither a value target nor an average value "
                                       "target was set")
        except ReplicaCalcError as e:
            raise ComputeError(f"failed to get object metric value: {e}",
                               self._unable(hpa, "FailedGetObjectMetric", str(e))) from e
        status.clear()
        status.update(type="Object", object={"describedObject": obj, "metric": m, "current": current})
        return replicas, name

    async def _object_usage(self, metric: str, ns: str, obj: dict[str, Any], selector: dict[str, Any] | None) -> int:
        kind, name = obj.get("kind", ""), obj.get("name", "")
        api_version = obj.get("apiVersion") or "v1"
        resource = await self._resource_for(api_version, kind)
        group = api_version.split("/")[0] if "/" in api_version else ""
        try:
            if resource is None:
                raise MetricsError(f'no matches for kind "{kind}" in group "{group}"')
            qualified = f"{resource}.{group}" if group else resource
            usage, _ = await self.metrics.object_metric(metric, ns, qualified, name, selector)
        except MetricsError as e:
            raise ReplicaCalcError(f"unable to get metric {metric}: {kind} on {ns} {name}/{e}") from e
        return usage

    async def _external(self, hpa: dict[str, Any], src: dict[str, Any], spec_replicas: int, status_replicas: int,
                        pods: list[dict[str, Any]], status: dict[str, Any]) -> tuple[int, str]:
        ns = hpa["metadata"].get("namespace", "")
        m = src.get("metric") or {}
        target = src.get("target") or {}
        metric_name = m.get("name", "")
        sel = m.get("selector")
        try:
            self._metric_selector(sel)
            if target.get("averageValue") is not None:
                total = await self._external_total(metric_name, ns, sel)
                replicas, usage = self.calc.per_pod_replicas(status_replicas,
                                                             parse_quantity(target["averageValue"]).to_milli(), total)
                current = {"averageValue": _milli_quantity(usage)}
            elif target.get("value") is not None:
                usage = await self._external_total(metric_name, ns, sel)
                replicas = self.calc.object_metric_replicas(spec_replicas, parse_quantity(target["value"]).to_milli(),
                                                            usage, pods)
                current = {"value": _milli_quantity(usage)}
            else:
                raise ReplicaCalcError("invalid external metric source: neither a value target nor an average "
                                       "value target was set")
        except (ReplicaCalcError, ValueError) as e:
            raise ComputeError(f"failed to get {metric_name} external metric: {e}",
                               self._unable(hpa, "FailedGetExternalMetric", str(e))) from e
        status.clear()
        status.update(type="External", external={"metric": m, "current": current})
        return replicas, f"external metric {metric_name}({_go_selector(sel)})"

    async def _external_total(self, metric: str, ns: str, selector: dict[str, Any] | None) -> int:
        try:
            values, _ = await self.metrics.external_metric(metric, ns, selector)
        except MetricsError as e:
            raise ReplicaCalcError(f"unable to get external metric {ns}/{metric}/{_go_selector(selector)}: {e}") from e
        return sum(values)
