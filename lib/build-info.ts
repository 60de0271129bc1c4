// The version and commit build.ts bakes into the binary (--define); the package version and "dev" from source.
import pkg from "../package.json" with { type: "json" };

declare const KUBELET_COMMIT: string | undefined;
declare const KUBELET_VERSION: string | undefined;

/** This build's version (without a leading v) and commit. */
export function buildInfo(): { version: string; commit: string } {
  return {
    version: typeof KUBELET_VERSION === "string" ? KUBELET_VERSION : pkg.version,
    commit: typeof KUBELET_COMMIT === "string" ? KUBELET_COMMIT : "dev",
  };
}
