// authorization.mode RBAC on the compiled binary: a token-file identity bound to testdata/rbac/scraper.yaml
// reads /metrics and /stats/summary but not /exec, /run or /pods; an edit of the policy file is followed
// without a restart, and a broken edit leaves the last good policy in force.
import { afterAll, expect } from "bun:test";
import { copyFileSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describeWithServices } from "../../lib/testing/services.ts";
import { Kubelet, killKubeletsAfterAll, test } from "./harness-kubelet.ts";
import { baseFlags, freePort, removeDir, tempDir } from "./harness.ts";

const SCRAPER_TOKEN = "rbac-scraper-token";
const OTHER_TOKEN = "rbac-other-token";
const SCRAPER_ROLE = join(import.meta.dir, "../../testdata/rbac/scraper.yaml");

describeWithServices("authorization.mode RBAC with the example scraper role", (services) => {
  const dir = tempDir("rbac");
  const root = tempDir("rbac-root");
  const policy = join(dir, "policy.yaml");
  let kubelet: Kubelet;
  killKubeletsAfterAll();
  afterAll(() => {
    removeDir(dir);
    removeDir(root);
  });

  const status = async (token: string, method: string, path: string) =>
    (await kubelet.api(path, { method, headers: { authorization: `Bearer ${token}` } })).status;
  /** 401 or 403, or "in" for any answer past authorization (/stats/summary is 503 until the first stats pass). */
  const verdict = async (token: string, method: string, path: string) => {
    const code = await status(token, method, path);
    return code === 401 || code === 403 ? code : "in";
  };

  const start = async () => {
    copyFileSync(SCRAPER_ROLE, policy);
    // kube-apiserver's token-file format: token,user,uid,"groups"
    writeFileSync(join(dir, "tokens"), `${SCRAPER_TOKEN},prometheus,prometheus\n${OTHER_TOKEN},grafana,grafana\n`);
    writeFileSync(
      join(dir, "config.yaml"),
      `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
authentication:
  anonymous:
    enabled: false
authorization:
  mode: RBAC
  policyFile: ${policy}
`,
    );
    kubelet = new Kubelet(
      [
        "run",
        "--config_file",
        join(dir, "config.yaml"),
        ...baseFlags(services, root),
        "--auth_token_file",
        join(dir, "tokens"),
      ],
      await freePort(),
    );
    await kubelet.waitFor("the server", async () => (await status(SCRAPER_TOKEN, "GET", "/metrics")) === 200, 20_000);
  };

  test("the scraper's token reads /metrics and /stats/summary, and gets 403 on /exec, /run, /pods and logs", async () => {
    await start();
    expect({
      metrics: await verdict(SCRAPER_TOKEN, "GET", "/metrics"),
      cadvisor: await verdict(SCRAPER_TOKEN, "GET", "/metrics/cadvisor"),
      summary: await verdict(SCRAPER_TOKEN, "GET", "/stats/summary"),
      exec: await verdict(SCRAPER_TOKEN, "GET", "/exec/default/none/app?command=id"),
      run: await verdict(SCRAPER_TOKEN, "POST", "/run/default/none/app?cmd=id"),
      pods: await verdict(SCRAPER_TOKEN, "GET", "/pods"),
      containerLogs: await verdict(SCRAPER_TOKEN, "GET", "/containerLogs/default/none/app"),
      otherMetrics: await verdict(OTHER_TOKEN, "GET", "/metrics"),
    }).toEqual({
      metrics: "in",
      cadvisor: "in",
      summary: "in",
      exec: 403,
      run: 403,
      pods: 403,
      containerLogs: 403,
      otherMetrics: 403,
    });
    expect(await status(SCRAPER_TOKEN, "GET", "/metrics")).toBe(200);
  }, 60_000);

  test("an edit of the policy file is followed without a restart; a broken edit keeps the last good policy", async () => {
    // Grafana joins the binding (an atomic save: a new file renamed over the old one).
    const text = readFileSync(SCRAPER_ROLE, "utf8").replace(
      "  - kind: ServiceAccount",
      "  - kind: User\n    apiGroup: rbac.authorization.k8s.io\n    name: grafana\n  - kind: ServiceAccount",
    );
    writeFileSync(`${policy}.new`, text);
    renameSync(`${policy}.new`, policy);
    await kubelet.waitFor("grafana let in", async () => (await status(OTHER_TOKEN, "GET", "/metrics")) === 200, 20_000);
    // A broken edit in place: logged with its field path, and the last good policy still answers.
    writeFileSync(policy, text.replace('verbs: ["get"]', "verbs: get"));
    const logged = await kubelet.waitFor(
      "the broken edit logged",
      () =>
        kubelet.output
          .split("\n")
          .filter((line) => line.startsWith("{"))
          .map((line) => (JSON.parse(line) as { msg: string }).msg)
          .find((msg) => msg.startsWith(`cannot reload authorization policy "${policy}"`)),
      20_000,
    );
    expect(logged).toContain(`${policy}[0] ClusterRole kubelet-scraper: rules[0].verbs: Invalid value: "get"`);
    expect(await status(OTHER_TOKEN, "GET", "/metrics")).toBe(200);
    expect(await status(SCRAPER_TOKEN, "GET", "/exec/default/none/app?command=id")).toBe(403);
    await kubelet.stop("SIGKILL");
  }, 60_000);
});
