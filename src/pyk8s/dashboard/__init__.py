"""`pyk8s dashboard`: a web UI that talks to the API with the user's own credentials (docs/dashboard.md).

server.py assembles the aiohttp application; guard.py holds the defences of a browser-reachable
local port (Host, CSRF, headers); session.py the server-side sessions; upstream.py the connection
to the API; proxy.py the /api and /apis passthrough (streams and exec WebSockets); assets.py the
built front-end shipped in static/.
"""
