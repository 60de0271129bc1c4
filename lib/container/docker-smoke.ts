// Smoke check of the Docker runtime's streaming paths on whichever JS runtime runs it (bun, deno,
// the compiled binary): exec hijack + demux, logs follow, events. Usage: docker-smoke.ts ENDPOINT IMAGE
import { createDockerRuntime } from "./docker.ts";
import { LABEL } from "./runtime.ts";

const [endpoint, image] = process.argv.slice(2).filter((a) => !a.endsWith("docker-smoke.ts"));
if (!endpoint || !image) throw new Error("usage: docker-smoke.ts ENDPOINT IMAGE");
const runtime = createDockerRuntime({ endpoint });
const uid = `rt-smoke-${process.pid}-${Date.now()}`;
const events = new AbortController();
const actions: string[] = [];
const watching = (async () => {
  for await (const e of runtime.events(events.signal)) if (e.labels[LABEL.podUid] === uid) actions.push(e.action);
})();
await new Promise((resolve) => setTimeout(resolve, 100));
const id = await runtime.createContainer({
  name: `k8s_app_${uid}_default_${uid}_0`,
  Image: image,
  Cmd: ["sh", "-c", "echo one; sleep 0.3; echo two; exec sleep 60"],
  Labels: { [LABEL.podUid]: uid },
  HostConfig: { NetworkMode: "none" },
});
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
  events.abort();
  await watching;
}
