// @ts-check
// Service worker: a page loaded once opens again without the network. It keeps one complete
// copy of the page's files (dist/files.json, written by tools/build-page.mjs with a version
// that changes with their contents). Online, every request goes to the network as before — a
// new build is seen at once — and the copy is renewed when the version changes; when a request
// fails (offline, server gone), the copy answers. Nothing is cached outside this list but the
// full core once the page has loaded it, and no request leaves the page's origin.
const sw = /** @type {SwScope} */ (/** @type {unknown} */ (self));
const PREFIX = 'trainmem-page-';
const scope = sw.registration.scope; // the page's folder, e.g. https://example.org/app/
const MANIFEST = new URL('dist/files.json', scope).href;
const COMPLETE = new URL('trainmem-copy-complete', scope).href; // a key, never requested
const PAGE = [new URL(scope).pathname, new URL('index.html', scope).pathname];

// Brings the copy to the files' current version; resolves once a complete copy is in place.
async function renew() {
  const res = await fetch(MANIFEST, { cache: 'no-store' });
  if (!res.ok) throw new Error(`${MANIFEST}: HTTP ${res.status}`);
  /** @type {{ version: string, files: string[] }} (dist/files.json, written by the page build) */
  const { version, files } = await res.json();
  const name = PREFIX + version;
  const cache = await caches.open(name);
  if (!(await cache.match(COMPLETE))) {
    // 'no-cache': revalidated against the server (a 304 for what the page has just loaded).
    await cache.addAll(files.map((f) => new Request(new URL(f, scope), { cache: 'no-cache' })));
    await cache.put(COMPLETE, new Response(version));
  }
  for (const old of await caches.keys()) {
    if (old.startsWith(PREFIX) && old !== name) await caches.delete(old);
  }
}

sw.addEventListener('install', (/** @type {SwExtendableEvent} */ event) => {
  event.waitUntil(renew().then(() => sw.skipWaiting()));
});

sw.addEventListener('activate', (/** @type {SwExtendableEvent} */ event) => {
  event.waitUntil(
    Promise.all([
      sw.clients.claim(),
      // The page's own request starts while this worker starts (no added latency online).
      sw.registration.navigationPreload?.enable(),
    ]),
  );
});

// The full core (the snapshot reader) is not in the list, so that a first visit does not
// download it: it joins the copy once the page has loaded it.
const FULL_CORE = /\/dist\/(full\.js|trainmem_full\.mjs|trainmem_full\.wasm)$/;
/**
 * @param {Request} req
 * @param {Response} res
 */
async function keep(req, res) {
  for (const name of await caches.keys()) {
    if (!name.startsWith(PREFIX)) continue;
    const cache = await caches.open(name);
    if (await cache.match(COMPLETE)) return cache.put(req, res);
  }
  return undefined;
}

/** @param {string} url */
async function fromCopy(url) {
  for (const name of await caches.keys()) {
    if (!name.startsWith(PREFIX)) continue;
    const cache = await caches.open(name);
    if (!(await cache.match(COMPLETE))) continue;
    const hit = await cache.match(url, { ignoreSearch: true });
    if (hit) return hit;
  }
  return undefined;
}

sw.addEventListener('fetch', (/** @type {SwFetchEvent} */ event) => {
  const req = event.request;
  if (req.method !== 'GET' || !req.url.startsWith(scope)) return;
  if (req.mode === 'navigate') {
    event.respondWith(
      (async () => {
        try {
          const res = (await event.preloadResponse) || (await fetch(req));
          event.waitUntil(renew().catch(() => {})); // a new build: a new copy, in the background
          return res;
        } catch (e) {
          // The page, whatever its query (the state lives there), or a file of its copy.
          const copy = await fromCopy(PAGE.includes(new URL(req.url).pathname) ? scope : req.url);
          if (copy) return copy;
          throw e;
        }
      })(),
    );
    return;
  }
  event.respondWith(
    fetch(req).then(
      (res) => {
        if (res.ok && FULL_CORE.test(new URL(req.url).pathname)) {
          event.waitUntil(keep(req, res.clone()).catch(() => {}));
        }
        return res;
      },
      async (e) => {
        const copy = await fromCopy(req.url);
        if (copy) return copy;
        throw e;
      },
    ),
  );
});
