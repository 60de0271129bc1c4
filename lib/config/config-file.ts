// The config file (--config_file): KubeletConfiguration (kubelet.config.k8s.io/v1beta1) field
// names or this kubelet's flag names, read into raw values by config key.
import { readFileSync } from "node:fs";
import { parseYaml } from "../api/manifest.ts";
import { KubeletError } from "../api/types.ts";
import type { KubeletConfig } from "./config-types.ts";
import { FLAGS, findFlag } from "./flags.ts";
import {
  closestName,
  configurationField,
  fieldNamesUnder,
  isZeroValue,
  typeMismatch,
} from "./kubelet-configuration.ts";

/** A field of the config file that is accepted but has no effect here, and why. */
export interface ConfigNote {
  field: string;
  why: string;
}

export interface ConfigFileValues {
  values: Partial<Record<keyof KubeletConfig, unknown>>;
  /** The file's name for each value, for error messages. */
  fields: Partial<Record<keyof KubeletConfig, string>>;
  notApplicable: ConfigNote[];
  /** Every problem with the file's fields, each naming the file and the field (none = usable). */
  errors: string[];
}

/**
 * Reads a config file: KubeletConfiguration (kubelet.config.k8s.io/v1beta1) field names, or this
 * kubelet's flag names. Unknown fields (with the closest real name), wrong types and values that
 * cannot be honoured safely are errors naming the file and the field, all of them collected; a file
 * that cannot be read or parsed, or is not a mapping, throws.
 */
export function readConfigFile(path: string): ConfigFileValues {
  const where = `--config_file "${path}": `;
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    throw new KubeletError("InvalidConfigFile", `cannot read --config_file "${path}": ${(error as Error).message}`);
  }
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (error) {
    throw new KubeletError("InvalidConfigFile", `cannot parse --config_file "${path}": ${(error as Error).message}`);
  }
  const out: ConfigFileValues = { values: {}, fields: {}, notApplicable: [], errors: [] };
  const fail = (message: string) => void out.errors.push(where + message);
  if (doc === null || doc === undefined) return out;
  if (typeof doc !== "object" || Array.isArray(doc))
    throw new KubeletError("InvalidConfigFile", `${where}expected a mapping of settings`);
  const { kind, apiVersion, ...fields } = doc as Record<string, unknown>;
  if (kind !== undefined && kind !== "KubeletConfiguration")
    fail(`kind: Unsupported value: "${kind}": supported values: "KubeletConfiguration"`);
  if (apiVersion !== undefined && !/^kubelet\.config\.k8s\.io\/v1(beta1)?$/.test(String(apiVersion)))
    fail(`apiVersion: Unsupported value: "${apiVersion}": supported values: "kubelet.config.k8s.io/v1beta1"`);
  const walk = (mapping: Record<string, unknown>, parent: string) => {
    for (const [name, value] of Object.entries(mapping)) {
      const fieldPath = parent ? `${parent}.${name}` : name;
      const row = configurationField(fieldPath);
      if (!row) {
        const spec = parent ? undefined : findFlag(name);
        if (spec) {
          out.values[spec.key] = value;
          out.fields[spec.key] = name;
          continue;
        }
        const guess = closestName(name, [...fieldNamesUnder(parent), ...(parent ? [] : FLAGS.map((f) => f.flag))]);
        fail(
          `unknown field "${fieldPath}"${guess ? ` (did you mean ${parent ? `${parent}.` : ""}${guess}?)` : ""}: settings are KubeletConfiguration fields (kubelet.config.k8s.io/v1beta1) or flag names such as sync_frequency`,
        );
        continue;
      }
      const expected = typeMismatch(row.type, value);
      if (expected) {
        fail(`${fieldPath}: expected ${expected}, got ${JSON.stringify(value)}`);
        continue;
      }
      if (value === null || value === undefined) continue;
      const refusal = row.refuse?.(value);
      if (refusal) {
        fail(`${fieldPath}: ${refusal}`);
        continue;
      }
      if (row.type === "object") walk(value as Record<string, unknown>, fieldPath);
      else if (row.key) {
        if (!row.pointer && isZeroValue(value)) continue;
        out.values[row.key] = row.convert ? row.convert(value) : value;
        out.fields[row.key] = fieldPath;
      } else if (row.notApplicable && (row.pointer || !isZeroValue(value)))
        out.notApplicable.push({ field: fieldPath, why: row.notApplicable });
    }
  };
  walk(fields, "");
  return out;
}
