'use strict';
// Node's fetch through the egress broker (issue 18), preloaded (NODE_OPTIONS
// --require) into every node of a sandbox that may use a profile: the cell
// server and a snippet's `node -` alike. Node 20's fetch ignores HTTP_PROXY,
// so in such a sandbox it would reach nothing (the sandbox has only
// loopback); this fetch sends each request to the init's loopback relay in
// absolute form (`GET https://host/path HTTP/1.1`), and the broker makes the
// TLS connection upstream itself. It holds no credential and decides
// nothing: what is allowed is the broker's to say, and a refusal comes back
// as the broker's own answer. Without HTTP_PROXY it changes nothing.
//
// Requests to NO_PROXY's hosts (the sandbox's own loopback) keep Node's own
// fetch. Redirects are followed here (the broker answers them as it gets
// them, so each hop is judged again by the broker).

const proxy = process.env.HTTP_PROXY || process.env.http_proxy;
if (proxy && typeof globalThis.fetch === 'function') {
  const http = require('node:http');
  const nodeFetch = globalThis.fetch;
  const relay = new URL(proxy);
  const direct = new Set(
    (process.env.NO_PROXY || process.env.no_proxy || '')
      .split(',')
      .map((h) => h.trim().toLowerCase())
      .filter(Boolean),
  );
  const MAX_REDIRECTS = 20;
  const NULL_BODY = new Set([101, 204, 205, 304]);

  const once = (req, init) =>
    new Promise((resolve, reject) => {
      const url = new URL(req.url);
      const headers = {};
      for (const [k, v] of req.headers) headers[k] = v;
      headers.host = url.host;
      const out = http.request({
        host: relay.hostname,
        port: relay.port || 80,
        method: req.method,
        path: url.href,
        headers,
        signal: req.signal,
      });
      out.on('error', (err) => reject(new TypeError('fetch failed', { cause: err })));
      out.on('response', (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('error', (err) => reject(new TypeError('fetch failed', { cause: err })));
        res.on('end', () => {
          const h = new Headers();
          for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) h.append(res.rawHeaders[i], res.rawHeaders[i + 1]);
          const body = NULL_BODY.has(res.statusCode) || req.method === 'HEAD' ? null : Buffer.concat(chunks);
          const r = new Response(body, { status: res.statusCode, statusText: res.statusMessage, headers: h });
          Object.defineProperty(r, 'url', { value: url.href });
          resolve(r);
        });
      });
      if (init.body) out.end(Buffer.from(init.body));
      else out.end();
    });

  const proxied = async function fetch(input, options = {}) {
    let req = new Request(input, options);
    const host = new URL(req.url).hostname.toLowerCase();
    if (direct.has(host) || direct.has(host.replace(/^\[|\]$/g, ''))) return nodeFetch(input, options);
    let body = req.body ? await req.arrayBuffer() : null;
    for (let hop = 0; ; hop++) {
      const res = await once(req, { body });
      const loc = res.headers.get('location');
      if (![301, 302, 303, 307, 308].includes(res.status) || !loc || req.redirect === 'manual') return res;
      if (req.redirect === 'error') throw new TypeError('fetch failed: redirect');
      if (hop >= MAX_REDIRECTS) throw new TypeError('fetch failed: too many redirects');
      const next = new URL(loc, req.url).href;
      const toGet = res.status === 303 || ((res.status === 301 || res.status === 302) && req.method === 'POST');
      const headers = new Headers(req.headers);
      if (toGet) {
        body = null;
        for (const k of ['content-type', 'content-length', 'content-encoding']) headers.delete(k);
      }
      req = new Request(next, { method: toGet ? 'GET' : req.method, headers, signal: req.signal, redirect: req.redirect });
    }
  };
  Object.defineProperty(globalThis, 'fetch', { value: proxied, writable: true, configurable: true, enumerable: true });
}
