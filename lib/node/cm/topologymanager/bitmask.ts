// NUMA node bitmasks, as topologymanager/bitmask: a set of node ids kept as bits, with upstream's ordering.

/** A NUMA affinity: bit n set = node n. Immutable. */
export class BitMask {
  constructor(readonly bits: number) {}
  static of(...nodes: number[]): BitMask {
    return new BitMask(nodes.reduce((mask, node) => mask | (1 << node), 0));
  }
  count(): number {
    let n = 0;
    for (let b = this.bits; b; b &= b - 1) n++;
    return n;
  }
  isSet(node: number): boolean {
    return (this.bits & (1 << node)) !== 0;
  }
  /** The set nodes, ascending. */
  getBits(): number[] {
    const nodes: number[] = [];
    for (let node = 0; 1 << node <= this.bits && node < 31; node++) if (this.isSet(node)) nodes.push(node);
    return nodes;
  }
  isEqual(other: BitMask): boolean {
    return this.bits === other.bits;
  }
  /** Fewer nodes, or as many with the lower value (upstream's IsNarrowerThan). */
  isNarrowerThan(other: BitMask): boolean {
    return this.count() === other.count() ? this.bits < other.bits : this.count() < other.count();
  }
  toString(): string {
    return this.getBits().join("");
  }
}

/** bitmask.And: the nodes every mask has. */
export const andMasks = (first: BitMask, ...rest: BitMask[]): BitMask =>
  new BitMask(rest.reduce((bits, mask) => bits & mask.bits, first.bits));

/** Every non-empty combination of `nodes`, smallest first, each size in lexicographic order (IterateBitMasks). */
export function iterateBitMasks(nodes: number[], visit: (mask: BitMask) => void): void {
  const combine = (size: number, start: number, chosen: number[]) => {
    if (chosen.length === size) return visit(BitMask.of(...chosen));
    for (let i = start; i < nodes.length; i++) combine(size, i + 1, [...chosen, nodes[i]!]);
  };
  for (let size = 1; size <= nodes.length; size++) combine(size, 0, []);
}
