import { describe, expect, test } from "bun:test";
import { createStreamClient } from "./stream-client.ts";

const config = {
  address: "0.0.0.0",
  port: 10250,
  tlsCertFile: "",
  clientCaFile: "",
  adminTokenFile: "",
  rootDir: "/var/lib/kubelet",
};

describe("the local API client", () => {
  test("talks to loopback when the kubelet listens on every address, over https when it serves TLS, with the admin token", async () => {
    const seen: Array<{ url: string; authorization: string | undefined }> = [];
    const client = createStreamClient(
      { ...config, tlsCertFile: "/etc/kubelet/serving.crt" },
      {
        readToken: (path) => (path === "/var/lib/kubelet/admin-token" ? "secret\n" : ""),
        fetch: (async (url: string, init: RequestInit) => {
          seen.push({ url, authorization: (init.headers as Record<string, string>).authorization });
          return new Response("ok");
        }) as typeof fetch,
      },
    );
    await client.fetch("/api/v1/namespaces/default/pods/web/log");
    expect(seen).toEqual([
      { url: "https://127.0.0.1:10250/api/v1/namespaces/default/pods/web/log", authorization: "Bearer secret" },
    ]);
    expect(createStreamClient({ ...config, address: "10.0.0.5" }, { readToken: () => "t" }).url("/x")).toBe(
      "http://10.0.0.5:10250/x",
    );
  });

  test("an unreadable admin token names the file and says to run as root", () => {
    const denied = Object.assign(new Error("EACCES"), { code: "EACCES" });
    expect(() =>
      createStreamClient(config, {
        readToken: () => {
          throw denied;
        },
      }),
    ).toThrow(
      'cannot read the admin token "/var/lib/kubelet/admin-token": permission denied (it is readable by root only): run this as root, e.g. with sudo',
    );
  });
});
