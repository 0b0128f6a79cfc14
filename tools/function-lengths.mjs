// The length in lines of every function in the product code: C++ under cpp/ (by braces, on
// clang-formatted text) and JS under web/lib and web/app (by rollup's ESTree parser).
// Usage: node tools/function-lengths.mjs [N]   (prints the N longest, default 10)
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { parseAst } from 'rollup/parseAst';

const root = join(import.meta.dirname, '..');

/** @param {string} dir @param {RegExp} pattern @returns {string[]} */
function filesUnder(dir, pattern) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (name === 'wasm' || name === 'dist' || name === 'node_modules') continue;
    if (statSync(path).isDirectory()) out.push(...filesUnder(path, pattern));
    else if (pattern.test(name)) out.push(path);
  }
  return out;
}

/** C++ text with comments, string and character literals blanked (newlines kept). */
function blankLiterals(/** @type {string} */ text) {
  return text
    .replace(/R"([^(\s]*)\(([\s\S]*?)\)\1"/g, (m) => m.replace(/[^\n]/g, ' '))
    .replace(/\/\*[\s\S]*?\*\/|\/\/[^\n]*|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'/g, (m) =>
      m.replace(/[^\n]/g, ' '),
    );
}

const kScopeWords = /\b(namespace|struct|class|enum|union)\b[^;{}()]*$/;
const kNotFunction = /(=|\breturn|\bif|\bfor|\bwhile|\bswitch|\bcatch|\bdo|\belse|\btry)\s*$/;

/**
 * Functions of one C++ file: a `{` whose enclosing scopes are all namespaces or classes and
 * whose text since the last `;`, `{` or `}` holds a parameter list is a function's body.
 * @param {string} text
 * @returns {{ name: string, line: number, lines: number }[]}
 */
export function cppFunctions(text) {
  const src = blankLiterals(text);
  const found = [];
  /** @type {{ kind: 'scope' | 'function' | 'other', start: number, line: number, name: string }[]} */
  const stack = [];
  let line = 1;
  let since = 0;
  for (let i = 0; i < src.length; i++) {
    const c = src[i];
    if (c === '\n') line++;
    if (c === ';') since = i + 1;
    if (c === '{') {
      const head = src.slice(since, i).trim();
      const outer = stack.every((s) => s.kind === 'scope');
      let kind = /** @type {'scope' | 'function' | 'other'} */ ('other');
      if (kScopeWords.test(head) && !head.includes('(')) kind = 'scope';
      else if (outer && head.includes(')') && !kNotFunction.test(head.split('(')[0]))
        kind = 'function';
      const lead = src.slice(since, i).search(/\S/);
      const first = lead < 0 ? i : since + lead;
      const startLine = line - (src.slice(first, i).match(/\n/g)?.length ?? 0);
      const name = (head.match(/([\w:~<>=!+\-*/[\]]+)\s*\(/) ?? ['', head.slice(0, 40)])[1];
      stack.push({ kind, start: i, line: startLine, name });
      since = i + 1;
    } else if (c === '}') {
      const top = stack.pop();
      if (top?.kind === 'function')
        found.push({ name: top.name, line: top.line, lines: line - top.line + 1 });
      since = i + 1;
    }
  }
  return found;
}

/**
 * Outermost functions of one JS module (declarations, methods, arrows, function expressions).
 * @param {string} text
 * @returns {{ name: string, line: number, lines: number }[]}
 */
export function jsFunctions(text) {
  const lineOf = (/** @type {number} */ pos) => text.slice(0, pos).split('\n').length;
  const found = [];
  const kinds = new Set(['FunctionDeclaration', 'FunctionExpression', 'ArrowFunctionExpression']);
  /** @param {any} node @param {string} name @param {boolean} inside */
  const visit = (node, name, inside) => {
    if (!node || typeof node.type !== 'string') return;
    const isFunction = kinds.has(node.type);
    if (isFunction && !inside) {
      const first = lineOf(node.start);
      found.push({ name: node.id?.name ?? name, line: first, lines: lineOf(node.end) - first + 1 });
    }
    const label = node.key?.name ?? node.id?.name ?? name;
    for (const value of Object.values(node)) {
      for (const child of Array.isArray(value) ? value : [value])
        if (child && typeof child === 'object') visit(child, label, inside || isFunction);
    }
  };
  visit(parseAst(text), '(anonymous)', false);
  return found;
}

/** Every function of the product code, longest first. */
export function allFunctions() {
  const rows = [];
  for (const file of filesUnder(join(root, 'cpp'), /\.(cpp|hpp)$/))
    for (const f of cppFunctions(readFileSync(file, 'utf8')))
      rows.push({ file: relative(root, file), ...f });
  const js = [
    ...filesUnder(join(root, 'web/lib'), /\.m?js$/),
    ...filesUnder(join(root, 'web/app'), /\.m?js$/),
  ];
  for (const file of js)
    for (const f of jsFunctions(readFileSync(file, 'utf8')))
      rows.push({ file: relative(root, file), ...f });
  return rows.sort((a, b) => b.lines - a.lines);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  for (const f of allFunctions().slice(0, Number(process.argv[2] ?? 10)))
    console.log(`${String(f.lines).padStart(4)}  ${f.file}:${f.line}  ${f.name}`);
}
