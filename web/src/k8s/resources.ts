// The resources of the Services, PVCs and HPAs pages, as discovery would give them. They are
// registered in KIND_RESOURCES here (not in api.ts) so an object's YAML link works for their kinds.
import { KIND_RESOURCES, type ResourceRef } from "../api";

export const NET = {
  services: { group: "", version: "v1", resource: "services" },
  endpointslices: { group: "discovery.k8s.io", version: "v1", resource: "endpointslices" },
  ingresses: { group: "networking.k8s.io", version: "v1", resource: "ingresses" },
} satisfies Record<string, ResourceRef>;

export const STORAGE = {
  pvcs: { group: "", version: "v1", resource: "persistentvolumeclaims" },
  pvs: { group: "", version: "v1", resource: "persistentvolumes" },
  storageclasses: { group: "storage.k8s.io", version: "v1", resource: "storageclasses" },
} satisfies Record<string, ResourceRef>;

export const AUTOSCALING = {
  hpas: { group: "autoscaling", version: "v2", resource: "horizontalpodautoscalers" },
  podmetrics: { group: "metrics.k8s.io", version: "v1beta1", resource: "pods" },
} satisfies Record<string, ResourceRef>;

Object.assign(KIND_RESOURCES, {
  EndpointSlice: NET.endpointslices, Ingress: NET.ingresses, PersistentVolumeClaim: STORAGE.pvcs,
  PersistentVolume: STORAGE.pvs, StorageClass: STORAGE.storageclasses, HorizontalPodAutoscaler: AUTOSCALING.hpas,
});
