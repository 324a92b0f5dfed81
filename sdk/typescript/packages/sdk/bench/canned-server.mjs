// The overhead benchmark's canned gateway: a node:http server (keep-alive)
// in its own process that answers `POST /v1/runs.create` and
// `POST /v1/runs.wait` at once with the bodies a real gateway gave
// (bench/fixtures, from capture.mjs), with the gateway's headers
// (content-type, content-length, x-request-id; node adds date). It checks
// each request as the gateway would in outline (the bearer token, a JSON
// body, an input and an idempotency key for create, the run's id for
// wait) and answers 400 otherwise, so neither client can skip a part.
// `GET /stats` gives the requests seen per method and header-name set,
// and the TCP connections opened (keep-alive: a handful).
//
//   node canned-server.mjs TOKEN   → prints `listening PORT` on stdout
import http from "node:http";
import { readFileSync } from "node:fs";

const token = process.argv[2] ?? "talon_bench";
const fixture = (name) => readFileSync(new URL(`./fixtures/${name}`, import.meta.url), "utf8").trim();
const bodies = {
  "/v1/runs.create": Buffer.from(fixture("runs.create.json")),
  "/v1/runs.wait": Buffer.from(fixture("runs.wait.json")),
};
const runId = JSON.parse(fixture("runs.create.json")).id;
const authorization = `Bearer ${token}`;
const stats = new Map();
let served = 0;

const refuse = (res, message) => {
  const body = Buffer.from(JSON.stringify({ error: { code: "invalid_request", message, retryable: false } }));
  res.writeHead(400, { "content-type": "application/json", "content-length": body.length });
  res.end(body);
};

const server = http.createServer({ keepAliveTimeout: 600_000, noDelay: true }, (req, res) => {
  if (req.method === "GET" && req.url === "/stats") {
    const body = Buffer.from(JSON.stringify(Object.fromEntries(stats)));
    res.writeHead(200, { "content-type": "application/json", "content-length": body.length });
    return void res.end(body);
  }
  const chunks = [];
  req.on("data", (chunk) => chunks.push(chunk));
  req.on("end", () => {
    const answer = bodies[req.url];
    if (req.method !== "POST" || answer === undefined) return refuse(res, `no method ${req.method} ${req.url}`);
    if (req.headers.authorization !== authorization) return refuse(res, "bad token");
    if (req.headers["content-type"] !== "application/json") return refuse(res, "not JSON");
    let params;
    try {
      params = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    } catch {
      return refuse(res, "body is not JSON");
    }
    if (req.url === "/v1/runs.create" && (params.input === undefined || typeof params.idempotencyKey !== "string")) {
      return refuse(res, "runs.create needs input and an idempotency key");
    }
    if (req.url === "/v1/runs.wait" && params.runId !== runId) return refuse(res, "unknown run");
    const key = `${req.url} ${Object.keys(req.headers).sort().join(",")}`;
    stats.set(key, (stats.get(key) ?? 0) + 1);
    served += 1;
    res.writeHead(200, {
      "content-type": "application/json",
      "content-length": answer.length,
      "x-request-id": `req_${served.toString(16).padStart(24, "0")}`,
    });
    res.end(answer);
  });
});
let connections = 0;
server.on("connection", () => stats.set("connections", (connections += 1)));
server.listen(0, "127.0.0.1", () => console.log(`listening ${server.address().port}`));
process.on("SIGTERM", () => process.exit(0));
