import { describe, expect, test } from "bun:test";
import { tabwrite } from "./tabwriter.ts";

describe("tabwrite", () => {
  test("lays out kubectl get's table as kubectl printed it (minwidth 6, padding 3, the last column unpadded)", () => {
    const text = "NAME\tSTATUS\tROLES\tAGE\tVERSION\nvm\tReady\t<none>\t0s\tv0.1.0\n";
    // kubectl 1.32's own output for the same Table.
    expect(tabwrite(text, 6, 3)).toBe(
      "NAME   STATUS   ROLES    AGE   VERSION\nvm     Ready    <none>   0s    v0.1.0\n",
    );
  });

  test("aligns a column only over the consecutive lines that have it, as Go's tabwriter does", () => {
    const text =
      "Name:\tweb\nLabels:\tapp=web\n\ttier=front\nContainers:\n  c:\n    Image:\tbusybox\n    Restart Count:\t0\n";
    expect(tabwrite(text, 0, 2)).toBe(
      [
        "Name:    web",
        "Labels:  app=web",
        "         tier=front",
        "Containers:",
        "  c:",
        "    Image:          busybox",
        "    Restart Count:  0",
        "",
      ].join("\n"),
    );
  });

  test("pads a narrow column to the minimum width", () => {
    expect(tabwrite("A\tB\nx\ty\n", 6, 3)).toBe("A     B\nx     y\n");
  });

  test("counts characters, not bytes", () => {
    expect(tabwrite("é\tx\nab\ty", 0, 1)).toBe("é  x\nab y");
  });
});
