// The Prometheus text format (0.0.4) of one metric family: HELP, TYPE and its samples, labels in
// order of name as client_golang writes them, an optional millisecond timestamp per sample.
type Labels = Record<string, string>;

/** One sample of a family; `timestamp` in ms since the epoch. */
export interface Sample {
  labels?: Labels;
  value: number;
  timestamp?: number;
  /** Appended to the family's name (`_bucket`, `_sum`, `_count`). */
  suffix?: string;
}

const escape = (value: string) => value.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"');

/** `{a="1",b="2"}` with names sorted; "" without labels. */
export function labelText(labels: Labels): string {
  const keys = Object.keys(labels).sort();
  return keys.length ? `{${keys.map((k) => `${k}="${escape(labels[k]!)}"`).join(",")}}` : "";
}

/** A number as Prometheus writes it (+Inf, -Inf, NaN; integers without a fraction). */
export function formatValue(value: number): string {
  if (Number.isNaN(value)) return "NaN";
  if (value === Infinity) return "+Inf";
  if (value === -Infinity) return "-Inf";
  return String(value);
}

/** HELP text as the format wants it: backslashes and newlines escaped (quotes are not). */
export function helpText(help: string): string {
  return help.replace(/\\/g, "\\\\").replace(/\n/g, "\\n");
}

/** A family's lines, without the trailing newline; "" for a family without samples (client_golang writes none). */
export function renderFamily(
  name: string,
  help: string,
  type: "counter" | "gauge" | "histogram",
  samples: Sample[],
): string {
  if (samples.length === 0) return "";
  return [
    `# HELP ${name} ${helpText(help)}`,
    `# TYPE ${name} ${type}`,
    ...samples.map(
      (s) =>
        `${name}${s.suffix ?? ""}${labelText(s.labels ?? {})} ${formatValue(s.value)}${s.timestamp !== undefined ? ` ${Math.round(s.timestamp)}` : ""}`,
    ),
  ].join("\n");
}

/**
 * `render` wrapped to run again only when one of its arguments changed (by identity): a scrape of an unchanged
 * collection is answered with the text the last one rendered.
 */
export function renderedOnce<Args extends unknown[], Text = string>(
  render: (...args: Args) => Text,
): (...args: Args) => Text {
  let last: { args: Args; text: Text } | undefined;
  return (...args) => {
    if (last && last.args.length === args.length && last.args.every((a, i) => a === args[i])) return last.text;
    last = { args, text: render(...args) };
    return last.text;
  };
}
