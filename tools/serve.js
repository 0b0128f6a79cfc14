// A small static server for the page (no dependencies): serves web/ on 127.0.0.1:$PORT
// (default 8080); "/" redirects to the page. Sends a strict Content-Security-Policy.
import { createServer } from 'node:http';
import { readFileSync, statSync } from 'node:fs';
import { extname, join, normalize, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(fileURLToPath(new URL('../web/', import.meta.url)));
const port = Number(process.env.PORT || 8080);
const host = process.env.HOST || '127.0.0.1';
const types = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.wasm': 'application/wasm',
};
// No 'unsafe-eval' and no 'unsafe-inline': the WASM core (built with -sDYNAMIC_EXECUTION=0)
// only needs 'wasm-unsafe-eval' to compile. connect-src allows data: because the single-file
// module first tries fetch() on its embedded data: URL (a fetch that never leaves the page).
export const CSP =
  "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; img-src 'self' data:; connect-src 'self' data:; worker-src 'self'; frame-ancestors *; base-uri 'none'; form-action 'none'; object-src 'none'";

// Files are kept in memory and read again when their size or time changes. Synchronous file
// calls: on a busy 2-core machine each hop through libuv's thread pool waited to be scheduled;
// with this, main.js reaches the page 12-26 ms sooner (bench/RESULTS.md, session 5).
const files = new Map(); // path -> { size, mtimeMs, body }
function fileBody(file, info) {
  let f = files.get(file);
  if (!f || f.size !== info.size || f.mtimeMs !== info.mtimeMs) {
    f = { size: info.size, mtimeMs: info.mtimeMs, body: readFileSync(file) };
    files.set(file, f);
  }
  return f.body;
}

export function startServer(listenPort = port) {
  const server = createServer((req, res) => {
    try {
      const url = new URL(req.url, 'http://localhost');
      let path = decodeURIComponent(url.pathname);
      if (path === '/') {
        res.writeHead(302, { Location: '/app/' });
        return res.end();
      }
      if (path.endsWith('/')) path += 'index.html';
      const file = normalize(join(root, path));
      if (!file.startsWith(root + sep)) throw new Error('outside root');
      const info = statSync(file);
      if (!info.isFile()) throw new Error('not a file');
      // Validators, as static hosts send them: a revalidation (Cache-Control: no-cache, or the
      // service worker's copy of the page's files) costs a 304 instead of the file again.
      const etag = `W/"${info.size.toString(16)}-${Math.floor(info.mtimeMs).toString(16)}"`;
      const headers = {
        'Content-Type': types[extname(file)] || 'application/octet-stream',
        'Content-Security-Policy': CSP,
        'X-Content-Type-Options': 'nosniff',
        'Cache-Control': 'no-cache',
        ETag: etag,
        'Last-Modified': info.mtime.toUTCString(),
        // The <trainmem-calculator> element loads its modules from this origin into other
        // sites' pages: module scripts across origins need CORS.
        'Access-Control-Allow-Origin': '*',
      };
      if ((req.headers['if-none-match'] || '').split(/\s*,\s*/).includes(etag)) {
        res.writeHead(304, headers);
        return res.end();
      }
      const body = fileBody(file, info);
      res.writeHead(200, headers);
      res.end(body);
    } catch {
      res.writeHead(404, { 'Content-Type': 'text/plain' });
      res.end('not found');
    }
  });
  return new Promise((ok) => server.listen(listenPort, host, () => ok(server)));
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const server = await startServer();
  const { port: actual } = server.address();
  console.log(`trainmem page: http://${host}:${actual}/`);
}
