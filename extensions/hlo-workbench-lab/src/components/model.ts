// The view model (format 2) as TypeScript types, written by hand from workbench/assets/view.schema.json:
// what workbench/artifacts/viewmodel.py makes and every view draws. A field the schema adds must be added
// here too; tests/test_views_bundle.py draws a real model made by Python.

import type { IBackend } from './backend';
import type { IMemory } from './memory';

export type StageGroup = 'trace' | 'mlir' | 'xla' | 'backend';
export type StageEdit = '' | 'text' | 'inserted' | 'after-removed';
/** A number the model may leave out (not measured, or not finite). */
export type MaybeNumber = number | null;
/** A table as columns and rows (pandas' DataFrame as table_json writes it). */
export interface ITable {
  columns: string[];
  rows: unknown[][];
}

/** A stage: a row of Exploration.table(), its parent and the hand edit that made it. */
export interface IStage {
  stage: string;
  group: StageGroup;
  changed: boolean;
  lines: number;
  ms: MaybeNumber;
  cached: boolean;
  error: string;
  produced_by: string;
  parent: string | null;
  edit: StageEdit;
}

/** The text of a stage shown, cut at a line boundary where it is large. */
export interface IText {
  stage: string;
  state: 'ok' | 'failed' | 'missing';
  text: string;
  lines: number;
  kept_lines: number;
  cut: boolean;
  note: string;
}

/** The structural diff of a pair (Python's ex.diff: normalized texts and runs like "=12~1-3+2"), or a note
 * saying why there is none. `ops_delta`: the ops whose count differs, where the one who answers knows. */
export interface IDiffEntry {
  left: string;
  right: string;
  before?: string;
  after?: string;
  runs?: string;
  note?: string;
  ops_delta?: IOpDelta[];
}

export interface IOpDelta {
  op: string;
  before: number;
  after: number;
  delta: number;
}

export interface IEdit {
  kind: 'text' | 'insert' | 'remove';
  at: number;
  stage: string;
  pass: string;
  text_lines: number;
  what: string;
}

/** One output leaf of a run's check. */
export interface ILeaf {
  path: string;
  shape: number[];
  dtype: string;
  max_abs: MaybeNumber;
  max_rel: MaybeNumber;
  tolerance: MaybeNumber;
  passed: boolean;
  rule: string;
  computed: string;
}

export interface ICheck {
  passed: boolean;
  reference: string;
  kind: string;
  source: string;
  note: string;
  max_abs: MaybeNumber;
  max_rel: MaybeNumber;
  leaves: ILeaf[];
  lowered_abs?: MaybeNumber;
}

export interface IRun {
  stage: string;
  device: string;
  repeat: number;
  median_ms: MaybeNumber;
  min_ms: MaybeNumber;
  check: ICheck | null;
  /** What the first call printed (host callbacks, warnings). */
  printed: string;
  printed_cut: boolean;
  /** Why the program this run ran is not the one shown; "" where it is. */
  stale: string;
  iqr_ms?: MaybeNumber;
  settings?: string;
}

/** A table's first rows; `more`: how many rows are left out. */
export interface IFirstRows extends ITable {
  more: number;
}

export interface IDriftOp {
  /** The op's counterpart in the reference (`line` 0-based, -1 none); views saved before it have none. */
  counterpart?: { result: string; op: string; line: number; text: string };
  /** Its operands beside the counterpart's (`differs` null: not compared). */
  inputs?: IFirstRows;
  result: string;
  op: string;
  line: number;
  text: string;
  source: string;
  made_by: string | null;
  made_by_pass: string;
  changed_by: string | null;
  patterns: string[];
  blame: string;
  max_abs: MaybeNumber;
  tolerance: MaybeNumber;
  cause?: { kind: 'edit' | 'patterns' | 'stage'; stage: string; patterns: string[]; words: string } | null;
}

export interface IDrift {
  stage: string;
  reference: string;
  device: string;
  found: boolean;
  summary: string;
  line: string;
  runs: number;
  compared: number;
  ops: number;
  /** The values compared (`Drift.table()`); `drifts`: how many of them all drift. */
  values?: IFirstRows & { drifts: number };
  op: IDriftOp | null;
}

export interface IViewModel {
  schema: 'hlo-workbench/view';
  format: 2;
  source: 'panel' | 'saved' | 'hlox' | 'report';
  title: string;
  pipeline: string;
  device: string;
  variable: string | null;
  toggles: { patterns_disabled: string[]; patterns_enabled: string[]; xla_disabled: string[] };
  versions: Record<string, string>;
  /** false: XLA was still compiling, its stages are not listed. */
  complete: boolean;
  /** `full`: the whole diagnostic, every frame, where it says more than `message` (the live panel's). */
  error: { stage: string; message: string; full?: string } | null;
  columns: string[];
  stages: IStage[];
  shown: { left: string; right: string };
  ops_delta: IOpDelta[];
  cost: ITable | null;
  cost_note?: string;
  edits: IEdit[];
  runs: IRun[];
  drift: IDrift | null;
  compile: { table: ITable | null } | null;
  /** Where the bytes go, once the panel's Memory tab read it (memory.ts draws it). */
  memory?: IMemory | null;
  /** The TPU's kernels per fusion, once the panel's Backend tab read them (backend.ts draws them). */
  backend?: IBackend | null;
  caps: Record<string, number>;
  texts: Record<string, IText>;
  diff: IDiffEntry;
}

/** What a host gives the components: a pair's diff the model does not carry (asked of Python), and where
 * the user's actions go (the panel). A host without `act` is read-only; one without `diff` shows the pair
 * the model carries only. */
export interface IHost {
  diff?(left: string, right: string): Promise<IDiffEntry>;
  act?(action: string, payload: Record<string, unknown>): void;
}

/** A mounted view: `update` draws a newer model of the same exploration (the pair and the open sections
 * the user picked are kept where the new model has them), `dispose` takes it out of the page. */
export interface IMounted {
  update(model: IViewModel): void;
  dispose(): void;
}
