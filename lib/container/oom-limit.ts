// Some machines refuse a negative oom_score_adj: lowering it needs CAP_SYS_RESOURCE, and where the
// bounding set lacks it runc fails every such container ("can't get final child's PID from pipe").
// The limit is read once from /proc/self/status and every request to the runtime is clamped to it.
import type { Logger } from "../log.ts";
import type { Runtime } from "./runtime.ts";

const CAP_SYS_RESOURCE = 24n;

/** The lowest oom_score_adj processes started from here may get: -1000, or 0 without CAP_SYS_RESOURCE. */
export function oomScoreFloor(procSelfStatus: string): number {
  const bounding = /^CapBnd:\s*([0-9a-f]+)\s*$/m.exec(procSelfStatus);
  if (!bounding) return -1000;
  return (BigInt(`0x${bounding[1]}`) >> CAP_SYS_RESOURCE) & 1n ? -1000 : 0;
}

/** The runtime with every container's oom_score_adj raised to `floor`; says so once when it will. */
export function clampOomScores(runtime: Runtime, floor: number, log: Logger): Runtime {
  if (floor <= -1000) return runtime;
  log.info(
    `this machine refuses a negative oom_score_adj (no CAP_SYS_RESOURCE in the bounding set): container OOM scores below ${floor} are raised to ${floor}`,
  );
  return new Proxy(runtime, {
    get(target, key) {
      const value = Reflect.get(target, key, target);
      if (key !== "createContainer") return typeof value === "function" ? value.bind(target) : value;
      return (body: Parameters<Runtime["createContainer"]>[0]) => {
        const asked = body.HostConfig.OomScoreAdj;
        if (asked === undefined || asked >= floor) return target.createContainer(body);
        return target.createContainer({ ...body, HostConfig: { ...body.HostConfig, OomScoreAdj: floor } });
      };
    },
  });
}
