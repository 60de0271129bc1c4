import { describe, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { describeWithServices } from "../testing/services.ts";
import { defineCommands, invokedCommand, main, normalizeArgv } from "./cli.ts";

async function run(...argv: string[]) {
  return runWith({ KUBELET_CONFIG_FILE: "" }, ...argv);
}

async function runWith(env: Record<string, string | undefined>, ...argv: string[]) {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = "";
  let err = "";
  stdout.on("data", (d) => (out += d));
  stderr.on("data", (d) => (err += d));
  const code = await main(argv, { env, stdout, stderr, readStdin: async () => "", exit: () => {} });
  return { code, out, err };
}

describe("kubelet CLI", () => {
  test("get and describe of a resource they do not read are usage errors naming the ones they do, before any connection", async () => {
    const get = await run("get", "deployments", "--root_dir", "/nonexistent");
    expect([get.code, get.err.split("\n")[0]]).toEqual([
      2,
      'kubelet: the server doesn\'t have a resource type "deployments" that kubelet get reads: use pods, nodes, events, namespaces, configmaps, secrets',
    ]);
    const described = await run("describe", "svc", "x");
    expect(described.code).toBe(2);
    expect(described.err).toContain('kubelet describe reads pods and nodes, not "svc"');
  });

  test("get against a kubelet serving plain HTTP says why kubectl's token cannot go there (exit 1)", async () => {
    const result = await run("get", "pods", "--root_dir", "/nonexistent");
    expect(result.code).toBe(1);
    expect(result.err).toContain("kubectl sends no token over http: give --tls_cert_file/--tls_private_key_file");
  });

  test("treats --etcd_servers and --etcd-servers as the same flag", () => {
    expect(normalizeArgv(["print-config", "--etcd_servers=a", "--etcd-servers", "b"])).toEqual([
      "print-config",
      "--etcd-servers=a",
      "--etcd-servers",
      "b",
    ]);
  });

  test("never lets a bare boolean flag swallow the next argument", () => {
    expect(normalizeArgv(["validate", "--allow_privileged", "pod.yaml"])).toEqual([
      "validate",
      "--allow-privileged=true",
      "pod.yaml",
    ]);
  });

  test("prints the effective configuration as YAML with snake_case keys", async () => {
    const { code, out } = await run("print-config", "--sync_frequency", "1m30s", "-c", "/etc/pods");
    expect(code).toBe(0);
    expect(out).toContain("sync_frequency: 1m30s");
    expect(out).toContain("config: /etc/pods");
  });

  test("prints JSON for tools with -o json", async () => {
    const { out } = await run("print-config", "-o", "json", "--port=99");
    expect(JSON.parse(out).port).toBe(99);
  });

  test("exits 2 with the problem and the usage for an unknown flag", async () => {
    const { code, err } = await run("run", "--no_such_flag");
    expect(code).toBe(2);
    expect(err).toBe("kubelet: unknown flag --no_such_flag\nUsage: kubelet run [flags]; see 'kubelet run --help'\n");
  });

  for (const [typed, meant] of [
    ["--sync-frequncy", "--sync-frequency"],
    ["--sync_frequncy=10s", "--sync_frequency"],
    ["--rootdir", "--root-dir"],
  ])
    test(`suggests ${meant} for ${typed}, in the spelling typed`, async () => {
      const { code, err } = await run("run", typed, "10s");
      expect(code).toBe(2);
      expect(err.split("\n")[0]).toBe(`kubelet: unknown flag ${typed.split("=")[0]}: did you mean ${meant}?`);
    });

  test("exits 2 for runonce with etcd, which runonce cannot read", async () => {
    expect((await run("runonce", "-c", "x", "--etcd_servers", "http://127.0.0.1:2379")).code).toBe(2);
  });

  test("exits 2 for runonce with the server explicitly enabled", async () => {
    expect((await run("runonce", "-c", "x", "--enable_server=true")).code).toBe(2);
  });

  test("exits 2 for a bad duration", async () => {
    const { code, err } = await run("print-config", "--sync_frequency", "10");
    expect(code).toBe(2);
    expect(err).toContain("--sync_frequency");
  });

  test("exits 2 with cac's words for a flag given without the value it needs, and a value given is taken", async () => {
    const { code, err } = await run("runonce", "-c", "x", "--root_dir");
    expect(code).toBe(2);
    expect(err).toBe(
      "kubelet: option `--root-dir <value>` value is missing\nUsage: kubelet runonce [flags]; see 'kubelet runonce --help'\n",
    );
    const given = await run("print-config", "-o", "json", "--root_dir", "/var/lib/other");
    expect(given.code).toBe(0);
    expect(JSON.parse(given.out).root_dir).toBe("/var/lib/other");
  });

  test("exits 2 for an unknown command", async () => {
    expect((await run("explode")).code).toBe(2);
  });
});

describe("only the invoked command's options are built", () => {
  const io = { stdout: new PassThrough(), stderr: new PassThrough(), readStdin: async () => "", exit: () => {} };
  const withOptions = (argv: string[]) =>
    defineCommands(argv, io)
      .cli.commands.filter((command) => command.options.length > 0)
      .map((command) => command.name);

  test("runonce builds its own options and none of the other commands'", () => {
    expect(withOptions(["runonce", "--config", "/etc/pods"])).toEqual(["runonce"]);
    expect(defineCommands(["runonce"], io).cli.commands.find((c) => c.name === "runonce")!.options.length).toBe(
      defineCommands(["--help"], io).cli.commands.find((c) => c.name === "runonce")!.options.length,
    );
  });

  test("a first word that is a flag or no command builds every command's options, as a flag's value may look like a command", () => {
    expect(invokedCommand(["--config_file", "/etc/k.yaml", "runonce"])).toBeUndefined();
    expect(invokedCommand(["explode"])).toBeUndefined();
    expect(invokedCommand([])).toBeUndefined();
    expect(withOptions(["--help"]).length).toBe(defineCommands([], io).cli.commands.length);
    expect(withOptions(["explode"]).length).toBe(defineCommands([], io).cli.commands.length);
  });

  for (const command of ["run", "runonce", "validate", "plan", "print-config", "fleet", "reset", "get", "exec"])
    test(`${command} --help and its errors are the same as when every command's options are built`, async () => {
      // A flag first builds them all (the behaviour before the cut): here --config_file="", which reads no file.
      const all = (...argv: string[]) => run("--config_file=", command, ...argv);
      expect(await run(command, "--help")).toEqual(await all("--help"));
      expect(await run(command, "--sync_frequncy=1s")).toEqual(await all("--sync_frequncy=1s"));
    });

  test("kubelet --help, an unknown command and --version print what they printed with every option built", async () => {
    expect((await run("--help")).out).toContain("  runonce  ");
    expect(await run("explode")).toEqual({
      code: 2,
      out: "",
      err: "kubelet: unknown command \"explode\": use run, runonce, plan, validate, print-config, fleet, reset, kubeconfig, get, describe, logs, exec or port-forward\nUsage: kubelet <command> [flags]; see 'kubelet --help'\n",
    });
    expect((await run("runonce", "--version")).out).toStartWith("kubelet v");
  });

  test("--version after -- is the exec'd program's argument, not a request for the kubelet's version", async () => {
    const exec = await run("exec", "--server", "http://127.0.0.1:1", "pod", "--", "prog", "--version");
    expect(exec.out).not.toStartWith("kubelet v");
    expect(exec.code).not.toBe(0);
  });
});

describe("the config file every command reads", () => {
  const dir = mkdtempSync(join(tmpdir(), "kubelet-cli-config-"));
  const file = join(dir, "config.yaml");
  writeFileSync(file, "sync_frequency: 17s\n");
  const env = { KUBELET_CONFIG_FILE: file };

  test("print-config reads the file $KUBELET_CONFIG_FILE names and says so on stderr", async () => {
    const { code, out, err } = await runWith(env, "print-config");
    expect(code).toBe(0);
    expect(out).toContain("sync_frequency: 17s");
    expect(out).toContain(`config_file: ${file}`);
    expect(err).toBe(`kubelet: using the config file ${file} (from $KUBELET_CONFIG_FILE)\n`);
  });

  for (const argv of [["--config_file="], ["--config_file", ""], ["--config-file="]])
    test(`${argv.map((a) => a || `""`).join(" ")} reads no config file, whatever the environment says`, async () => {
      const { code, out, err } = await runWith(env, "print-config", ...argv);
      expect(code).toBe(0);
      expect(out).toContain("sync_frequency: 10s");
      expect(out).not.toContain("config_file");
      expect(err).toBe("");
    });

  test("a file given by --config_file is read without a notice", async () => {
    const { out, err } = await runWith({}, "print-config", "--config_file", file);
    expect(out).toContain("sync_frequency: 17s");
    expect(err).toBe("");
  });

  test("validate applies the node's allow_privileged from the config file, and a flag wins over it", async () => {
    const privileged = join(import.meta.dir, "../../testdata/manifests/valid/privileged-allowed.yaml");
    const allowing = join(dir, "allowing.yaml");
    writeFileSync(allowing, "allow_privileged: true\n");
    expect((await runWith({}, "validate", privileged, "--config_file=")).code).toBe(1);
    expect((await runWith({ KUBELET_CONFIG_FILE: allowing }, "validate", privileged)).code).toBe(0);
    expect(
      (await runWith({ KUBELET_CONFIG_FILE: allowing }, "validate", privileged, "--allow_privileged=false")).code,
    ).toBe(1);
  });

  test("plan without sources says that no config file was read and how to name one", async () => {
    const { code, err } = await run("plan");
    expect(code).toBe(1);
    expect(err.split("\n")[0]).toBe(
      "kubelet: plan needs --config, --manifest_url or --etcd_servers/--etcd_config (none given, and no config file was read: install.sh writes /etc/kubelet/config.yaml, read by default when present; --config_file FILE or $KUBELET_CONFIG_FILE names another)",
    );
  });
});

describeWithServices("fleet and the config file", (services) => {
  test("fleet finds etcd in the config file", async () => {
    const dir = mkdtempSync(join(tmpdir(), "kubelet-cli-fleet-"));
    writeFileSync(join(dir, "config.yaml"), `etcd_servers: ${services.etcd}\n`);
    const { code, out } = await runWith(
      { KUBELET_CONFIG_FILE: join(dir, "config.yaml") },
      "fleet",
      "nodes",
      "-o",
      "json",
    );
    expect(code).toBe(0);
    expect(JSON.parse(out)).toBeTruthy();
  });
});
