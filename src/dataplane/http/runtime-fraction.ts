import type { JsonObject } from '../../../events/config.js';
import { objectOf } from '../../../reducers/settings/values.js';
import { acting, checkFields, type FieldTable } from '../../bootstrap/honoured.js';
import type { Report } from '../../bootstrap/report.js';

/** A `core.RuntimeFractionalPercent`: a default share of requests, overridable by a runtime key. */
export interface RuntimeFraction {
  /** Empty when the config names none: the default always applies. */
  key: string;
  numerator: number;
  denominator: number;
}

/** Runtime values by key, read when a fraction is evaluated. */
export type RuntimeLookup = (key: string) => string | undefined;

const DENOMINATOR: Record<string, number> = { HUNDRED: 100, TEN_THOUSAND: 10_000, MILLION: 1_000_000 };

const RUNTIME_FRACTION_FIELDS: FieldTable = acting('default_value', 'runtime_key');
const FRACTION_FIELDS: FieldTable = acting('numerator', 'denominator');
const FEATURE_FLAG_FIELDS: FieldTable = acting('default_value', 'runtime_key');

/** The field tables of this compile step, by the message name its findings use. */
export const FIELD_TABLES = {
  RuntimeFractionalPercent: RUNTIME_FRACTION_FIELDS,
  FractionalPercent: FRACTION_FIELDS,
  RuntimeFeatureFlag: FEATURE_FLAG_FIELDS,
};

/** Compiles a `RuntimeFractionalPercent` (canonical form: enum names, default HUNDRED omitted). */
export function compileRuntimeFraction(raw: JsonObject, path: string, report: Report): RuntimeFraction {
  checkFields(raw, path, report, RUNTIME_FRACTION_FIELDS, 'RuntimeFractionalPercent');
  const value = objectOf(raw.default_value);
  checkFields(value, `${path}.default_value`, report, FRACTION_FIELDS, 'FractionalPercent');
  if (raw.default_value === undefined)
    report.error(`${path}.default_value`, 'required field missing', 'missing');
  const name = typeof value.denominator === 'string' ? value.denominator : 'HUNDRED';
  return {
    key: typeof raw.runtime_key === 'string' ? raw.runtime_key : '',
    numerator: Number(value.numerator ?? 0),
    denominator: DENOMINATOR[name] ?? 100,
  };
}

/** A runtime value as a non-negative integer, or undefined. */
function runtimeUint(runtime: RuntimeLookup, key: string): number | undefined {
  const raw = runtime(key);
  const n = raw === undefined ? Number.NaN : Number(raw.trim());
  return Number.isInteger(n) && n >= 0 ? n : undefined;
}

/**
 * Whether this request falls in the fraction, as the reference's `featureEnabled`: an integer
 * under the runtime key is a percentage (above 100 always on); a fraction written in a static
 * layer (`key: { numerator, denominator }`, flattened to `key.numerator` ...) replaces the
 * default; otherwise the default applies. `random` is a uniform integer draw.
 */
export function fractionEnabled(f: RuntimeFraction, runtime: RuntimeLookup, random: number): boolean {
  let numerator = f.numerator;
  let denominator = f.denominator;
  if (f.key) {
    const percent = runtimeUint(runtime, f.key);
    if (percent !== undefined) {
      if (percent > 100) return true;
      numerator = percent;
      denominator = 100;
    } else {
      const fraction = runtimeUint(runtime, `${f.key}.numerator`);
      if (fraction !== undefined) {
        numerator = fraction;
        denominator = DENOMINATOR[runtime(`${f.key}.denominator`) ?? 'HUNDRED'] ?? 100;
      }
    }
  }
  return random % denominator < numerator;
}

/** A uniform draw for `fractionEnabled`. */
export function randomDraw(): number {
  return Math.floor(Math.random() * 1_000_000);
}

/** A `core.RuntimeFeatureFlag`: on or off by default, a runtime key able to turn it either way. */
export interface FeatureFlag {
  byDefault: boolean;
  /** Empty when the config names none. */
  key: string;
}

/** Compiles a `RuntimeFeatureFlag`; its `default_value` is required, as the reference's. */
export function compileFeatureFlag(raw: JsonObject, path: string, report: Report): FeatureFlag {
  checkFields(raw, path, report, FEATURE_FLAG_FIELDS, 'RuntimeFeatureFlag');
  if (raw.default_value === undefined)
    report.error(`${path}.default_value`, 'required field missing', 'missing');
  return {
    byDefault: raw.default_value === true,
    key: typeof raw.runtime_key === 'string' ? raw.runtime_key : '',
  };
}

/** Whether a flag is on, as the reference's `getBoolean`: `true` or `false` under its key, else its default. */
export function featureEnabled(flag: FeatureFlag, runtime: RuntimeLookup): boolean {
  if (flag.key === '') return flag.byDefault;
  const value = runtime(flag.key)?.trim().toLowerCase();
  return value === 'true' ? true : value === 'false' ? false : flag.byDefault;
}
