import { describe, expect, test } from "bun:test";
import { usageSample } from "../testing/usage-samples.ts";
import type { UsageSample } from "../node/stats/usage-sampler.ts";
import { type CadvisorMetricsDeps, createCadvisorMetrics } from "./cadvisor-metrics.ts";

/** The renderer, its bytes read as text. */
const cadvisorText = (deps: CadvisorMetricsDeps) => {
  const metrics = createCadvisorMetrics(deps);
  return { render: async () => Buffer.from(await metrics.render()).toString() };
};
/** What a renderer that never rendered before writes of `read`. */
const firstRender = (read: UsageSample) =>
  cadvisorText({ sample: async () => read, imageFsCapacity: () => 50e9 }).render();

describe("/metrics/cadvisor", () => {
  test("labels the root, pod and container cgroups as cAdvisor does through the kubelet, with the sample's timestamp", async () => {
    const text = await cadvisorText({
      sample: async () => usageSample(1_700_000_000_000),
      imageFsCapacity: () => 50e9,
    }).render();
    const series = (name: string) =>
      text.split("\n").filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `));
    expect(series("container_cpu_usage_seconds_total")).toEqual([
      'container_cpu_usage_seconds_total{container="",cpu="total",id="/",image="",name="",namespace="",pod=""} 100 1700000000000',
      'container_cpu_usage_seconds_total{container="",cpu="total",id="/kubepods/podu1",image="",name="",namespace="default",pod="web"} 3 1700000000000',
      'container_cpu_usage_seconds_total{container="app",cpu="total",id="/kubepods/podu1/app-id",image="local/busybox:stable",name="k8s_app_web_default_u1_0",namespace="default",pod="web"} 2 1700000000000',
      'container_cpu_usage_seconds_total{container="POD",cpu="total",id="/kubepods/podu1/pause-id",image="",name="pause-id",namespace="default",pod="web"} 0.01 1700000000000',
    ]);
    // The pod's network is reported on its sandbox only; limits and quota from the container's cgroup.
    expect(series("container_network_receive_bytes_total")).toEqual([
      'container_network_receive_bytes_total{container="POD",id="/kubepods/podu1/pause-id",image="",interface="eth0",name="pause-id",namespace="default",pod="web"} 10 1700000000000',
    ]);
    expect(series("container_spec_memory_limit_bytes")[2]).toMatch(/container="app".* 67108864 1700000000000$/);
    expect(series("container_spec_cpu_quota")).toEqual([expect.stringMatching(/container="app".* 10000 /)]);
    expect(series("container_fs_usage_bytes")).toEqual([expect.stringMatching(/container="app",device="".* 8192 /)]);
    expect(series("container_fs_limit_bytes")).toEqual([expect.stringMatching(/container="app".* 50000000000 /)]);
    expect(series("container_last_seen")).toHaveLength(4);
    expect(series("machine_cpu_cores")).toEqual([
      expect.stringMatching(/^machine_cpu_cores\{boot_id=".*",machine_id=".*",system_uuid=".*"\} \d+$/),
    ]);
  });

  test("without pod cgroups only the machine series and container_scrape_error are written", async () => {
    const text = await cadvisorText({
      sample: async () => undefined,
      imageFsCapacity: () => undefined,
    }).render();
    expect(
      text
        .split("\n")
        .filter((l) => l && !l.startsWith("#"))
        .map((l) => l.split(/[{ ]/)[0]),
    ).toEqual(["container_scrape_error", "machine_cpu_cores", "machine_memory_bytes"]);
  });

  test("a scrape served the same cgroup read is answered with the text already rendered; a new read is rendered", async () => {
    let read = usageSample(1_700_000_000_000);
    const cadvisor = createCadvisorMetrics({ sample: async () => read, imageFsCapacity: () => 50e9 });
    const first = await cadvisor.render();
    // Changed in place, the same read is not rendered again: the text shows the old value.
    read.pods[0]!.stats.cpuUsageNanoseconds = 9e9;
    expect(await cadvisor.render()).toBe(first);
    read = usageSample(1_700_000_010_000);
    expect(Buffer.from(await cadvisor.render()).toString()).toContain(" 1700000010000");
  });

  test("a scraped kubelet's next read is written as a first scrape would write it: new values, a new interface, a container gone", async () => {
    let read = usageSample(1_700_000_000_000);
    const scraped = cadvisorText({ sample: async () => read, imageFsCapacity: () => 50e9 });
    await scraped.render();
    read = usageSample(1_700_000_015_000);
    const pod = read.pods[0]!;
    pod.stats.cpuUsageNanoseconds = 4e9;
    pod.stats.memoryRssBytes = 123;
    pod.interfaces[0]!.name = "net1";
    pod.containers = pod.containers.filter((c) => c.sandbox);
    const again = await scraped.render();
    expect(again).toContain(
      'container_memory_rss{container="",id="/kubepods/podu1",image="",name="",namespace="default",pod="web"} 123 1700000015000',
    );
    expect(again).not.toContain('container="app"');
    expect(again).toBe(await firstRender(read));
  });

  test("a read whose values mostly stood still is written as a first render would write it, every line with the new timestamp", async () => {
    /** Three pods named p0…p2 as usageSample's, read at `time`; p1's app container has used `cpu` ns. */
    const read = (time: number, cpu: number): UsageSample => {
      const pods = [0, 1, 2].map((i) => {
        const pod = usageSample(time).pods[0]!;
        pod.name = `p${i}`;
        pod.cgroup = `/kubepods/pod${i}`;
        for (const c of pod.containers) c.cgroup = `${pod.cgroup}/${c.id}`;
        if (i === 1) pod.containers[0]!.stats.cpuUsageNanoseconds = cpu;
        return pod;
      });
      return { ...usageSample(time), pods };
    };
    let sample = read(1_700_000_000_000, 1e9);
    const scraped = cadvisorText({ sample: async () => sample, imageFsCapacity: () => 50e9 });
    await scraped.render();
    for (const [time, cpu] of [
      [1_700_000_015_000, 1e9],
      [1_700_000_030_000, 2e9],
      [1_700_000_045_000, 2e9],
    ] as const) {
      sample = read(time, cpu);
      const text = await scraped.render();
      expect(text).toBe(await firstRender(sample));
      expect(text).not.toContain(` ${time - 15_000}\n`);
    }
  });

  test("a timestamp one digit longer than the last read's is written on every line all the same", async () => {
    let sample = usageSample(9_999_999_999_000);
    const scraped = cadvisorText({ sample: async () => sample, imageFsCapacity: () => 50e9 });
    await scraped.render();
    sample = usageSample(10_000_000_014_000);
    expect(await scraped.render()).toBe(await firstRender(sample));
  });
});
