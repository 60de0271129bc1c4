// The decorators the composition root puts around every runtime, in order: node scoping
// (node-scoped.ts), then, when the kubelet keeps metrics, the runtime operation metrics
// (instrumented.ts). One function, so run, runonce and plan wrap alike and a test drives calls
// through the very stack the kubelet uses.
import type { KubeletMetrics } from "../metrics.ts";
import { instrumentRuntime } from "./instrumented.ts";
import { scopeRuntimeToNode } from "./node-scoped.ts";
import type { Runtime } from "./runtime.ts";

export interface RuntimeDecorations {
  /** The kubelet's node name: it sees only that node's containers. */
  nodeName: string;
  /** kubelet_runtime_operations_*: run records them; runonce and plan keep no metrics. */
  metrics?: KubeletMetrics;
}

/** `runtime` as the rest of the kubelet sees it. */
export function decorateRuntime(runtime: Runtime, decorations: RuntimeDecorations): Runtime {
  const scoped = scopeRuntimeToNode(runtime, decorations.nodeName);
  return decorations.metrics ? instrumentRuntime(scoped, decorations.metrics) : scoped;
}
