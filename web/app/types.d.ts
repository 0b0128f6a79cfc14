// Types the page's JavaScript names in its JSDoc (tests/js/checkjs.test.js): the state, the
// translator and the controller's context that app.js builds and every view takes first.
// Types only: nothing imports this file at run time.
import type {
  AdviseResult,
  CheckpointFormat,
  CheckpointingStrategy,
  DType,
  FsdpShardingStrategy,
  FunctionName,
  Functions,
  GpuPreset,
  MessagePart,
  ModelPreset,
  OptimizerName,
  PeakMemoryRequest,
  PeakMemoryResult,
  PipelineSchedule,
  PlacementStrategy,
  Precision,
  Runtime,
  Trainmem,
  TrainmemError,
} from '../lib/index.js';
import type { FIELDS } from './state.js';
import type { makeTranslator } from './i18n.js';
import type { Solver } from './solver.js';
import type { snapshotPanel } from './snapshot.js';
import type { tracePanel } from './trace.js';
import type { embedDialog } from './export.js';

/** The page's inputs (state.js FIELDS), by key. */
export type Fields = typeof FIELDS;
export type FieldKey = keyof Fields;
/** One input's schema (state.js FIELDS): its kind, limits or values, default and URL key. */
export type FieldSpec =
  | { kind: 'int' | 'num'; min: number; max: number; default: number; url?: string }
  | { kind: 'choice'; values: readonly string[]; default: string; url?: string }
  | { kind: 'bool'; default: boolean; url?: string }
  | { kind: 'text'; max: number; default: string; url?: string };
/** A calculator (state.js TABS). */
export type Tab = 'size' | 'peak' | 'accum' | 'place' | 'plan';
/** A dtype an input may leave to the page (''). */
type AutoDtype = '' | 'bf16' | 'fp16' | 'fp32';
/** A default's type: true as boolean, 80 as number. */
type Widen<T> = T extends boolean
  ? boolean
  : T extends number
    ? number
    : T extends string
      ? string
      : T;
/**
 * The page state: each input's value, of its default's type; a choice, one of its values
 * (state.js FIELDS lists them: the core's names, '' where the page picks).
 */
export type State = { -readonly [K in FieldKey]: Widen<Fields[K]['default']> } & {
  tab: Tab;
  modelSource: 'params' | 'preset' | 'config';
  optimizer: OptimizerName;
  method: 'full' | 'lora' | 'qlora' | 'scratch';
  weightDtype: '' | DType;
  stateDtype: '' | DType;
  format: '' | CheckpointFormat;
  precision: '' | Precision;
  checkpointing: CheckpointingStrategy;
  zeroStage: '0' | '1' | '2' | '3';
  attention: '' | 'eager' | 'sdpa';
  runtime: '' | Runtime;
  optImpl: '' | NonNullable<PeakMemoryRequest['optimizerImplementation']>;
  baseDtype: AutoDtype;
  schedule: PipelineSchedule;
  loss: '' | NonNullable<PeakMemoryRequest['loss']>;
  fsdp: '' | FsdpShardingStrategy;
  fsdpParamDtype: AutoDtype;
  fsdpReduceDtype: AutoDtype;
  accMode: 'plan' | 'forward';
  chainSource: 'uniform' | 'model';
  strategy: PlacementStrategy;
};
/** The state with the page's automatic choices made (resolve.js resolve). */
export type ResolvedState = Omit<State, 'precision' | 'weightDtype'> & {
  precision: Precision;
  weightDtype: DType;
};
/** The labels of one language (i18n/<lang>.json), by key. */
export type Strings = Record<string, string>;
/** The translator of one language (i18n.js makeTranslator): t(key, vars) and its formatters. */
export type Translator = ReturnType<typeof makeTranslator>;

/** The presets the pickers offer (app.js loadPresets): ids and names, the GPUs' memory. */
export interface PickerPresets {
  models: Array<Partial<ModelPreset> & { id: string; name?: string }>;
  gpus: Array<Partial<GpuPreset> & { id: string; name?: string }>;
}

/** What mountApp takes (the page, the iframe mode, <trainmem-calculator>). */
export interface MountOptions {
  state?: Partial<State>;
  embed?: boolean;
  bare?: boolean;
  ownsDocument?: boolean;
  show?: Set<string> | null;
  tabs?: Tab[];
  lang?: string;
  showExamples?: boolean;
  onState?: (st: State) => void;
}

/** The shown result: the tab, the core call, its request and its result. */
export interface LastResult {
  tab: Tab;
  fn: FunctionName;
  request: object;
  result: unknown;
}

/** The verdict's elements before a rebuild, kept until the new verdict comes. */
export interface PreviousVerdict {
  verdict: HTMLElement;
  suggest: HTMLElement;
  lang: string | undefined;
}

/**
 * The controller's context (app.js startContext): the live state and the functions that act on
 * it, shared by the form, the verdict, the result views and the exports.
 */
export interface Ctx {
  root: HTMLElement | ShadowRoot;
  options: MountOptions;
  embed: boolean;
  /** The input keys to show (embeds), or null for all. */
  show: Set<string> | null;
  tabs: Tab[];
  st: State;
  /** English, every language's fallback. */
  en: Strings;
  t: Translator;
  tm: Trainmem;
  solver: Solver;
  rootEl: HTMLDivElement;
  /** key -> message, for inputs that do not parse. */
  invalid: Map<string, string>;
  resultsWidth: number;
  computeSeq: number;
  snapPanel: ReturnType<typeof snapshotPanel>;
  tracePanel: ReturnType<typeof tracePanel>;
  presets: PickerPresets;
  /** The presets the worked examples use, where this build has them ('' where not). */
  known: { llama: string; gpt2: string; v100: string };
  update: (
    patch: Partial<State>,
    opts?: { rebuild?: boolean; fromExample?: boolean; typing?: boolean },
  ) => void;
  compute: () => void;
  errorBox: (e: PageError) => HTMLElement;
  runExample: (id: string) => void;
  publish: () => void;
  rebuild: () => void;
  askAdvice: (
    request: Functions['advise'][0],
    channel: string,
    seq: number,
    show: (advice: AdviseResult) => void,
    fail: (e: TrainmemError) => void,
  ) => Promise<void> | void;
  resultsSize?: ResizeObserver;
  stateTimer?: ReturnType<typeof setTimeout>;
  liveTimer?: ReturnType<typeof setTimeout>;
  last?: LastResult | null;
  firstDone?: boolean;
  advancedOpen?: boolean;
  parsedFor?: string;
  verdictKey?: string;
  verdictLang?: string;
  heading?: HTMLElement;
  // The current layout's elements: set by app.js build() before anything reads them (the
  // verdict's and the embed dialog are null where the layout has none: the embeds).
  verdictEl: HTMLElement | null;
  suggestEl: HTMLElement;
  liveEl: HTMLElement | null;
  statusEl: HTMLElement;
  resultsEl: HTMLElement;
  exampleEl: HTMLElement;
  dialogEl: ReturnType<typeof embedDialog> | null;
}

/** The schema of a choice, of a number, of a text input. */
export type ChoiceSpec = Extract<FieldSpec, { kind: 'choice' }>;
export type NumberSpec = Extract<FieldSpec, { kind: 'int' | 'num' }>;
export type TextSpec = Extract<FieldSpec, { kind: 'text' }>;

/** An error the page shows: the core's (TrainmemError) or one of its own with a code. */
export interface PageError {
  code?: string;
  field?: string;
  message?: string;
  minimumBudgetBytes?: number;
  messages?: MessagePart[];
  /** The page's own sentence (requests.js InputError): its key, values and a preset to offer. */
  key?: string;
  params?: Record<string, string>;
  preset?: string;
}

/** A chart's line at the GPU's memory (GiB). */
export interface Capacity {
  value: number;
  label: string;
}

/** One pipeline stage's figures (peakMemory's pipelineParallel.perStage). */
export type Stage = NonNullable<PeakMemoryResult['pipelineParallel']>['perStage'][number];

/** A function of the core the page calls by name (solver.js). */
export type CoreCall = Exclude<keyof Trainmem, 'version' | 'call' | 'parseJson'>;
