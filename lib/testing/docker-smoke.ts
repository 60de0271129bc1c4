// Smoke check of the Docker runtime's streaming paths on whichever JS runtime runs it (bun, deno,
// the compiled binary): exec hijack + demux, logs follow, events. Usage: docker-smoke.ts ENDPOINT IMAGE
import { testContainerConfig, testSandboxConfig } from "./cri-configs.ts";
import { createDockerRuntime } from "../container/docker/docker.ts";
import { LABEL } from "../container/runtime.ts";

const [endpoint, image, pause] = process.argv.slice(2).filter((a) => !a.endsWith("docker-smoke.ts"));
if (!endpoint || !image || !pause) throw new Error("usage: docker-smoke.ts ENDPOINT IMAGE PAUSE_IMAGE");
const runtime = createDockerRuntime({ endpoint, shim: { podInfraImage: pause, podNetworkMode: "none" } });
const uid = `rt-smoke-${process.pid}-${Date.now()}`;
const events = new AbortController();
const actions: string[] = [];
const watching = (async () => {
  for await (const e of runtime.events(events.signal)) if (e.labels[LABEL.podUid] === uid) actions.push(e.type);
})();
await new Promise((resolve) => setTimeout(resolve, 100));
const sandbox = testSandboxConfig(uid, "smoke");
const sandboxId = await runtime.runPodSandbox(sandbox);
const command = ["sh", "-c", "echo one; sleep 0.3; echo two; exec sleep 60"];
const id = await runtime.createContainer(sandboxId, testContainerConfig(sandbox, "app", 0, image, command), sandbox);
try {
  await runtime.startContainer(id);
  const exec = await runtime.exec(id, ["sh", "-c", "echo out; echo err >&2; exit 3"], { timeoutMs: 5000 });
  const follow = new AbortController();
  let logs = "";
  for await (const chunk of runtime.logs(id, { follow: true, signal: follow.signal })) {
    logs += new TextDecoder().decode(chunk);
    if (logs.includes("two")) follow.abort();
  }
  await runtime.stopContainer(id, 0);
  await new Promise((resolve) => setTimeout(resolve, 200));
  console.log(JSON.stringify({ exec, logs, actions }));
} finally {
  await runtime.removeContainer(id);
  await runtime.removePodSandbox(sandboxId);
  events.abort();
  await watching;
}
