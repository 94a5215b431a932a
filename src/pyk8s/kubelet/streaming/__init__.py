"""The kubelet's streaming protocols: container logs, exec, attach and port-forward.

`channels` (WebSocket channel subprotocols), `spdy` (SPDY/3.1 framing and sessions),
`hijack` (taking over an aiohttp connection after 101), `remotecommand` (exec/attach),
`portforward`, `logs` (CRI log reading). `pyk8s.kubelet.server.KubeletServer` serves them.
"""
