import { describe, expect, test } from "bun:test";
import { chooseConfigFile, configFileNotice, INSTALLED_CONFIG_FILE } from "./config-file-path.ts";

const installed = (path: string) => path === INSTALLED_CONFIG_FILE;
const nothing = () => false;

describe("chooseConfigFile", () => {
  test("reads the installed config file when the command line and the environment name none", () => {
    expect(chooseConfigFile(undefined, {}, installed)).toEqual({ path: INSTALLED_CONFIG_FILE, from: "installed" });
  });

  test("reads no file when none is installed", () => {
    expect(chooseConfigFile(undefined, {}, nothing)).toEqual({ from: "none" });
  });

  test("--config_file wins over the environment and the installed file", () => {
    expect(chooseConfigFile("/tmp/k.yaml", { KUBELET_CONFIG_FILE: "/tmp/env.yaml" }, installed)).toEqual({
      path: "/tmp/k.yaml",
      from: "flag",
    });
  });

  test('--config_file="" reads no file, even with one installed', () => {
    expect(chooseConfigFile("", { KUBELET_CONFIG_FILE: "/tmp/env.yaml" }, installed)).toEqual({ from: "none" });
  });

  test("KUBELET_CONFIG_FILE replaces the installed path and is read even if missing, so a typo is an error", () => {
    expect(chooseConfigFile(undefined, { KUBELET_CONFIG_FILE: "/tmp/env.yaml" }, nothing)).toEqual({
      path: "/tmp/env.yaml",
      from: "env",
    });
  });

  test("an empty KUBELET_CONFIG_FILE reads no file, even with one installed", () => {
    expect(chooseConfigFile(undefined, { KUBELET_CONFIG_FILE: "" }, installed)).toEqual({ from: "none" });
  });
});

describe("configFileNotice", () => {
  test("names a file the command line did not name, and where it came from", () => {
    expect(configFileNotice({ path: INSTALLED_CONFIG_FILE, from: "installed" })).toContain(
      `using the config file ${INSTALLED_CONFIG_FILE} (the installed one;`,
    );
    expect(configFileNotice({ path: "/tmp/env.yaml", from: "env" })).toBe(
      "using the config file /tmp/env.yaml (from $KUBELET_CONFIG_FILE)",
    );
  });

  test("says nothing for a file given by --config_file, or none", () => {
    expect(configFileNotice({ path: "/tmp/k.yaml", from: "flag" })).toBeUndefined();
    expect(configFileNotice({ from: "none" })).toBeUndefined();
  });
});
