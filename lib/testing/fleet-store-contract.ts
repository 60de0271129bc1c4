// The contract every FleetStore meets (the real etcd client and the fake alike): writes on a lease,
// batched deletes, renewal, "LeaseNotFound" once a lease is gone, and compare-and-swap on revisions.
import { expect, test } from "bun:test";
import type { FleetStore } from "../node/status/fleet-reporter.ts";
import type { EtcdClient } from "../sources/etcd-client.ts";

export interface ContractStore extends FleetStore, Pick<EtcdClient, "get" | "applyIf"> {
  revokeLease(lease: string): Promise<void>;
}

export function fleetStoreContract(name: string, open: () => Promise<ContractStore>, prefix: string): void {
  test(`${name}: puts on a lease are listed, deletes in the same batch remove, revoking removes the rest`, async () => {
    const store = await open();
    const lease = await store.grantLease(30);
    await store.apply(
      [
        { key: `${prefix}a`, value: "1" },
        { key: `${prefix}b`, value: "2" },
      ],
      lease,
    );
    await store.apply([{ key: `${prefix}a` }, { key: `${prefix}c`, value: "3" }], lease);
    expect((await store.list(prefix)).entries.map((e) => e.key).sort()).toEqual([`${prefix}b`, `${prefix}c`]);
    expect(await store.keepAlive(lease)).toBeGreaterThan(0);
    await store.revokeLease(lease);
    expect((await store.list(prefix)).entries).toEqual([]);
  });

  test(`${name}: a gone lease answers LeaseNotFound to renewals and writes`, async () => {
    const store = await open();
    const lease = await store.grantLease(30);
    await store.revokeLease(lease);
    // Settled before expect(): bun's expect(promise).rejects stalls the gRPC stream of the real client.
    const failure = (p: Promise<unknown>) =>
      p.then(
        () => undefined,
        (error) => error,
      );
    expect(await failure(store.keepAlive(lease))).toMatchObject({ code: "LeaseNotFound" });
    expect(await failure(store.apply([{ key: `${prefix}x`, value: "1" }], lease))).toMatchObject({
      code: "LeaseNotFound",
    });
  });

  test(`${name}: a guarded write is made while its keys are at the revisions read, and refused once one moved on`, async () => {
    const store = await open();
    const key = `${prefix}guarded`;
    expect(await store.applyIf([{ key, modRevision: 0 }], [{ key, value: "1" }])).toBe(true);
    expect(await store.applyIf([{ key, modRevision: 0 }], [{ key, value: "2" }])).toBe(false);
    const { entry } = await store.get(key);
    expect(entry?.value).toBe("1");
    expect(await store.applyIf([{ key, modRevision: entry!.modRevision }], [{ key, value: "3" }])).toBe(true);
    expect(await store.applyIf([{ key, modRevision: entry!.modRevision }], [{ key }])).toBe(false);
    expect((await store.get(key)).entry?.value).toBe("3");
  });
}
