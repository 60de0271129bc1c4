// Decodes the CRI's list responses (ListContainers, ListPodSandbox) reusing the object decoded earlier for
// every item that is still the same version. The generic PLEG relists every second and almost every item
// comes back as it was, so only new and changed items pay for protobuf decoding and object building,
// which was most of the idle kubelet's CPU on the CRI (bench/results.md, issue 16).
//
// Bytes cannot tell "the same" (the runtime writes label maps in Go's random map order, so one item's
// bytes differ from one list to the next): a few fields can. In runtime.v1 a container's or sandbox's
// fields are fixed when it is created except its state, so (id, state) names one version of an item.
// The response is walked at the wire level, so this file needs no protobuf library: the item decoder is
// given. Reused items are shared between callers, so they are frozen: a caller that tried to change one
// would throw instead of corrupting the next list.

/** Decodes one item's bytes into the object callers see. */
export type ItemDecoder<T> = (bytes: Uint8Array) => T;

export interface ListDecoderOptions {
  /** Field number of the repeated item field in the response message (ListContainersResponse.containers: 1). */
  field: number;
  /** Field numbers of the item that together name one version of it (Container: id 1, state 6). */
  version: number[];
  /** Least number of items kept between lists before the older half is dropped (default 256). */
  minCapacity?: number;
}

/** A response decoder: bytes of the whole response → its items. */
export type ListDecoder<T> = (response: Uint8Array) => T[];

/**
 * A decoder for responses of the form `message R { repeated Item items = field; }`. Its cache keeps two
 * generations: an item found in the older one moves to the newer, and when the newer outgrows twice the
 * largest response seen, the older is dropped. Items no longer listed thus go within two rounds, and
 * the filtered lists between full ones (one pod's containers) still hit.
 */
export function createListDecoder<T>(decodeItem: ItemDecoder<T>, options: ListDecoderOptions): ListDecoder<T> {
  const minCapacity = options.minCapacity ?? 256;
  let current = new Map<string, T>();
  let previous = new Map<string, T>();
  let largest = 0;

  const versionKey = (bytes: Uint8Array): string => {
    const parts = options.version.map(() => "");
    let missing = options.version.length;
    forEachField(bytes, (field, value, start) => {
      const at = options.version.indexOf(field);
      if (at < 0) return false;
      parts[at] =
        start < 0 ? String(value) : Buffer.from(bytes.buffer, bytes.byteOffset + start, value).toString("latin1");
      // Once the version is read the rest is skipped: runtimes write fields in number order, labels last.
      return --missing === 0;
    });
    return parts.join("\0");
  };

  const lookup = (bytes: Uint8Array): T => {
    const key = versionKey(bytes);
    let item = current.get(key) ?? previous.get(key);
    item ??= deepFreeze(decodeItem(bytes));
    current.set(key, item);
    return item;
  };

  return (response) => {
    const items: T[] = [];
    forEachField(response, (field, length, start) => {
      if (field === options.field && start >= 0) items.push(lookup(response.subarray(start, start + length)));
      return false;
    });
    largest = Math.max(largest, items.length);
    if (current.size > Math.max(minCapacity, 2 * largest)) {
      previous = current;
      current = new Map();
    }
    return items;
  };
}

/**
 * Calls `visit` for each top-level field of a message, in wire order, until it answers true: varints with
 * their value and a start of -1, length-delimited fields with their length and start offset (no view is
 * made of fields nobody reads); fixed-width fields are skipped.
 */
function forEachField(buffer: Uint8Array, visit: (field: number, value: number, start: number) => boolean): void {
  let at = 0;
  const varint = (): number => {
    let value = 0;
    for (let shift = 0; ; shift += 7) {
      if (at >= buffer.length) throw new Error("cannot decode a CRI list response: truncated varint");
      const byte = buffer[at++]!;
      value += (byte & 0x7f) * 2 ** shift;
      if (byte < 0x80) return value;
    }
  };
  while (at < buffer.length) {
    const tag = varint();
    const field = Math.floor(tag / 8);
    const wireType = tag & 7;
    if (wireType === 0) {
      if (visit(field, varint(), -1)) return;
    } else if (wireType === 1) at += 8;
    else if (wireType === 5) at += 4;
    else if (wireType === 2) {
      const length = varint();
      if (at + length > buffer.length) throw new Error("cannot decode a CRI list response: truncated field");
      const start = at;
      at += length;
      if (visit(field, length, start)) return;
    } else throw new Error(`cannot decode a CRI list response: unsupported wire type ${wireType}`);
  }
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === "object" && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key]);
  }
  return value;
}
