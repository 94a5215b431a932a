// The app shell: sign-in, navigation, namespace picker, the signed-in user, the routed page.
import { useEffect, useState } from "preact/hooks";
import { ApiError, call, CSRF_HEADERS, errorFrom, RES, resourcePath } from "./api";
import { ConfirmHost } from "./components/confirm";
import { Toasts, toastError } from "./components/toast";
import { match, usePath } from "./router";
import { routes } from "./routes";
import { namespace, user, useValue } from "./state";
import { useList } from "./store";

type Auth = { state: "loading" } | { state: "in"; mode: string } | { state: "out"; mode: string; message: string };

export function App() {
  const [auth, setAuth] = useState<Auth>({ state: "loading" });
  const check = async () => {
    const res = await fetch("/dashboard/session", { headers: { ...CSRF_HEADERS, Accept: "application/json" } });
    if (res.ok) {
      const s = await res.json();
      user.set(s.user || {});
      setAuth({ state: "in", mode: s.mode });
    } else {
      const e = await errorFrom(res);
      setAuth({ state: "out", mode: res.headers.get("X-Pyk8s-Dashboard-Auth") || "kubeconfig", message: e.message });
    }
  };
  useEffect(() => {
    void check();
  }, []);
  if (auth.state === "loading") return <p class="muted center">Loading…</p>;
  if (auth.state === "out") return <Login mode={auth.mode} message={auth.message} onIn={check} />;
  return <Shell mode={auth.mode} />;
}

function Login({ mode, message, onIn }: { mode: string; message: string; onIn: () => void }) {
  const [token, setToken] = useState("");
  const [error, setError] = useState("");
  const submit = async (e: Event) => {
    e.preventDefault();
    setError("");
    try {
      await call("POST", "/dashboard/login", { body: { token } });
      setToken("");
      onIn();
    } catch (err) {
      setError(err instanceof ApiError ? err.message : String(err));
    }
  };
  return (
    <main class="login">
      <h1>pyk8s dashboard</h1>
      {mode === "token" ? (
        <form onSubmit={submit}>
          <label for="token">Bearer token</label>
          <textarea id="token" name="token" rows={5} value={token} autocomplete="off" spellcheck={false}
            onInput={(e) => setToken((e.target as HTMLTextAreaElement).value)} />
          <p class="muted">
            A ServiceAccount's token (<code>kubectl create token NAME</code>) or any token the API server accepts.
            It stays on the dashboard's server; what you see and may do is what RBAC grants that user.
          </p>
          <button type="submit" class="primary">Sign in</button>
          {error && <p class="error-text" role="alert" id="login-error">{error}</p>}
        </form>
      ) : (
        <p role="alert">{message}</p>
      )}
    </main>
  );
}

function NamespacePicker() {
  const ns = useValue(namespace);
  const { items } = useList(resourcePath(RES.namespaces));
  const names = items.map((o) => o.metadata.name as string).sort();
  if (ns && !names.includes(ns)) names.unshift(ns);
  return (
    <div class="ns-picker">
      <label for="namespace">Namespace</label>
      <select id="namespace" value={ns} onChange={(e) => namespace.set((e.target as HTMLSelectElement).value)}>
        <option value="">All namespaces</option>
        {names.map((n) => <option key={n} value={n}>{n}</option>)}
      </select>
    </div>
  );
}

function Shell({ mode }: { mode: string }) {
  const path = usePath();
  const u = useValue(user);
  let page = null;
  let params: Record<string, string> = {};
  for (const r of routes) {
    const m = match(r.path, path);
    if (m) {
      page = r;
      params = m;
      break;
    }
  }
  if (!page && (path === "/" || path === "")) page = routes[0];
  useEffect(() => {
    document.title = `${page ? page.title : "Not found"} · pyk8s dashboard`;
  }, [page]);
  const signOut = async () => {
    try {
      await call("POST", "/dashboard/logout");
      location.reload();
    } catch (e) {
      toastError(e);
    }
  };
  const Page = page?.component;
  return (
    <div class="shell">
      <a class="skip" href="#main" onClick={(e) => {
        e.preventDefault();
        document.getElementById("main")?.focus();
      }}>Skip to content</a>
      <header class="topbar">
        <span class="brand">pyk8s</span>
        <NamespacePicker />
        <span class="user" id="current-user" title={(u?.groups || []).join(", ")}>
          {u?.username || "unknown user"}
        </span>
        {mode === "token" && <button type="button" onClick={signOut}>Sign out</button>}
      </header>
      <nav aria-label="Pages">
        <ul>
          {routes.filter((r) => r.nav).map((r) => (
            <li key={r.path}>
              <a href={"#" + r.path} aria-current={page === r ? "page" : undefined}>{r.title}</a>
            </li>
          ))}
        </ul>
      </nav>
      <main id="main" tabIndex={-1}>
        {Page ? <Page key={path} params={params} /> : <p>No page at {path}.</p>}
      </main>
      <ConfirmHost />
      <Toasts />
    </div>
  );
}
