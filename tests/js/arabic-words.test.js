// The Arabic page says the core's sentences in Arabic, also where a sentence holds another: an
// error inside a pasted file (error.in, whose inner sentence comes as the inner error's own
// codes), the phrases a sentence takes (what an allocator option must be, a snapshot reader's
// limits and types, why a traced model is refused, a diffusers setting, a JSON syntax fault)
// and a traced model's notes (written by the tracer as codes). Each sentence is rendered as the
// page renders it (web/app/i18n.js, t.coreText) and must hold no Latin word but technical names:
// code markup (`backticks` in the strings, shown as a left-to-right isolate U+2066 … U+2069) is
// taken out, and every other Latin word must be one of TECHNICAL. English stays as it was.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { load, TrainmemError } from '../../web/lib/index.js';
import { makeTranslator } from '../../web/app/i18n.js';

const json = (p) => JSON.parse(readFileSync(new URL(p, import.meta.url), 'utf8'));
const catalog = json('../../cpp/data/messages.json').messages;
const t = makeTranslator(
  'ar',
  json('../../web/app/i18n/ar.json'),
  json('../../web/app/i18n/en.json'),
);
const tm = await load();

// Names that the Arabic strings write in Latin letters (docs/glossary-ar.json keeps code, units,
// file formats and product names in Latin): file formats and encodings, units, devices and
// libraries, dtypes, model families.
const TECHNICAL = new Set(
  (
    'JSON UTF-8 pickle MiB GiB KiB MB GB CPU GPU CUDA torch PyTorch autograd ' +
    'fp32 bf16 fp16 bfloat16 float32 float16 float8 ' +
    'Llama UNet Stable Diffusion XL Flux DiT PixArt'
  ).split(' '),
);

/**
 * The Latin words of a rendered sentence that are neither in code markup (inside an LRI
 * U+2066 … its PDI U+2069, at any depth of isolates) nor technical names; a letter right after
 * a digit or a dot is part of a number ("2x2", "1.x").
 * @param {string} text
 */
function latinWords(text) {
  const open = [];
  let prose = '';
  for (const ch of text) {
    if (ch === '\u2066' || ch === '\u2067' || ch === '\u2068') open.push(ch);
    else if (ch === '\u2069') open.pop();
    else prose += open.includes('\u2066') ? ' ' : ch;
  }
  return [...prose.matchAll(/(?<![\w.])[A-Za-z][\w.+-]*/g)]
    .map((m) => m[0].replace(/\.+$/, ''))
    .filter((w) => !TECHNICAL.has(w));
}

/** The core's error for `call()`, a TrainmemError with its codes. */
function errorOf(call) {
  try {
    call();
  } catch (e) {
    assert.ok(e instanceof TrainmemError, String(e));
    assert.ok(Array.isArray(e.messages), `codes for: ${e.message}`);
    return e;
  }
  assert.fail('no error');
}

/** The error's sentence on the Arabic page: every clause translated, no Latin prose. */
function arabicOf(e) {
  const said = t.coreText(e.messages);
  assert.ok(said !== null, `Arabic lacks a code of ${JSON.stringify(e.messages)}`);
  assert.deepEqual(latinWords(said), [], `${said}\n(English: ${e.message})`);
  return said;
}

test('the checker finds Latin prose and passes code markup, numbers and technical names', () => {
  assert.deepEqual(latinWords('يجب أن يكون \u2066\u2068max_split_size_mb\u2069\u2069 between 0'), [
    'between',
  ]);
  assert.deepEqual(latinWords('\u2068unexpected end of input\u2069 عند البايت 14'), [
    'unexpected',
    'end',
    'of',
    'input',
  ]);
  assert.deepEqual(latinWords('حزم 2x2 في JSON وtorch 1.x: \u2066a b c\u2069'), []);
});

const GPT2 = { model: { preset: 'gpt2' }, microBatch: 1, seqLen: 128, gpu: 'a100-80gb' };

test('an error inside a pasted file says the inner error in Arabic; its English is unchanged', () => {
  // The English of each, from the catalog's templates as they were before the inner error
  // became codes: "{field}: {message}" around the JSON reader's sentences.
  const cases = [
    [
      '{"model_type":',
      'model.config: request is not valid JSON: unexpected end of input at byte 14',
    ],
    [
      '{"model_type":"gpt2","n_layer":2,"n_layer":3}',
      'model.config: n_layer appears twice in one object',
    ],
    [
      '{"model_type":"gpt2","n_embd":1e400}',
      'model.config: n_embd is a number beyond the range of a double (1e400)',
    ],
    [
      '{"a":1} x',
      'model.config: request is not valid JSON: text after the end of the JSON value at byte 8',
    ],
    ['{"a" 1}', "model.config: request is not valid JSON: expected ':' after a key at byte 5"],
    [
      '{"a":"\\q"}',
      'model.config: request is not valid JSON: invalid escape in a string at byte 8',
    ],
    [
      '{"a":1.}',
      'model.config: request is not valid JSON: a digit must follow the decimal point at byte 7',
    ],
  ];
  for (const [config, english] of cases) {
    const e = errorOf(() => tm.peakMemory({ ...GPT2, model: { config } }));
    assert.equal(e.message, english);
    assert.equal(e.messages.length, 1);
    assert.equal(e.messages[0].code, 'error.in');
    assert.equal(e.messages[0].params.field, 'model.config');
    const inner = e.messages[0].params.message;
    assert.ok(Array.isArray(inner) && inner.length > 0, JSON.stringify(e.messages));
    const said = arabicOf(e);
    // the inner sentence is the catalog's Arabic (its first words), not the English
    assert.ok(said.includes(t.coreText(inner)), said);
    assert.match(t.coreText(inner), /[\u0621-\u064a]{3}/);
  }
  // a trace's text too (the dropped file of a traced model)
  const e = errorOf(() => tm.describeModel({ model: { trace: '{"format": 1' } }));
  assert.equal(
    e.message,
    'model.trace: request is not valid JSON: unexpected end of input in an object at byte 12',
  );
  arabicOf(e);
});

test('the phrases an error takes are catalog sentences, said in Arabic; English unchanged', () => {
  const TINYLM = json('../fixtures/traces/tinylm.trace.json');
  const traced = { model: { trace: TINYLM }, microBatch: 1, seqLen: 32, gpu: 'h100-80gb' };
  const unet = json('../../cpp/data/models/sd-1.5-unet.json').config;
  // [request, English as the core wrote it before its phrases were codes]
  const cases = [
    [
      () => tm.peakMemory({ ...GPT2, allocator: 'garbage_collection_threshold:2' }),
      'allocator.garbage_collection_threshold must be between 0 and 1 (exclusive)',
    ],
    [
      () => tm.peakMemory({ ...GPT2, allocator: 'max_split_size_mb:3' }),
      'allocator.max_split_size_mb must be an integer above 20 (MiB; kLargeBuffer)',
    ],
    [
      () => tm.peakMemory({ ...GPT2, allocator: 'roundup_power2_divisions:128' }),
      'allocator.roundup_power2_divisions must be a power of 2 up to 64',
    ],
    [
      () => tm.peakMemory({ ...traced, tensorParallel: 2 }),
      'a traced model: tensor parallelism splits heads and projections a trace does not name',
    ],
    [
      () => tm.peakMemory({ ...traced, checkpointing: 'selective-op' }),
      "a traced model: checkpointing 'selective-op' needs the attention and op structure of a known architecture; a traced model checkpoints whole chain layers (full, selective-layer, or a placement strategy)",
    ],
    [
      () => tm.peakMemory({ ...traced, precision: 'amp-bf16' }),
      "a traced model: a trace answers fp32, bf16 and fp16 (the model run in that dtype); autocast's casts are not in it",
    ],
    [
      () => tm.peakMemory({ ...traced, loss: 'chunked' }),
      "a traced model: the loss is part of the trace (the tracer's --loss)",
    ],
    [
      () =>
        tm.peakMemory({
          ...GPT2,
          model: { config: JSON.stringify({ ...unet, class_embed_type: 'timestep' }) },
        }),
      'model.config.class_embed_type: class_embed_type (class-conditioned UNets) is not modelled; trainmem reads the configurations of Stable Diffusion 1.x, 2.x, XL, 3, Flux, DiT and PixArt',
    ],
    [
      () =>
        tm.peakMemory({ ...GPT2, model: { config: JSON.stringify({ ...unet, act_fn: 'gelu' }) } }),
      'model.config.act_fn "gelu": act_fn is not modelled (only "silu")',
    ],
    [
      () =>
        tm.placement({
          chain: {
            inputBytes: 1,
            layers: {
              forwardCost: new Float64Array([1, NaN]),
              backwardCost: [1, 1],
              outputBytes: [1, 1],
              savedBytes: [1, 1],
            },
          },
          strategy: 'none',
        }),
      'chain.layers.forwardCost[1] is NaN: a number in a request must be finite',
    ],
    [
      // pickle.dumps({'segments': 5}, protocol=2) (Python 3.11); the English as the core wrote it before
      () =>
        tm.readSnapshot(
          new Uint8Array([
            128, 2, 125, 113, 0, 88, 8, 0, 0, 0, 115, 101, 103, 109, 101, 110, 116, 115, 113, 1, 75,
            5, 115, 46,
          ]),
        ),
      'snapshot.segments must be a list of segments (the value ending before byte 24)',
    ],
    [
      // protocol 2, then 65 MARKs: one more than the reader's nesting limit (snapshot.hpp)
      () => tm.readSnapshot(new Uint8Array([128, 2, ...Array(65).fill(40)])),
      'snapshot: more than 64 nested MARKs (nesting depth) (at byte 66)',
    ],
  ];
  for (const [call, english] of cases) {
    const e = errorOf(call);
    assert.equal(e.message, english);
    arabicOf(e);
  }
});

test('every phrase of the catalog that a sentence takes is said in Arabic without Latin prose', () => {
  // (the internal errors' details and the JSON reader's faults included: not all reachable)
  const PHRASES =
    /^(error\.(mustBe|snapshot\.(what|want)|trace\.why|json\.what|internal\.schedule)\.|error\.diffusers\.(setting|classEmbed|encoderHid)$|trace\.note\.)/;
  const codes = Object.keys(catalog).filter((c) => PHRASES.test(c));
  assert.ok(codes.length >= 70, `${codes.length} phrases`);
  for (const code of codes) {
    const holes = [...catalog[code].matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
    const params = Object.fromEntries(holes.map((h) => [h, '7']));
    const said = t.coreText([{ code, params }]);
    assert.ok(said !== null, code);
    assert.deepEqual(latinWords(said), [], `${code}: ${said}`);
  }
});

test("a traced model's notes are said in Arabic; an older file's notes are marked as its text", () => {
  const run = (trace) =>
    tm.peakMemory({ model: { trace }, microBatch: 2, runtime: 'pytorch-cpu', optimizer: 'adam' });
  const notes = (r) =>
    r.assumptions
      .map((_, i) => `assumptions[${i}]`)
      .filter((p) => r.messages[p]?.[0]?.code === 'trace.note');
  // the tracer's fixtures (tools/measure_traced.py): CPU fallbacks, a missing bfloat16 step,
  // tensors the model keeps
  for (const name of ['unetish', 'llama_tiny', 'resnet50']) {
    const trace = json(`../fixtures/traces/${name}.trace.json`);
    assert.ok(trace.notes.length > 0 && trace.notes.every((n) => typeof n.code === 'string'), name);
    const r = run(trace);
    const paths = notes(r);
    assert.equal(paths.length, trace.notes.length, name);
    for (const p of paths) {
      const said = t.coreText(r.messages[p]);
      assert.ok(said !== null, p);
      assert.deepEqual(latinWords(said), [], `${name} ${p}: ${said}`);
    }
    // what describeModel says of the trace: its notes, with their codes
    const d = tm.describeModel({ model: { trace } });
    d.trace.notes.forEach((n, i) => {
      const said = t.coreText(d.messages[`trace.notes[${i}]`]);
      assert.deepEqual(latinWords(String(said)), [], `${name} notes[${i}]: ${said}`);
    });
  }
  // the tracer's English, as an older tracer wrote it into the file: read as the file's own text
  const old = 'ops without a meta kernel ran on CPU tensors of the same shapes: aten.add (2)';
  const trace = { ...json('../fixtures/traces/tinylm.trace.json'), notes: [old] };
  const r = run(trace);
  const [p] = notes(r);
  assert.equal(r[p.slice(0, 11)][Number(p.slice(12, -1))], `trace: ${old}`);
  assert.deepEqual(r.messages[p], [
    { code: 'trace.note', params: { note: [{ code: 'trace.note.file', params: { note: old } }] } },
  ]);
  const said = t.coreText(r.messages[p]);
  assert.match(said, /نصّ ملفّ التّتبّع كما كُتب/);
  assert.deepEqual(latinWords(said), []); // (the file's text is shown as code: left to right)
  assert.equal(tm.describeModel({ model: { trace } }).trace.notes[0], old);
});

test("a note of a newer tracer, or one that is not the tracer's, is an error naming it", () => {
  const base = json('../fixtures/traces/tinylm.trace.json');
  const read = (notes) => () => tm.describeModel({ model: { trace: { ...base, notes } } });
  for (const code of ['trace.note.fromTheFuture', 'error.in', 'trace.note.file', 'trace.note']) {
    const e = errorOf(read([{ code, params: {} }]));
    assert.equal(e.code, 'unknown_value');
    assert.equal(e.field, 'model.trace.notes[0].code');
    arabicOf(e);
  }
  const e = errorOf(read([{ code: 'trace.note.keptAfter', params: {} }]));
  assert.equal(e.code, 'missing_field');
  assert.equal(e.field, 'model.trace.notes[0].params.count');
  const extra = errorOf(read([{ code: 'trace.note.keptAfter', params: { count: '3', x: '1' } }]));
  assert.equal(extra.code, 'unknown_key');
  const notString = errorOf(read([{ code: 'trace.note.keptAfter', params: { count: 3 } }]));
  assert.equal(notString.code, 'invalid_type');
});
