"""Byte pipes under the streaming protocols, shared by the kubelet's streaming server and the
API server's proxies: a hijacked aiohttp connection after `101 Switching Protocols`, and a
pipe over asyncio streams. Nothing here knows SPDY or the channel protocols."""
