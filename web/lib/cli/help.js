// @ts-check
// The help text, built from the command and flag tables.
import { COMMANDS, ALL } from './commands/index.js';
import { FLAGS, OPTIONS, flagCommand, flagPath } from './flags.js';

/** @type {Record<string, string>} */
const ARG_LABEL = {
  model: 'id|count',
  count: 'count',
  jsonFile: 'file|-',
  textFile: 'file|-',
  bytes: 'bytes',
  number: 'number',
  string: 'value',
  list: 'a,b|all-linear',
};

// `vocabulary`: the core's tables (tm.vocabulary()); a flag with `vocab` lists that table.
/**
 * @param {string | null} command
 * @param {import('../index.js').Vocabulary} vocabulary
 * @returns {string}
 */
export function helpText(command, vocabulary) {
  const lines = [];
  if (command && COMMANDS[command]) {
    const c = COMMANDS[command];
    lines.push(
      `trainmem ${command}: ${c.summary}`,
      '',
      `usage: trainmem ${command}${command === 'compare-snapshot' ? ' [snapshot.pickle | memory_stats.json]' : ''} [flags]`,
      '',
      'flags (request field they set):',
    );
    for (const f of FLAGS.filter((d) => d.commands.includes(flagCommand(d, command)))) {
      const path = f.kind === 'model' ? 'model.preset | model.params' : flagPath(f, command);
      const arg = f.kind === 'boolean' ? '' : ` <${ARG_LABEL[f.kind]}>`;
      const tables = /** @type {Record<string, string[]>} */ (/** @type {unknown} */ (vocabulary));
      const names = f.vocab ? tables[f.vocab].join(' | ') : '';
      const help = [names, f.help].filter(Boolean).join(' ');
      lines.push(`  --${f.flag}${arg}`.padEnd(34) + ` ${path}${help ? `: ${help}` : ''}`);
    }
  } else {
    lines.push(
      'trainmem: training memory, exactly (checkpoint size, peak memory, accumulation, checkpoint placement)',
      '',
      'usage: trainmem <command> [flags]',
      '',
      'commands:',
      ...ALL.map((k) => `  ${k.padEnd(18)} ${COMMANDS[k].summary}`),
      '',
      'request flags: trainmem <command> --help lists the flags of a command.',
    );
  }
  lines.push('', 'options:');
  for (const o of OPTIONS) lines.push(`  --${o.flag}`.padEnd(34) + ` ${o.help}`);
  lines.push(
    '',
    'numbers: counts take k/M/B/T (6.7B = 6.7e9); bytes take B, kB, MB, GB, TB (10^3 steps) or KiB, MiB, GiB, TiB (2^10 steps); digits may be grouped by _ or by , in threes (6,738,415,616).',
    'output: the result as JSON on stdout (exit 0); bad input: {"error":{code, field, flag, message}} on stderr (exit 2).',
    '',
    'examples:',
  );
  const examples =
    command && COMMANDS[command]
      ? COMMANDS[command].examples
      : ALL.flatMap((k) => COMMANDS[k].examples.slice(0, 1));
  for (const e of examples) lines.push(`  ${e}`);
  if (!command)
    lines.push(
      '  trainmem checkpoint-size --json request.json',
      '  echo \'{"model":{"params":7e9},"optimizer":"adam"}\' | trainmem checkpoint-size --json -',
    );
  return lines.join('\n') + '\n';
}
