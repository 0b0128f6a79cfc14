// @ts-check
// Argument parsing: argv -> the command, the output format and one request per scenario (the
// --json base, then one more after each --vs), with the flag that set each field.
import { COMMANDS, ALL } from './commands/index.js';
import { FLAG_BY_NAME, OPTION_NAMES, flagCommand, flagPath } from './flags.js';
import { suggest } from './suggest.js';
import { UsageError } from './usage-error.js';
import {
  parseBoolean,
  parseBytes,
  parseCount,
  parseNumber,
  readJsonArg,
  readTextArg,
} from './values.js';

/**
 * A request as JSON: fields set by path.
 * @typedef {Record<string, unknown>} JsonObject
 */
/**
 * One entry of the flag table (flags.js FLAGS).
 * @typedef {(typeof import('./flags.js').FLAGS)[number]} FlagDef
 */
/**
 * One `--name[=value]` of the command line.
 * @typedef {{ name: string, value?: string, def?: FlagDef }} Token
 */
/**
 * One request being built: its fields, the flag that set each, and what this scenario set.
 * @typedef {object} Scenario
 * @property {JsonObject} request
 * @property {Map<string, string>} origin path -> '--flag'
 * @property {string | null} modelFlag
 * @property {Set<string>} setHere
 * @property {Set<string>} setPaths
 */
/**
 * The parsed command line.
 * @typedef {object} ParsedArgs
 * @property {string | null} command
 * @property {string} format
 * @property {boolean} [formatSet]
 * @property {boolean} help
 * @property {boolean} version
 * @property {Scenario[]} scenarios
 * @property {string | null} file
 */

/**
 * @param {JsonObject} obj
 * @param {string} path
 * @param {unknown} value
 */
function setPath(obj, path, value) {
  // `checkpointing` is a strategy name or { strategy, ...options }: --checkpointing NAME and
  // its option flags (--save-ops, --checkpointing-k) make one object, in either order
  const ck = obj.checkpointing;
  if (path === 'checkpointing' && typeof value === 'string' && ck && typeof ck === 'object') {
    /** @type {JsonObject} */ (ck).strategy = value;
    return;
  }
  if (path.startsWith('checkpointing.') && typeof ck === 'string')
    obj.checkpointing = { strategy: ck };
  const parts = path.split('.');
  let cur = obj;
  for (const p of parts.slice(0, -1)) {
    if (cur[p] === null || typeof cur[p] !== 'object' || Array.isArray(cur[p])) cur[p] = {};
    cur = /** @type {JsonObject} */ (cur[p]);
  }
  cur[parts[parts.length - 1]] = value;
}

// A count (7e9, 6.7B) -> model.params; anything else is a preset id.
/**
 * @param {string} raw
 * @param {string} flag
 * @param {string} path
 */
function modelValue(raw, flag, path) {
  /** @type {number | null} */
  let count = null;
  try {
    count = parseCount(raw, flag);
  } catch {
    count = null;
  }
  return count === null
    ? { target: `${path}.preset`, value: String(raw) }
    : { target: `${path}.params`, value: count };
}

// How each kind of flag (flags.js `kind`) reads its value.
/** @type {Record<string, (raw: string, flag: string) => unknown>} */
const VALUE_OF = {
  string: (raw) => String(raw),
  number: parseNumber,
  // "a,b" -> ["a", "b"]; PEFT's shorthand "all-linear" stays a string
  list: (raw) =>
    String(raw).toLowerCase() === 'all-linear' ? String(raw) : String(raw).split(','),
  count: parseCount,
  bytes: parseBytes,
  boolean: parseBoolean,
  jsonFile: readJsonArg,
  textFile: readTextArg,
};

// One model form per request: the first model flag of a scenario replaces the model of the
// --json file (or of the scenario before --vs); two different ones conflict.
/**
 * @param {Scenario} scenario
 * @param {string} flag
 */
function takeModelForm(scenario, flag) {
  if (scenario.modelFlag && scenario.modelFlag !== flag) {
    throw new UsageError(
      'conflicting_flags',
      flag,
      `--${flag} and --${scenario.modelFlag} both describe the model: give one`,
    );
  }
  if (!scenario.modelFlag) {
    // Keep the model modifiers this scenario's flags already set (--architecture).
    const prev = scenario.request.model;
    /** @type {JsonObject} */
    const kept = {};
    if (prev && typeof prev === 'object') {
      for (const [k, v] of Object.entries(prev)) {
        if (scenario.setHere.has(`model.${k}`)) kept[k] = v;
      }
    }
    scenario.request.model = kept;
    for (const k of [...scenario.origin.keys()]) {
      if ((k === 'model' || k.startsWith('model.')) && !scenario.setHere.has(k)) {
        scenario.origin.delete(k);
      }
    }
  }
  scenario.modelFlag = flag;
}

// Sets one field of a scenario, and remembers which flag set it.
/**
 * @param {Scenario} scenario
 * @param {string} path
 * @param {unknown} value
 * @param {string} flagName
 */
function setField(scenario, path, value, flagName) {
  setPath(scenario.request, path, value);
  scenario.origin.set(path, flagName);
  scenario.setHere.add(path);
}

// Applies one request flag to a scenario: { request, origin: Map(path -> '--flag') }.
/**
 * @param {Scenario} scenario
 * @param {FlagDef} def
 * @param {string} command
 * @param {string | undefined} raw
 */
function applyFlag(scenario, def, command, raw) {
  const flag = def.flag;
  if (!def.commands.includes(flagCommand(def, command))) {
    throw new UsageError(
      'flag_not_for_command',
      flag,
      `--${flag} does not apply to "${command}" (it applies to: ${def.commands.join(', ')})`,
    );
  }
  if (raw === undefined && def.kind !== 'boolean') {
    throw new UsageError('missing_value', flag, `--${flag} needs a value`);
  }
  const path = flagPath(def, command);
  let set;
  if (def.kind === 'model') set = modelValue(/** @type {string} */ (raw), flag, path);
  else if (Object.hasOwn(VALUE_OF, def.kind))
    // (raw is undefined only for a boolean flag, which parseBoolean reads as true)
    set = { target: path, value: VALUE_OF[def.kind](/** @type {string} */ (raw), flag) };
  else throw new Error(`flag table: unknown kind ${def.kind}`);
  if (def.modelForm) takeModelForm(scenario, flag);
  setField(scenario, set.target, set.value, `--${flag}`);
}

/**
 * @param {Scenario} scenario
 * @param {string | undefined} raw
 */
function applySet(scenario, raw) {
  if (raw === undefined || !String(raw).includes('=')) {
    throw new UsageError('invalid_set', 'set', '--set needs path=value, e.g. --set zeroStage=2');
  }
  const text = String(raw);
  const eq = text.indexOf('=');
  const path = text.slice(0, eq).trim();
  const valueText = text.slice(eq + 1);
  if (!/^[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)*$/.test(path)) {
    throw new UsageError('invalid_set', 'set', `--set: "${path}" is not a dotted field path`);
  }
  // No request field is named so; setting one would reach Object.prototype.
  const reserved = path
    .split('.')
    .find((p) => ['__proto__', 'prototype', 'constructor'].includes(p));
  if (reserved) {
    throw new UsageError('invalid_set', 'set', `--set: "${path}" names "${reserved}", not a field`);
  }
  if (scenario.setPaths.has(path)) {
    throw new UsageError('repeated_flag', 'set', `--set ${path} is given twice: give it once`);
  }
  scenario.setPaths.add(path);
  let value;
  try {
    value = JSON.parse(valueText);
  } catch {
    value = valueText; // a bare word is a string: --set attention=sdpa
  }
  setField(scenario, path, value, '--set');
}

// One `--name[=value]` word (and the value word after it, when it takes one) -> a token;
// returns the index of the last word read.
/**
 * @param {string[]} argv
 * @param {number} i
 * @param {Token[]} tokens
 */
function readFlag(argv, i, tokens) {
  const a = argv[i];
  const eq = a.indexOf('=');
  let name = eq > 0 ? a.slice(2, eq) : a.slice(2);
  let value = eq > 0 ? a.slice(eq + 1) : undefined;
  let negated = false;
  if (name.startsWith('no-') && FLAG_BY_NAME.get(name.slice(3))?.kind === 'boolean') {
    name = name.slice(3);
    negated = true;
  }
  const def = FLAG_BY_NAME.get(name);
  const isOption = OPTION_NAMES.has(name);
  if (!def && !isOption) {
    const near = suggest(name, [...FLAG_BY_NAME.keys(), ...OPTION_NAMES]);
    throw new UsageError(
      'unknown_flag',
      name,
      `unknown flag --${name}${near ? ` (did you mean --${near}?)` : ''}`,
    );
  }
  const takesValue = isOption ? ['json', 'set', 'format'].includes(name) : def?.kind !== 'boolean';
  const next = argv[i + 1];
  if (negated) value = 'false';
  else if (value === undefined && takesValue) {
    if (next !== undefined && (next === '-' || !next.startsWith('--'))) {
      value = next;
      i++;
    }
  } else if (value === undefined && !isOption && def?.kind === 'boolean') {
    // A boolean takes an explicit true/false as its next word, nothing else.
    if (next !== undefined && /^(true|false|yes|no|on|off)$/i.test(next)) {
      value = next;
      i++;
    }
  }
  tokens.push({ name, value, def });
  return i;
}

// argv -> the flag tokens, with the command (and compare-snapshot's file) set on `out`.
/**
 * @param {string[]} argv
 * @param {ParsedArgs} out
 */
function tokenize(argv, out) {
  /** @type {Token[]} */
  const tokens = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--') {
      throw new UsageError('unexpected_argument', '', 'no positional arguments after --');
    }
    if (a.startsWith('--')) i = readFlag(argv, i, tokens);
    else if (a === '-h') tokens.push({ name: 'help' });
    else if (out.command === null && tokens.length === 0) out.command = a;
    else if (out.command === 'compare-snapshot' && out.file === null) out.file = a;
    else {
      throw new UsageError(
        'unexpected_argument',
        '',
        `unexpected argument "${a}" (flags start with --)`,
      );
    }
  }
  return tokens;
}

/** @param {string | null} command */
function checkCommand(command) {
  if (command === null) {
    throw new UsageError(
      'missing_command',
      '',
      `name a command: ${ALL.join(' | ')} (trainmem --help shows examples)`,
    );
  }
  if (!COMMANDS[command]) {
    const near = suggest(command, ALL);
    throw new UsageError(
      'unknown_command',
      '',
      `unknown command "${command}"${near ? ` (did you mean "${near}"?)` : ''}; commands: ${ALL.join(', ')}`,
    );
  }
}

// --json FILE: the base requests (one, or a list).
/**
 * @param {Token} t
 * @param {Token[][]} groups
 * @returns {unknown[]}
 */
function readBase(t, groups) {
  if (groups.length > 1) {
    throw new UsageError('invalid_vs', 'json', '--json goes before the first --vs');
  }
  if (t.value === undefined)
    throw new UsageError('missing_value', 'json', '--json needs a file (or -)');
  const data = readJsonArg(t.value, 'json');
  const base = Array.isArray(data) ? data : [data];
  if (base.length === 0)
    throw new UsageError('invalid_json', 'json', '--json: the list of requests is empty');
  return base;
}

// The tokens -> the base requests (the --json file or {}) and the flag groups: the base's,
// then one after each --vs; --format (and compare-snapshot's bare --json) set on `out`.
/**
 * @param {Token[]} tokens
 * @param {ParsedArgs} out
 */
function groupTokens(tokens, out) {
  /** @type {unknown[]} */
  let base = [{}];
  /** @type {Token[][]} */
  const groups = [[]];
  const once = new Set();
  for (const t of tokens) {
    if (['json', 'format'].includes(t.name) && t.value !== undefined) {
      if (once.has(t.name)) {
        throw new UsageError('repeated_flag', t.name, `--${t.name} is given twice: give it once`);
      }
      once.add(t.name);
    }
    if (t.name === 'vs') groups.push([]);
    else if (t.name === 'json' && out.command === 'compare-snapshot' && t.value === undefined) {
      out.format = 'json'; // compare-snapshot: a bare --json prints JSON (the default is a table)
      out.formatSet = true;
    } else if (t.name === 'json') base = readBase(t, groups);
    else if (t.name === 'format') {
      if (t.value === undefined || !['json', 'table', 'markdown'].includes(t.value)) {
        throw new UsageError(
          'invalid_format',
          'format',
          `--format is json, table or markdown, got "${t.value ?? ''}"`,
        );
      }
      out.format = t.value;
      out.formatSet = true;
    } else groups[groups.length - 1].push(t);
  }
  if (out.command === 'compare-snapshot') {
    if (!out.formatSet) out.format = 'table';
    if (groups.length > 1 || base.length > 1) {
      throw new UsageError('invalid_vs', 'vs', 'compare-snapshot compares one request');
    }
  }
  if (groups.length > 1 && base.length > 1) {
    throw new UsageError('invalid_vs', 'vs', '--vs needs a single base request, not a --json list');
  }
  return { base, groups };
}

// A scenario from a request and the origins of its fields, with a group of flags applied.
/**
 * @param {JsonObject} request
 * @param {Map<string, string>} origin
 * @param {Token[]} group
 * @param {string} command
 * @returns {Scenario}
 */
function scenarioOf(request, origin, group, command) {
  /** @type {Scenario} */
  const scenario = { request, origin, modelFlag: null, setHere: new Set(), setPaths: new Set() };
  const seen = new Set();
  for (const t of group) {
    // A flag given twice in one scenario would silently keep its last value.
    if (t.name !== 'set' && seen.has(t.name)) {
      throw new UsageError('repeated_flag', t.name, `--${t.name} is given twice: give it once`);
    }
    seen.add(t.name);
    if (t.name === 'set') applySet(scenario, t.value);
    else applyFlag(scenario, /** @type {FlagDef} */ (t.def), command, t.value);
  }
  return scenario;
}

// argv -> { command, format, help, version, scenarios: [{ request, origin }] }
/**
 * @param {string[]} argv
 * @returns {ParsedArgs}
 */
export function parseArgs(argv) {
  /** @type {ParsedArgs} */
  const out = {
    command: null,
    format: 'json',
    help: false,
    version: false,
    scenarios: [],
    file: null,
  };
  const tokens = tokenize(argv, out);
  for (const t of tokens) {
    if (t.name === 'help') out.help = true;
    if (t.name === 'version') out.version = true;
  }
  if (out.help || out.version) return out;
  checkCommand(out.command);
  const command = /** @type {string} */ (out.command);
  const { base, groups } = groupTokens(tokens, out);
  for (const req of base) {
    if (req === null || typeof req !== 'object' || Array.isArray(req)) {
      throw new UsageError('invalid_json', 'json', '--json: a request is a JSON object');
    }
    out.scenarios.push(
      scenarioOf(structuredClone(/** @type {JsonObject} */ (req)), new Map(), groups[0], command),
    );
  }
  for (const group of groups.slice(1)) {
    const prev = out.scenarios[out.scenarios.length - 1];
    out.scenarios.push(
      scenarioOf(structuredClone(prev.request), new Map(prev.origin), group, command),
    );
  }
  return out;
}

// The flag that set a field (or the closest enclosing field): "model.config.hidden_size"
// came from --config when --config set "model.config".
/**
 * @param {Map<string, string>} origin
 * @param {string} field
 * @returns {string | null}
 */
export function flagForField(origin, field) {
  let f = field;
  while (f) {
    if (origin.has(f)) return /** @type {string} */ (origin.get(f));
    const cut = Math.max(f.lastIndexOf('.'), f.lastIndexOf('['));
    if (cut < 0) break;
    f = f.slice(0, cut);
  }
  return null;
}
