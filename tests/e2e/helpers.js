// Shared set-up for the browser suites: the page's own server (tools/serve.js) in-process on
// a free port, Debian Chromium through playwright-core, and a console/CSP error collector.
import { chromium } from 'playwright-core';
import { existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { startServer } from '../../tools/serve.js';

export const repo = fileURLToPath(new URL('../../', import.meta.url));
export const shots = `${repo}build/screenshots`;

export function ensureBuilt() {
  if (!existsSync(`${repo}web/lib/wasm/trainmem_wasm.mjs`)) {
    throw new Error('web/lib/wasm/trainmem_wasm.mjs missing: run `bash tools/build.sh wasm` first');
  }
  const pageModule = `${repo}build/wasm/page/trainmem_page_wasm.mjs`;
  if (!existsSync(pageModule)) {
    throw new Error(`${pageModule} missing: run \`bash tools/build.sh wasm\` first`);
  }
  // The page is served from its bundle (web/app/dist): rebuild it when a source is newer.
  const built = `${repo}web/app/dist/main.js`;
  const dirs = [`${repo}web/app`, `${repo}web/app/i18n`, `${repo}web/lib`, `${repo}web/lib/wasm`];
  const sources = dirs.flatMap((d) =>
    readdirSync(d)
      .filter((f) => /\.(m?js|css|json)$/.test(f))
      .map((f) => `${d}/${f}`),
  );
  const newest = Math.max(...[...sources, pageModule].map((f) => statSync(f).mtimeMs));
  if (!existsSync(built) || statSync(built).mtimeMs < newest) {
    execFileSync('bash', [`${repo}tools/build-page.sh`], { stdio: 'inherit' });
  }
  mkdirSync(shots, { recursive: true });
}

export async function setup() {
  ensureBuilt();
  const server = await startServer(0);
  const base = `http://127.0.0.1:${server.address().port}`;
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--disable-gpu', '--disable-quic'],
  });
  return {
    server,
    base,
    browser,
    async close() {
      await browser.close();
      await new Promise((ok) => server.close(ok));
    },
  };
}

/** A new page that records console errors, page errors, CSP violations and foreign requests. */
export async function openPage(browser, url, contextOptions = {}) {
  const context = await browser.newContext({
    viewport: { width: 1100, height: 900 },
    // The page registers a service worker once idle; a suite's pages do without it (request
    // routing cannot see what a service worker fetches), except the test of the offline copy.
    serviceWorkers: 'block',
    ...contextOptions,
  });
  const page = await context.newPage();
  const problems = [];
  // Every path the page and its workers fetch, from before the first one (the core's module is
  // fetched while the page loads, before goto returns).
  const fetched = [];
  const origin = new URL(url).origin;
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  page.on('request', (r) => {
    const u = r.url();
    fetched.push(new URL(u).pathname);
    if (!u.startsWith(origin) && !u.startsWith('data:') && !u.startsWith('blob:'))
      problems.push(`foreign request: ${u}`);
  });
  await page.addInitScript(() => {
    window.__csp = [];
    document.addEventListener('securitypolicyviolation', (e) =>
      window.__csp.push(`${e.violatedDirective} ${e.blockedURI}`),
    );
  });
  await page.goto(url);
  return { page, context, problems, fetched };
}

/** Waits until the app has shown its first result. */
export async function ready(page, root = '.tm') {
  await page.waitForSelector(`${root}[data-ready="1"]`, { timeout: 15000 });
}
