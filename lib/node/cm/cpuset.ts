// CPU sets in the kernel's list format ("0-2,7"), as k8s.io/utils/cpuset parses and prints them.

/** A set of CPU (or NUMA node) ids, immutable; `toString()` prints the kernel's list format. */
export class CPUSet {
  readonly #ids: readonly number[];
  readonly #members: ReadonlySet<number>;
  constructor(ids: Iterable<number> = []) {
    this.#members = new Set(ids);
    this.#ids = [...this.#members].sort((a, b) => a - b);
  }
  get size(): number {
    return this.#ids.length;
  }
  isEmpty(): boolean {
    return this.#ids.length === 0;
  }
  has(id: number): boolean {
    return this.#members.has(id);
  }
  /** The ids, ascending. */
  list(): number[] {
    return [...this.#ids];
  }
  union(...others: CPUSet[]): CPUSet {
    return new CPUSet([...this.#ids, ...others.flatMap((o) => o.list())]);
  }
  intersection(other: CPUSet): CPUSet {
    return new CPUSet(this.#ids.filter((id) => other.has(id)));
  }
  difference(other: CPUSet): CPUSet {
    return new CPUSet(this.#ids.filter((id) => !other.has(id)));
  }
  isSubsetOf(other: CPUSet): boolean {
    return this.#ids.every((id) => other.has(id));
  }
  equals(other: CPUSet): boolean {
    return this.size === other.size && this.isSubsetOf(other);
  }
  filter(keep: (id: number) => boolean): CPUSet {
    return new CPUSet(this.#ids.filter(keep));
  }
  /** "0-2,7": runs of consecutive ids as ranges. */
  toString(): string {
    const parts: string[] = [];
    for (let i = 0; i < this.#ids.length; ) {
      let j = i;
      while (j + 1 < this.#ids.length && this.#ids[j + 1] === this.#ids[j]! + 1) j++;
      parts.push(i === j ? `${this.#ids[i]}` : `${this.#ids[i]}-${this.#ids[j]}`);
      i = j + 1;
    }
    return parts.join(",");
  }
}

const atoi = (text: string): number => {
  if (!/^[+-]?\d+$/.test(text)) throw new Error(`strconv.Atoi: parsing ${JSON.stringify(text)}: invalid syntax`);
  return Number(text);
};

/** Parses the kernel's list format ("" is the empty set); errors worded as cpuset.Parse's. */
export function parseCPUSet(text: string): CPUSet {
  const ids: number[] = [];
  if (text.trim() === "") return new CPUSet();
  for (const range of text.trim().split(",")) {
    const bounds = range.split("-");
    if (bounds.length === 1) ids.push(atoi(bounds[0]!));
    else if (bounds.length === 2) {
      const [start, end] = [atoi(bounds[0]!), atoi(bounds[1]!)];
      if (start > end) throw new Error(`invalid range "${range}" (${start} > ${end})`);
      for (let id = start; id <= end; id++) ids.push(id);
    } else throw new Error(`invalid range "${range}"`);
  }
  return new CPUSet(ids);
}

/**
 * kubeReserved and systemReserved as upstream applies reservedSystemCPUs: its CPU count becomes systemReserved
 * cpu and kubeReserved cpu is dropped (node allocatable then leaves exactly those CPUs out).
 */
export function withReservedSystemCPUs(settings: {
  kubeReserved: Record<string, string>;
  systemReserved: Record<string, string>;
  reservedCpus: string;
}) {
  if (!settings.reservedCpus) return { kube: settings.kubeReserved, system: settings.systemReserved };
  const { cpu: _, ...kube } = settings.kubeReserved;
  const count = parseCPUSet(settings.reservedCpus).size;
  return { kube, system: { ...settings.systemReserved, cpu: String(count) } };
}
