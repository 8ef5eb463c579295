import type { Json, JsonObject } from '../../events/index.js';

/** Milliseconds of a proto3 JSON Duration (`"1.5s"`, `"0.250s"`), or the fallback when absent. */
export function durationMs(value: Json | undefined, fallback: number): number {
  if (typeof value !== 'string') return fallback;
  const match = /^(-?\d+)(?:\.(\d{1,9}))?s$/.exec(value);
  if (!match) return fallback;
  const whole = Number(match[1]);
  // Nanoseconds as an integer, so `0.000000001s` is exactly 1 ns and not a float artefact.
  const nanos = match[2] ? Number(match[2].padEnd(9, '0')) : 0;
  return whole * 1000 + (match[1]?.startsWith('-') ? -nanos : nanos) / 1e6;
}

/** A wrapper or 64-bit value (number, or string in proto3 JSON), or the fallback when absent. */
export function numberOr(value: Json | undefined, fallback: number): number {
  if (typeof value === 'number') return value;
  if (typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value)))
    return Number(value);
  return fallback;
}

/** `type.Percent` (`{ value: 50 }`) as a number, or the fallback. */
export function percentOr(value: Json | undefined, fallback: number): number {
  return numberOr(objectOf(value).value, fallback);
}

/** A JSON list, or an empty one for anything else (absent, a scalar, an object). */
export function arrayOf(value: Json | undefined): Json[] {
  return Array.isArray(value) ? value : [];
}

/** Arrays of JSON objects from a repeated field, tolerating absence. */
export function listOf(value: Json | undefined): JsonObject[] {
  return Array.isArray(value) ? value.map((v) => objectOf(v)) : [];
}

/** The strings of a JSON list, or none for anything else. */
export function stringsOf(value: Json | undefined): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}

export function objectOf(value: Json | undefined): JsonObject {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? value : {};
}

export function stringOr(value: Json | undefined, fallback: string): string {
  return typeof value === 'string' && value !== '' ? value : fallback;
}
