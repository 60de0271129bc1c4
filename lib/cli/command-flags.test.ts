import { describe, expect, test } from "bun:test";
import { FLAGS } from "../config/flags.ts";
import { COMMAND_FLAGS, commandFlags, flagGroup, GROUPED } from "./command-flags.ts";

const names = (command: string) => commandFlags(command).map((f) => f.flag);

describe("the flags each command uses", () => {
  test("every flag named in a group is a flag of the table, and none is in two groups", () => {
    const listed = Object.values(GROUPED).flat();
    expect(listed.filter((flag) => !FLAGS.some((f) => f.flag === flag))).toEqual([]);
    expect(listed.filter((flag, i) => listed.indexOf(flag) !== i)).toEqual([]);
  });

  test("a flag no group lists is a node flag", () => {
    expect(flagGroup("root_dir")).toBe("node");
    expect(flagGroup("config")).toBe("sources");
    expect(flagGroup("docker_endpoint")).toBe("runtime");
    expect(flagGroup("port")).toBe("server");
  });

  test("run and print-config use every flag of the table", () => {
    expect(names("run")).toEqual(FLAGS.map((f) => f.flag));
    expect(names("print-config")).toEqual(FLAGS.map((f) => f.flag));
  });

  test("reset uses the runtime's flags, the node's name, its state and lock, and no source or server flag", () => {
    const reset = names("reset");
    for (const flag of [
      "root_dir",
      "docker_endpoint",
      "container_runtime",
      "hostname_override",
      "lock_file",
      "cgroup_root",
    ])
      expect(reset).toContain(flag);
    expect(reset.filter((flag) => ["sources", "server"].includes(flagGroup(flag)))).toEqual([]);
  });

  test("runonce uses no server flag, no etcd flag and nothing of the run loop", () => {
    const runonce = names("runonce");
    expect(runonce.filter((flag) => flagGroup(flag) === "server")).toEqual([]);
    for (const flag of ["etcd_servers", "etcd_config", "sync_frequency", "image_gc_high_threshold", "stop_timeout"])
      expect(runonce).not.toContain(flag);
    for (const flag of ["config", "manifest_url", "runonce_timeout", "root_dir", "max_pods"])
      expect(runonce).toContain(flag);
  });

  test("plan reads every source, etcd included, and uses neither the server nor runonce's flags", () => {
    const plan = names("plan");
    for (const flag of ["config", "manifest_url", "etcd_servers", "etcd_config", "max_pods"])
      expect(plan).toContain(flag);
    for (const flag of ["port", "runonce", "runonce_timeout", "sync_frequency"]) expect(plan).not.toContain(flag);
  });

  test("fleet uses etcd's flags only, and an unknown command none", () => {
    expect(names("fleet")).toEqual(["etcd_servers", "etcd_config"]);
    expect(names("explode")).toEqual([]);
    expect(Object.keys(COMMAND_FLAGS).sort()).toEqual(
      ["fleet", "plan", "print-config", "reset", "run", "runonce", "validate", "kubeconfig", "get", "describe"].sort(),
    );
  });

  test("kubeconfig, get and describe use what reaching the node's API reads: its address, certificate and admin token", () => {
    for (const command of ["kubeconfig", "get", "describe"])
      expect(names(command)).toEqual(
        expect.arrayContaining(["port", "tls_cert_file", "client_ca_file", "cert_dir", "root_dir", "admin_token_file"]),
      );
    expect(names("get")).not.toContain("etcd_servers");
  });
});
