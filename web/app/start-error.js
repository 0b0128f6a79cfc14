// @ts-check
// What the page or the <trainmem-calculator> element says when it cannot start. A host page
// whose Content-Security-Policy blocks the core's module or its WebAssembly makes the start
// fail with "Failed to fetch" or a CompileError: the violations are recorded from the moment
// this module runs, and the message then says that the policy blocked it.
import { loadStrings, makeTranslator, browserLang } from './i18n.js';

/** @type {string[]} */
const violations = [];
if (typeof document !== 'undefined')
  document.addEventListener('securitypolicyviolation', (e) =>
    violations.push(`${e.violatedDirective} ${e.blockedURI}`),
  );

/**
 * The message for a failed start, in the page's language (English when that cannot be read).
 * @param {unknown} e the error mountApp() rejected with
 * @param {string} [lang]
 * @returns {Promise<string>}
 */
export async function startErrorText(e, lang) {
  // The violation event is a task queued after the blocked fetch has already failed: let it
  // arrive before deciding.
  if (!violations.length) await new Promise((ok) => setTimeout(ok, 150));
  const l = lang === 'en' || lang === 'ar' ? lang : browserLang();
  const en = await loadStrings('en');
  const strings = await loadStrings(l).catch(() => en);
  const t = makeTranslator(l, strings, en);
  const error = /** @type {{ message?: unknown } | null | undefined} */ (e);
  const csp =
    violations.length > 0 ||
    /Content Security Policy|Content-Security-Policy|unsafe-eval/i.test(String(error?.message));
  if (csp) return `${t('error.cspBlocked')}${violations.length ? ` (${violations[0]})` : ''}`;
  return t('error.start', { message: String(error?.message ?? e) });
}
