// An interactive shell in a pod's container: xterm.js over the API's exec WebSocket
// (v5.channel.k8s.io: channel 0 stdin, 1 stdout, 2 stderr, 3 the exit Status, 4 resize).
import { FitAddon } from "@xterm/addon-fit";
import { Terminal } from "@xterm/xterm";
import { useEffect, useRef, useState } from "preact/hooks";
import { RES, resourcePath, withQuery } from "../api";
import { Loading } from "../components/misc";
import { useCan } from "../rbac";
import { href } from "../router";
import type { PageProps } from "../routes";
import { useList } from "../store";

const STDIN = 0, STDOUT = 1, STDERR = 2, ERROR = 3, RESIZE = 4;

export function TerminalPage({ params }: PageProps) {
  const { namespace, name } = params;
  const pods = useList(resourcePath({ ...RES.pods, namespace }) + `?fieldSelector=metadata.name%3D${encodeURIComponent(name)}`);
  const pod = pods.items[0];
  const names: string[] = (pod?.spec?.containers || []).map((c: any) => c.name);
  const [container, setContainer] = useState("");
  const [command, setCommand] = useState("sh");
  const [session, setSession] = useState(0); // bumped by Connect
  const [state, setState] = useState("");
  const box = useRef<HTMLDivElement>(null);
  const chosen = container || names[0] || "";
  // exec is `create` on pods/exec: without it the API refuses the upgrade, so say so up front
  const mayExec = useCan({ verb: "create", group: "", resource: "pods", subresource: "exec", namespace, name });

  useEffect(() => {
    if (!session || !chosen || !box.current) return;
    const term = new Terminal({ cursorBlink: true, fontSize: 14, convertEol: false,
      screenReaderMode: false, theme: { background: "#000000" } });
    const fit = new FitAddon();
    term.loadAddon(fit);
    term.open(box.current);
    fit.fit();
    const argv = command.trim().split(/\s+/).filter(Boolean);
    const q = new URLSearchParams({ container: chosen, stdin: "true", stdout: "true", stderr: "true", tty: "true" });
    for (const a of argv) q.append("command", a);
    const path = resourcePath({ ...RES.pods, namespace, name, subresource: "exec" });
    const ws = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}${withQuery(path)}?${q}`,
      ["v5.channel.k8s.io", "v4.channel.k8s.io"]);
    ws.binaryType = "arraybuffer";
    const enc = new TextEncoder();
    const send = (channel: number, data: Uint8Array) => {
      if (ws.readyState !== WebSocket.OPEN) return;
      const frame = new Uint8Array(data.length + 1);
      frame[0] = channel;
      frame.set(data, 1);
      ws.send(frame);
    };
    const resize = () => send(RESIZE, enc.encode(JSON.stringify({ Width: term.cols, Height: term.rows })));
    setState("connecting");
    ws.onopen = () => {
      setState(`connected (${ws.protocol})`);
      resize();
      term.focus();
    };
    ws.onmessage = (ev) => {
      const data = new Uint8Array(ev.data as ArrayBuffer);
      if (!data.length) return;
      const body = data.subarray(1);
      if (data[0] === STDOUT || data[0] === STDERR) term.write(body);
      else if (data[0] === ERROR) {
        const status = JSON.parse(new TextDecoder().decode(body) || "{}");
        if (status.status && status.status !== "Success") term.write(`\r\n\x1b[31m${status.message}\x1b[0m\r\n`);
      }
    };
    ws.onclose = (ev) => {
      setState(ev.code === 1000 || ev.wasClean ? "session ended" : `closed (${ev.code}${ev.reason ? `: ${ev.reason}` : ""})`);
    };
    ws.onerror = () => setState("the exec stream could not be opened");
    const input = term.onData((d) => send(STDIN, enc.encode(d)));
    const onResize = term.onResize(resize);
    const onWindow = () => fit.fit();
    addEventListener("resize", onWindow);
    return () => {
      removeEventListener("resize", onWindow);
      input.dispose();
      onResize.dispose();
      ws.close();
      term.dispose();
    };
  }, [session]);

  return (
    <div>
      <h1>Terminal in <a href={href("/pods/:namespace/:name", { namespace, name })}>{namespace}/{name}</a></h1>
      <Loading loaded={pods.loaded} error={pods.error} />
      <form class="toolbar" onSubmit={(e) => {
        e.preventDefault();
        setSession(session + 1);
      }}>
        <label for="exec-container">Container</label>
        <select id="exec-container" value={chosen} onChange={(e) => setContainer((e.target as HTMLSelectElement).value)}>
          {names.map((n) => <option key={n} value={n}>{n}</option>)}
        </select>
        <label for="exec-command">Command</label>
        <input id="exec-command" value={command} onInput={(e) => setCommand((e.target as HTMLInputElement).value)} />
        {mayExec && <button type="submit" class="primary" disabled={!chosen}>{session ? "Reconnect" : "Connect"}</button>}
        <span class="muted" id="exec-state" aria-live="polite">{state}</span>
      </form>
      {!mayExec && <p class="muted" id="exec-denied">RBAC does not let you exec into this pod (create pods/exec).</p>}
      <div class="terminal" ref={box} aria-label="Terminal" />
    </div>
  );
}
