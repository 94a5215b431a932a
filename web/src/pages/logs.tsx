// A pod's logs: container picker, follow (streams as the container writes), previous instance.
import { useEffect, useRef, useState } from "preact/hooks";
import { CSRF_HEADERS, errorFrom, RES, resourcePath, withQuery } from "../api";
import { Loading } from "../components/misc";
import { containerNames } from "../k8s/pods";
import { href } from "../router";
import type { PageProps } from "../routes";
import { useList } from "../store";

// what the page keeps (a chatty container must not eat the browser's memory)
const MAX_CHARS = 2_000_000;

export function LogsPage({ params }: PageProps) {
  const { namespace, name } = params;
  const pods = useList(resourcePath({ ...RES.pods, namespace }) + `?fieldSelector=metadata.name%3D${encodeURIComponent(name)}`);
  const pod = pods.items[0];
  const names = pod ? containerNames(pod) : [];
  const [container, setContainer] = useState("");
  const [follow, setFollow] = useState(true);
  const [previous, setPrevious] = useState(false);
  const [text, setText] = useState("");
  const [state, setState] = useState("");
  const pre = useRef<HTMLPreElement>(null);
  const chosen = container || pod?.spec?.containers?.[0]?.name || "";

  useEffect(() => {
    if (!chosen) return;
    const abort = new AbortController();
    let buf = "";
    setText("");
    setState(follow && !previous ? "streaming" : "loading");
    const path = withQuery(resourcePath({ ...RES.pods, namespace, name, subresource: "log" }), {
      container: chosen, follow: follow && !previous ? "true" : undefined, previous: previous ? "true" : undefined,
      tailLines: "5000",
    });
    (async () => {
      try {
        const res = await fetch(path, { headers: CSRF_HEADERS, signal: abort.signal });
        if (!res.ok || !res.body) throw await errorFrom(res);
        const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += value;
          if (buf.length > MAX_CHARS) buf = buf.slice(buf.length - MAX_CHARS);
          setText(buf);
        }
        setState("ended");
      } catch (e) {
        if (!abort.signal.aborted) {
          setState("error");
          setText(buf + (buf ? "\n" : "") + (e instanceof Error ? e.message : String(e)));
        }
      }
    })();
    return () => abort.abort();
  }, [chosen, follow, previous, namespace, name]);

  useEffect(() => {
    // keep following the end unless the reader scrolled up
    const el = pre.current;
    if (el && el.scrollHeight - el.scrollTop - el.clientHeight < 80) el.scrollTop = el.scrollHeight;
  }, [text]);

  return (
    <div>
      <h1>Logs of <a href={href("/pods/:namespace/:name", { namespace, name })}>{namespace}/{name}</a></h1>
      <Loading loaded={pods.loaded} error={pods.error} />
      <div class="toolbar">
        <label for="log-container">Container</label>
        <select id="log-container" value={chosen} onChange={(e) => setContainer((e.target as HTMLSelectElement).value)}>
          {names.map((n) => <option key={n} value={n}>{n}</option>)}
        </select>
        <label><input type="checkbox" id="log-follow" checked={follow}
          onChange={(e) => setFollow((e.target as HTMLInputElement).checked)} /> Follow</label>
        <label><input type="checkbox" id="log-previous" checked={previous}
          onChange={(e) => setPrevious((e.target as HTMLInputElement).checked)} /> Previous instance</label>
        <span class="muted" id="log-state" aria-live="polite">{state}</span>
      </div>
      <pre class="logs" id="log-text" ref={pre} tabIndex={0} aria-label={`Logs of container ${chosen}`}>{text}</pre>
    </div>
  );
}
