// The web tier of the three-tier example: Node's standard library only. It serves the page and
// passes every /api request on to the API at API_URL (the web->api connection's export), so
// the browser talks to one origin, the one the router gives this container.
"use strict";

const http = require("node:http");
const fs = require("node:fs");
const path = require("node:path");

const port = Number(process.env.PORT || 3000);
const api = process.env.API_URL ? new URL(process.env.API_URL) : null;
const page = fs.readFileSync(path.join(__dirname, "index.html"));

const server = http.createServer((req, res) => {
  if (req.url === "/api" || req.url.startsWith("/api/")) {
    if (!api) {
      res.writeHead(502, { "Content-Type": "text/plain" });
      res.end("API_URL is not set: connect web to api\n");
      return;
    }
    const upstream = http.request(
      {
        hostname: api.hostname,
        port: api.port || 80,
        method: req.method,
        path: req.url,
        headers: { ...req.headers, host: api.host },
      },
      (up) => {
        res.writeHead(up.statusCode, up.headers);
        up.pipe(res);
      },
    );
    upstream.on("error", (err) => {
      res.writeHead(502, { "Content-Type": "text/plain" });
      res.end(`the API at ${api.origin} does not answer: ${err.message}\n`);
    });
    req.pipe(upstream);
    return;
  }
  if (req.method === "GET" && (req.url === "/" || req.url === "/index.html")) {
    res.writeHead(200, { "Content-Type": "text/html; charset=utf-8" });
    res.end(page);
    return;
  }
  res.writeHead(404, { "Content-Type": "text/plain" });
  res.end("not found\n");
});

server.listen(port, "0.0.0.0", () => {
  console.log(`notes web on :${port}, API at ${api ? api.origin : "(none)"}`);
});
process.on("SIGTERM", () => server.close(() => process.exit(0)));
