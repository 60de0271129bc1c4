// `kubelet fleet cordon|uncordon NODE`: marks a node as under maintenance in etcd
// (/registry/cordons/<node>: who and when). A rollout counts a cordoned node as unavailable: its key
// is written with its batch, and the batch does not wait for it.
import type { EtcdClient } from "../sources/etcd-client.ts";

const key = (node: string) => `/registry/cordons/${node}`;

/** Cordons or uncordons `node`; resolves to the line to print. */
export async function setCordon(
  client: Pick<EtcdClient, "get" | "put" | "delete">,
  node: string,
  cordoned: boolean,
  by: { who: string; now: number },
): Promise<string> {
  const was = (await client.get(key(node))).entry !== undefined;
  if (was === cordoned) return `node/${node} already ${cordoned ? "cordoned" : "uncordoned"}\n`;
  if (cordoned) await client.put(key(node), JSON.stringify({ by: by.who, at: new Date(by.now).toISOString() }));
  else await client.delete(key(node));
  return `node/${node} ${cordoned ? "cordoned" : "uncordoned"}\n`;
}
