// A pod's logs: container picker, follow (streams as the container writes), previous instance.
import { useEffect, useRef, useState } from "preact/hooks";
import { ApiError, CSRF_HEADERS, errorFrom, RES, resourcePath, withQuery } from "../api";
import { Loading } from "../components/misc";
import { containerNames } from "../k8s/pods";
import { href } from "../router";
import type { PageProps } from "../routes";
import { useList } from "../store";

// what the page keeps (a chatty container must not eat the browser's memory)
const MAX_CHARS = 2_000_000;

// RFC 3339 timestamps with 9 fraction digits, so that they compare as strings
function normalize(ts: string): string {
  const m = /^(.*?)(?:\.(\d+))?Z$/.exec(ts);
  return m ? `${m[1]}.${(m[2] || "").padEnd(9, "0")}Z` : ts;
}

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
    const streaming = follow && !previous;
    let buf = "";
    // where a followed stream resumes after a dropped connection (ERR_NETWORK_CHANGED on a machine
    // running pods): the last line's timestamp, and how many lines carried it
    let lastTs = "";
    let atLast = 0;
    setText("");
    setState(streaming ? "streaming" : "loading");
    const base = resourcePath({ ...RES.pods, namespace, name, subresource: "log" });
    const show = (line: string) => {
      buf += line;
      if (buf.length > MAX_CHARS) buf = buf.slice(buf.length - MAX_CHARS);
    };
    const once = async (resume: boolean) => {
      const path = withQuery(base, {
        container: chosen, follow: streaming ? "true" : undefined, previous: previous ? "true" : undefined,
        timestamps: "true", ...(resume ? { sinceTime: lastTs.replace(/\.\d+Z$/, "Z") } : { tailLines: "5000" }),
      });
      const res = await fetch(path, { headers: CSRF_HEADERS, signal: abort.signal });
      if (!res.ok || !res.body) throw await errorFrom(res);
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let skip = resume ? atLast : 0;
      let partial = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        partial += value;
        let nl: number;
        while ((nl = partial.indexOf("\n")) >= 0) {
          const line = partial.slice(0, nl + 1);
          partial = partial.slice(nl + 1);
          const sp = line.indexOf(" ");
          const ts = normalize(line.slice(0, sp));
          if (resume && ts < lastTs) continue; // sinceTime has whole seconds: lines already shown
          if (resume && ts === lastTs && skip > 0) {
            skip--;
            continue;
          }
          atLast = ts === lastTs ? atLast + 1 : 1;
          lastTs = ts;
          show(line.slice(sp + 1));
        }
        setText(buf);
      }
    };
    (async () => {
      for (let attempt = 0; ; attempt++) {
        try {
          await once(attempt > 0 && lastTs !== "");
          setState("ended");
          return;
        } catch (e) {
          if (abort.signal.aborted) return;
          // a dropped stream (not the API's refusal) is picked up again where it stopped
          if (streaming && !(e instanceof ApiError) && attempt < 20) {
            setState("reconnecting");
            await new Promise((r) => setTimeout(r, 500));
            setState("streaming");
            continue;
          }
          setState("error");
          setText(buf + (buf ? "\n" : "") + (e instanceof Error ? e.message : String(e)));
          return;
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
