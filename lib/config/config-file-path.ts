// Which config file a command reads: --config_file when given ("" = none), else $KUBELET_CONFIG_FILE when set
// ("" = none), else the file install.sh writes, /etc/kubelet/config.yaml, when it exists.
import { existsSync } from "node:fs";

/** Where install.sh writes the node's config file (its default --config-dir, /etc/kubelet). */
export const INSTALLED_CONFIG_FILE = "/etc/kubelet/config.yaml";

/** The environment variable that replaces INSTALLED_CONFIG_FILE (tests, a node installed with --config-dir). */
export const CONFIG_FILE_ENV = "KUBELET_CONFIG_FILE";

/** The config file chosen and why: given by the flag, by the environment, found installed, or none. */
export interface ConfigFileChoice {
  path?: string;
  from: "flag" | "env" | "installed" | "none";
}

/**
 * The config file to read. `given` is --config_file as typed (undefined when absent). A path from the flag or the
 * environment is read whether or not it exists (a typo is an error); the installed file only when it exists.
 */
export function chooseConfigFile(
  given: string | undefined,
  env: Record<string, string | undefined>,
  exists: (path: string) => boolean = existsSync,
): ConfigFileChoice {
  if (given !== undefined) return given === "" ? { from: "none" } : { path: given, from: "flag" };
  const fromEnv = env[CONFIG_FILE_ENV];
  if (fromEnv !== undefined) return fromEnv === "" ? { from: "none" } : { path: fromEnv, from: "env" };
  return exists(INSTALLED_CONFIG_FILE) ? { path: INSTALLED_CONFIG_FILE, from: "installed" } : { from: "none" };
}

/** The line that says which file a command read when the command line did not name it; undefined otherwise. */
export function configFileNotice(choice: ConfigFileChoice): string | undefined {
  if (choice.from === "env") return `using the config file ${choice.path} (from $${CONFIG_FILE_ENV})`;
  if (choice.from === "installed")
    return `using the config file ${choice.path} (the installed one; --config_file FILE reads another, --config_file="" none)`;
  return undefined;
}
