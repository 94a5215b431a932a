// Every page of the dashboard: one line each (docs/dashboard.md, "Adding a page").
// nav: shown in the navigation, in this order; the first is the start page.
import type { FunctionComponent } from "preact";
import { Overview } from "./pages/overview";

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
];
