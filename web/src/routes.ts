// Every page of the dashboard: one line each (docs/dashboard.md, "Adding a page").
// nav: shown in the navigation, in this order; the first is the start page.
import type { FunctionComponent } from "preact";
import { DeploymentPage } from "./pages/deployment";
import { Hpas } from "./pages/hpas";
import { GpuSharing } from "./pages/gpus";
import { LogsPage } from "./pages/logs";
import { Overview } from "./pages/overview";
import { PodPage } from "./pages/pod";
import { Pods } from "./pages/pods";
import { Pvcs } from "./pages/pvcs";
import { Services } from "./pages/services";
import { Scale } from "./pages/scale";
import { TerminalPage } from "./pages/terminal";
import { CronJobPage, DaemonSetPage, StatefulSetPage } from "./pages/workload";
import { Workloads } from "./pages/workloads";
import { YamlPage } from "./pages/yaml";

export interface PageProps {
  params: Record<string, string>;
}

export interface Route {
  path: string; // "/pods/:namespace/:name"
  title: string;
  nav?: boolean;
  component: FunctionComponent<PageProps>;
}

export const routes: Route[] = [
  { path: "/overview", title: "Overview", nav: true, component: Overview },
  { path: "/workloads", title: "Workloads", nav: true, component: Workloads },
  { path: "/deployments/:namespace/:name", title: "Deployment", component: DeploymentPage },
  { path: "/statefulsets/:namespace/:name", title: "StatefulSet", component: StatefulSetPage },
  { path: "/daemonsets/:namespace/:name", title: "DaemonSet", component: DaemonSetPage },
  { path: "/cronjobs/:namespace/:name", title: "CronJob", component: CronJobPage },
  { path: "/pods", title: "Pods", nav: true, component: Pods },
  { path: "/pods/:namespace/:name", title: "Pod", component: PodPage },
  { path: "/services", title: "Services", nav: true, component: Services },
  { path: "/pvcs", title: "Volume claims", nav: true, component: Pvcs },
  { path: "/hpas", title: "Autoscalers", nav: true, component: Hpas },
  { path: "/logs/:namespace/:name", title: "Logs", component: LogsPage },
  { path: "/exec/:namespace/:name", title: "Terminal", component: TerminalPage },
  { path: "/gpus", title: "GPU sharing", nav: true, component: GpuSharing },
  { path: "/scale", title: "Scale", nav: true, component: Scale },
  { path: "/yaml/:group/:version/:resource/:namespace/:name", title: "YAML", component: YamlPage },
];
