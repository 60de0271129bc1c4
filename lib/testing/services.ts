// Where the real test services are (started by scripts/services.sh), and the rule for
// when they are missing: skipped on a developer's machine, a failure under CI=true.
import { describe, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { standInProcSys } from "./proc-sys.ts";

// Every kubelet a test or bench spawns inherits this: none may change the machine's kernel settings.
process.env.KUBELET_TEST_PROC_SYS ||= standInProcSys();

/** Addresses of the real services the end-to-end tests drive. */
export interface TestServices {
  dir: string;
  /** `unix:///…/docker.sock` of the private dockerd (no bridge network). */
  dockerHost: string;
  /** `http://127.0.0.1:PORT` of a single-member etcd. */
  etcd: string;
  /** `127.0.0.1:PORT` of the registry (also dockerd's Docker Hub mirror). */
  registry: string;
  /**
   * Local images (pinned tags, so pull policy is IfNotPresent): busybox with sh/sleep/httpd/nc…, and a pause image
   * that exits on SIGTERM.
   */
  busybox: string;
  pause: string;
  /** `unix:///…/containerd.sock` of the private containerd (CRI plugin, loopback-only CNI stub). */
  containerd: string;
  /** `unix:///…/containerd.sock` of the private containerd 1.7 (Debian 13's, beside 1.6), when services.sh started it. */
  containerd17?: string;
}

/** Reads the services' addresses from the environment or from $KUBELET_TEST_DIR/env. */
export function testServices(): TestServices | undefined {
  const dir = process.env.KUBELET_TEST_DIR ?? "/tmp/kubelet-test-services";
  const env: Record<string, string | undefined> = { ...process.env };
  const file = join(dir, "env");
  if (!env.KUBELET_TEST_DOCKER_HOST && existsSync(file)) {
    for (const line of readFileSync(file, "utf8").split("\n")) {
      const eq = line.indexOf("=");
      if (eq > 0) env[line.slice(0, eq)] = line.slice(eq + 1);
    }
  }
  if (
    !env.KUBELET_TEST_DOCKER_HOST ||
    !env.KUBELET_TEST_ETCD ||
    !env.KUBELET_TEST_REGISTRY ||
    !env.KUBELET_TEST_CONTAINERD
  )
    return undefined;
  return {
    dir: env.KUBELET_TEST_DIR ?? dir,
    dockerHost: env.KUBELET_TEST_DOCKER_HOST,
    etcd: env.KUBELET_TEST_ETCD,
    registry: env.KUBELET_TEST_REGISTRY,
    busybox: env.KUBELET_TEST_BUSYBOX ?? "local/busybox:stable",
    pause: env.KUBELET_TEST_PAUSE ?? "local/pause:latest",
    containerd: env.KUBELET_TEST_CONTAINERD,
    containerd17: env.KUBELET_TEST_CONTAINERD_17 || undefined,
  };
}

/**
 * `describe` for tests that need the real services. Without them the block is skipped,
 * except under CI=true, where their absence is reported as a failing test.
 */
export function describeWithServices(name: string, fn: (services: TestServices) => void): void {
  const services = testServices();
  if (services) return describe(name, () => fn(services));
  if (process.env.CI === "true") {
    return describe(name, () => {
      test("has the real services it needs", () => {
        throw new Error("test services are not running: run `bash scripts/services.sh up` (CI=true forbids skipping)");
      });
    });
  }
  describe.skip(name, () => fn(undefined as never));
}

/** Path of the compiled binary the end-to-end tests run (built by `npm run build`). */
export const KUBELET_BINARY = join(import.meta.dir, "../../dist/kubelet");

/**
 * `describeWithServices` with a block per containerd the services run, "on containerd 1.6" and
 * "on containerd 1.7", with that containerd's socket. Without 1.7 its block is skipped, except under CI=true.
 */
export function describeOnContainerd(
  name: string,
  fn: (services: TestServices, endpoint: string, version: "1.6" | "1.7") => void,
): void {
  describeWithServices(name, (services) => {
    describe("on containerd 1.6", () => fn(services, services.containerd, "1.6"));
    const containerd17 = services.containerd17;
    if (containerd17) describe("on containerd 1.7", () => fn(services, containerd17, "1.7"));
    else if (process.env.CI === "true")
      test("has containerd 1.7 among the test services", () => {
        throw new Error(
          "containerd 1.7 is not among the test services: run `bash scripts/services.sh up` (CI=true forbids skipping)",
        );
      });
    else describe.skip("on containerd 1.7 (not among the test services)", () => {});
  });
}
