/** Type guards for data crossing the webview boundary: checked, never cast. */

export type Guard<T> = (value: unknown) => value is T;

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export const isString: Guard<string> = (value): value is string => typeof value === "string";
export const isNumber: Guard<number> = (value): value is number => typeof value === "number" && Number.isFinite(value);
export const isBoolean: Guard<boolean> = (value): value is boolean => typeof value === "boolean";

export function isNullable<T>(guard: Guard<T>): Guard<T | null> {
  return (value): value is T | null => value === null || guard(value);
}

/** An optional field: absent (undefined) or valid. */
export function isOptional<T>(guard: Guard<T>): Guard<T | undefined> {
  return (value): value is T | undefined => value === undefined || guard(value);
}

export function isArrayOf<T>(guard: Guard<T>): Guard<T[]> {
  return (value): value is T[] => Array.isArray(value) && value.every((item: unknown) => guard(item));
}

export function isOneOf<const T extends readonly string[]>(values: T): Guard<T[number]> {
  return (value): value is T[number] => typeof value === "string" && values.includes(value);
}

/** A string-keyed map whose values pass `guard`. */
export function isMapOf<T>(guard: Guard<T>): Guard<Record<string, T>> {
  return (value): value is Record<string, T> => isRecord(value) && Object.values(value).every((v) => guard(v));
}

type Shape = Record<string, Guard<unknown>>;
type FromShape<S extends Shape> = { [K in keyof S]: S[K] extends Guard<infer T> ? T : never };

/** An object with (at least) these fields; extra fields are allowed and ignored. */
export function isObject<S extends Shape>(shape: S): Guard<FromShape<S>> {
  return (value): value is FromShape<S> =>
    isRecord(value) && Object.entries(shape).every(([key, guard]) => guard(value[key]));
}
