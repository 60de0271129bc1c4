// Kubernetes resource quantities ("100Mi", "0.5", "500m", "1e3") as numbers.

const SUFFIX: Record<string, number> = {
  "": 1,
  m: 1e-3,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};
const QUANTITY = /^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E)?)$/;

/** Parses a quantity into its value ("100Mi" → 104857600, "500m" → 0.5); undefined when malformed. */
export function parseQuantity(text: string | number): number | undefined {
  if (typeof text === "number") return Number.isFinite(text) ? text : undefined;
  const match = QUANTITY.exec(text.trim());
  if (!match) return undefined;
  const [, digits, exponent, suffix] = match;
  const value = Number(digits) * (exponent ? 10 ** Number(exponent.slice(1)) : SUFFIX[suffix ?? ""]!);
  return Number.isFinite(value) ? value : undefined;
}

/** CPU quantity in millicores ("250m" → 250, "1.5" → 1500). */
export function milliCpu(text: string | number): number | undefined {
  const value = parseQuantity(text);
  return value === undefined ? undefined : Math.round(value * 1000);
}
