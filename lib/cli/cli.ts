// The only cac import: subcommands, flags in both spellings, usage errors, exit codes
// (0 success, 1 failure, 2 usage, 3 a stop past --stop_timeout). Heavy parts (Docker, etcd, the server) load only for run/runonce.
// Folder cli/: what it owns is in its README.md; what it may import, in docs/architecture.md#layers.
import { fleetEtcdSettings, type EtcdClientSettings } from "../config/etcd-config.ts";
import cac, { type CAC, type Command } from "cac";
import { resolveConfig, type ResolvedConfig } from "../config/config.ts";
import {
  chooseConfigFile,
  CONFIG_FILE_ENV,
  configFileNotice,
  INSTALLED_CONFIG_FILE,
} from "../config/config-file-path.ts";
import { FLAGS } from "../config/flags.ts";
import { formatDuration } from "../api/duration.ts";
import { protectedHostPaths } from "../api/host-paths.ts";
import type { KubeletConfig } from "../config/config-types.ts";
import { createLogger } from "../log.ts";
import { systemClock } from "../clock.ts";
import { runtimeName } from "../platform/runtime.ts";
import { buildInfo } from "../build-info.ts";
import { closestName } from "../spelling.ts";
import type { FleetSection } from "./fleet.ts";
import { fleetServeOptions, fleetServeSettings } from "./fleet-serve-flags.ts";
import { PLACEMENT_VERBS, placementOptions, placementRequest, runPlacement } from "./fleet-placement.ts";
import { rolloutOptions, rolloutRequest } from "./fleet-rollout-flags.ts";
import type { EtcdClient } from "../sources/etcd-client.ts";
import { PLAN_EXIT, planCommand } from "./plan.ts";
import { resetCommand } from "./reset.ts";
import type { ApiConnection } from "./api-client.ts";
import { resourceKind } from "./get.ts";

/** `kubelet v0.1.0 (commit abc1234, bun 1.4.5)`. */
export function versionLine(): string {
  const { version, commit } = buildInfo();
  return `kubelet v${version} (commit ${commit}, ${runtimeName()})`;
}

class UsageError extends Error {
  constructor(
    message: string,
    readonly command?: Command,
  ) {
    super(message);
  }
}

const STDIN_PATH = "/dev/stdin";
/** What normalizeArgv makes of `--config_file=""` (cac reads an empty value as missing): read no config file. */
const NO_CONFIG_FILE = "\0none";

const BOOLEAN_FLAGS = new Set(
  FLAGS.filter((f) => f.type === "bool")
    .map((f) => f.flag.replace(/_/g, "-"))
    .concat(["show-origin", "commented", "help", "version", "watch", "strict", "dry-run"]),
);

/**
 * `--etcd_servers` and `--etcd-servers` are the same flag (the modern kubelet's word-separator
 * rule), and a bare boolean never swallows the next argument (`--allow_privileged pod.yaml`).
 */
export function normalizeArgv(argv: string[]): string[] {
  const out: string[] = [];
  for (const [i, arg] of argv.entries()) {
    if (arg === "" && /^--config[-_]file$/.test(argv[i - 1] ?? "")) {
      out[out.length - 1] += `=${NO_CONFIG_FILE}`;
      continue;
    }
    if (/^--config[-_]file=$/.test(arg)) {
      out.push(`--config-file=${NO_CONFIG_FILE}`);
      continue;
    }
    if (arg === "-") {
      out.push(STDIN_PATH); // cac drops a bare "-"; validate maps it back
      continue;
    }
    if (arg === "--" || !arg.startsWith("--")) {
      out.push(arg);
      continue;
    }
    const eq = arg.indexOf("=");
    const name = (eq < 0 ? arg.slice(2) : arg.slice(2, eq)).replace(/_/g, "-");
    out.push(eq < 0 ? (BOOLEAN_FLAGS.has(name) ? `--${name}=true` : `--${name}`) : `--${name}${arg.slice(eq)}`);
  }
  return out;
}

interface Io {
  /** Default process.env: $KUBELET_CONFIG_FILE, $ETCDCTL_*. */
  env?: Record<string, string | undefined>;
  stdout: NodeJS.WritableStream & { isTTY?: boolean };
  stderr: NodeJS.WritableStream;
  readStdin(): Promise<string>;
  /** Ends the process once its output is flushed, whatever is still in flight (`run` only). */
  exit(code: number): void;
}

/** `run` did not stop within --stop_timeout of SIGTERM/SIGINT and exited anyway. */
export const EXIT_STOP_TIMEOUT = 3;

/** The commands, as an unknown command's error names them. */
const COMMANDS = [
  "run",
  "runonce",
  "plan",
  "validate",
  "print-config",
  "fleet",
  "reset",
  "kubeconfig",
  "get",
  "describe",
  "logs",
  "exec",
  "port-forward",
];

/**
 * The command whose options are all that need building: argv's first word when it names a command. Undefined when
 * argv starts with a flag (whose value could be taken for a command) or an unknown word: then every command's are.
 */
export function invokedCommand(argv: string[]): string | undefined {
  const first = argv[0];
  return first !== undefined && COMMANDS.includes(first) ? first : undefined;
}

/** Runs the CLI and resolves to the process exit code. */
export async function main(argv: string[], io: Io = defaultIo()): Promise<number> {
  // Before any `--`: what follows it is the command's (kubelet exec pod -- prog --version).
  const dashes = argv.indexOf("--");
  if ((dashes < 0 ? argv : argv.slice(0, dashes)).includes("--version")) {
    io.stdout.write(versionLine() + "\n");
    return 0;
  }
  const { cli, result } = defineCommands(argv, io);
  try {
    const parsed = cli.parse(["node", "kubelet", ...normalizeArgv(argv)], { run: false });
    if (parsed.options.help && (cli.matchedCommand || cli.args.length === 0)) {
      // help.ts (with print-config.ts's table of every setting) is imported when help is printed, not at every start.
      const { commandHelp, globalHelp } = await import("./help.ts");
      io.stdout.write(`${cli.matchedCommand ? commandHelp(withHelp(cli.matchedCommand)) : globalHelp(cli.commands)}\n`);
      return 0;
    }
    if (!cli.matchedCommand) {
      if (cli.args.length === 0) {
        io.stdout.write(`${(await import("./help.ts")).globalHelp(cli.commands)}\n`);
        return 2;
      }
      throw new UsageError(
        `unknown command "${cli.args[0]}": use ${COMMANDS.slice(0, -1).join(", ")} or ${COMMANDS.at(-1)}`,
      );
    }
    await cli.runMatchedCommand();
    return await result();
  } catch (error) {
    const err = error as Error & { code?: string; name?: string };
    if (error instanceof UsageError || err.name === "CACError") {
      const command = (error as UsageError).command ?? cli.matchedCommand;
      // An unknown flag is named as typed; a config with several problems is one line each (ConfigError).
      const message = unknownFlag(err.message, argv, command) ?? err.message;
      for (const line of message.split("\n"))
        io.stderr.write(`kubelet: ${line.replace(/`--([a-z-]+)`/g, (_, f: string) => `--${f.replace(/-/g, "_")}`)}\n`);
      io.stderr.write(
        `Usage: kubelet ${command ? command.rawName : "<command>"} [flags]; see 'kubelet ${command ? command.name + " " : ""}--help'\n`,
      );
      // plan's 2 means "changes", as with terraform's -detailed-exitcode: its usage errors are errors.
      return command?.name === "plan" ? PLAN_EXIT.error : 2;
    }
    io.stderr.write(`kubelet: ${err.message}\n`);
    return 1;
  }
}

/**
 * The cac CLI of `argv`'s command, and the exit code its action leaves. Only the invoked command gets its options:
 * the table's 127 flags on 7 commands are ~900 cac options, 9-32 ms of every start-up (issue 41 item 7).
 */
export function defineCommands(argv: string[], io: Io): { cli: CAC; result: () => Promise<number> } {
  const env = io.env ?? process.env;
  const cli = cac("kubelet");
  let result: Promise<number> = Promise.resolve(0);
  const invoked = invokedCommand(argv);
  const define = cli.command.bind(cli);
  cli.command = (rawName, description, config) => {
    const command = define(rawName, description, config);
    if (invoked !== undefined && command.name !== invoked) command.option = () => command;
    command.checkOptionValue = () => checkOptionValues(command);
    return command;
  };
  const withConfigFlags = (command: Command) => {
    for (const spec of FLAGS) {
      const dashed = spec.flag.replace(/_/g, "-");
      const name =
        spec.type === "bool" ? `--${dashed}` : `--${dashed} <${spec.type === "duration" ? "duration" : "value"}>`;
      command.option(
        spec.short ? `-${spec.short}, ${name}` : name,
        spec.description + (spec.type === "bool" ? " (true|false)" : ""),
      );
    }
    return withConfigFile(command);
  };
  /**
   * Resolves the command's configuration, reading the config file chooseConfigFile picks; a file the command
   * line did not name is announced on stderr (by `run`, in its log: `announce` false).
   */
  const resolve = (
    options: Record<string, unknown>,
    command: Command,
    announce = true,
  ): ResolvedConfig & { notice?: string } => {
    const flags: Partial<Record<keyof KubeletConfig, unknown>> = {};
    for (const spec of FLAGS) {
      const value = options[spec.key];
      if (value !== undefined) flags[spec.key] = value;
    }
    const given = options.configFile === undefined ? undefined : String(options.configFile);
    const choice = chooseConfigFile(given === NO_CONFIG_FILE ? "" : given, env);
    const notice = configFileNotice(choice);
    if (notice && announce) io.stderr.write(`kubelet: ${notice}\n`);
    try {
      return { ...resolveConfig(flags, choice.path), ...(notice ? { notice } : {}) };
    } catch (error) {
      throw new UsageError((error as Error).message, command);
    }
  };

  const run = withConfigFlags(cli.command("run", "Run the kubelet until SIGTERM/SIGINT (containers keep running)"));
  run.action((options) => {
    const runOnce = options.runonce === true || options.runonce === "true";
    const resolved = resolve(options, run, runOnce);
    result = resolved.config.runonce ? startRunOnce(resolved, run, io) : startRun(resolved, io);
  });
  const runonce = withConfigFlags(
    cli.command("runonce", "Start the pods of --config / --manifest_url once, wait until they run, exit 0 or 1"),
  );
  runonce.action((options) => {
    result = startRunOnce(resolve(options, runonce), runonce, io);
  });
  const validate = withConfigFile(
    cli.command("validate [...paths]", "Check pod manifests (files, directories, - for stdin)"),
  )
    .option("--allow-privileged", "Accept privileged containers")
    .option(
      "--allow-sensitive-host-paths",
      "Accept hostPath volumes at /, /etc, /proc, the Docker socket… (still a warning)",
    )
    .option("--strict", "Unknown fields are errors (--strict=false: warnings, as run with --strict_manifests=false)", {
      default: true,
    })
    .option("--max-manifest-bytes <bytes>", "Largest manifest document accepted")
    .option(
      "--authorization-policy-file <file>",
      "Also check this RBAC policy file (ClusterRoles, ClusterRoleBindings) as authorization_mode RBAC reads it",
    )
    .option("-o, --output <format>", "text or json", { default: "text" });
  validate.action((paths: string[], options) => {
    const policyFile =
      options.authorizationPolicyFile === undefined ? undefined : String(options.authorizationPolicyFile);
    if (paths.length === 0 && policyFile === undefined)
      throw new UsageError(
        "validate needs at least one path (a file, a directory, or - for stdin), or --authorization_policy_file",
        validate,
      );
    const format = outputFormat(options.output, ["text", "json"], validate) as "text" | "json";
    // The node's own limits, as run would apply them: from the config file unless a flag says otherwise.
    const { config } = resolve(
      {
        allowPrivileged: options.allowPrivileged,
        allowSensitiveHostPaths: options.allowSensitiveHostPaths,
        maxManifestBytes: options.maxManifestBytes,
        configFile: options.configFile,
      },
      validate,
    );
    // validate.ts is imported here: its RBAC policy checker is nothing a run or runonce loads.
    result = import("./validate.ts").then(({ validateCommand }) =>
      validateCommand(
        paths.map((p) => (p === STDIN_PATH ? "-" : p)),
        {
          allowPrivileged: config.allowPrivileged,
          allowSensitiveHostPaths: config.allowSensitiveHostPaths,
          trustedSources: config.trustedSources,
          protectedHostPaths: protectedHostPaths(config),
          strict: options.strict !== false && options.strict !== "false",
          maxBytes: byteCount(config.maxManifestBytes, validate),
          format,
          ...(policyFile === undefined ? {} : { policyFile }),
          out: io.stdout,
          readStdin: io.readStdin,
        },
      ),
    );
  });
  const plan = withConfigFlags(
    cli.command("plan", "Print what a sync would do to this node, without doing it (exit 0 none, 2 changes, 1 errors)"),
  ).option("-o, --output <format>", "text or json", { default: "text" });
  plan.action((options) => {
    const format = outputFormat(options.output, ["text", "json"], plan) as "text" | "json";
    const { config } = resolve(options, plan);
    if (!config.config && !config.manifestUrl && config.etcdServers.length === 0 && !config.etcdConfig)
      throw new UsageError(
        `plan needs --config, --manifest_url or --etcd_servers/--etcd_config${noConfigFileRead(config)}`,
        plan,
      );
    const log = createLogger({ format: config.logFormat || undefined, verbosity: Math.min(config.verbosity, 0) });
    result = planCommand(config, { format, out: io.stdout, err: io.stderr, log });
  });
  const print = withConfigFlags(
    cli.command("print-config", "Print the effective configuration (defaults < --config_file < flags)"),
  )
    .option("--show-origin", "Mark each value with where it came from: default, file or flag")
    .option("--commented", "Print a config file: every key described, defaults commented out (what install.sh writes)")
    .option("-o, --output <format>", "yaml or json", { default: "yaml" });
  print.action((options) => {
    const format = outputFormat(options.output, ["yaml", "json"], print) as "yaml" | "json";
    const resolved = resolve(options, print);
    result = import("../config/print-config.ts").then(({ commentedConfigFile, printConfig }) => {
      io.stdout.write(
        options.commented === true || options.commented === "true"
          ? commentedConfigFile(resolved)
          : printConfig(resolved, { format, showOrigin: options.showOrigin === true || options.showOrigin === "true" }),
      );
      return 0;
    });
  });
  const fleet = withConfigFile(
    cli
      .command(
        "fleet [section] [...names]",
        "Nodes and pods of every kubelet sharing an etcd (section: nodes, pods or events); apply, delete and describe place pods; rollout changes them in batches; cordon, uncordon",
      )
      .option("--etcd-servers <value>", "etcd endpoints, comma separated or repeated (else ETCDCTL_ENDPOINTS)")
      .option(
        "--etcd-config <path>",
        "etcd client config file (endpoints, TLS, auth; else ETCDCTL_CACERT/CERT/KEY/USER)",
      )
      .option("-o, --output <format>", "table, json or yaml", { default: "table" })
      .option("-w, --watch", "Print again on every change until interrupted"),
  );
  placementOptions(fleet);
  rolloutOptions(fleet);
  fleetServeOptions(fleet);
  fleet.action((section: string | undefined, names: string[], options) => {
    const chosen = section ?? "all";
    const placing = PLACEMENT_VERBS.includes(chosen);
    if (!placing && !["all", "nodes", "pods", "events", "rollout", "cordon", "uncordon", "serve"].includes(chosen))
      throw new UsageError(
        `unknown fleet section "${chosen}": use nodes, pods, events, apply, delete, describe, rollout, cordon, uncordon or serve`,
        fleet,
      );
    const etcd = resolve(
      { etcdServers: options.etcdServers, etcdConfig: options.etcdConfig, configFile: options.configFile },
      fleet,
    );
    const settings = fleetEtcdSettings(etcd.config, env);
    if (!settings) throw new UsageError("fleet needs --etcd_servers, --etcd_config or ETCDCTL_ENDPOINTS", fleet);
    if (chosen === "serve") {
      const serving = fleetServeSettings(options, (message) => new UsageError(message, fleet));
      result = withEtcd(settings, io, "cannot serve the fleet's API from etcd", async (client, signal) =>
        (await import("./fleet-serve.ts")).fleetServe(client, serving, { out: io.stdout, signal }),
      );
      return;
    }
    if (chosen === "cordon" || chosen === "uncordon") {
      if (names.length !== 1) throw new UsageError(`fleet ${chosen} needs one NODE`, fleet);
      result = withEtcd(settings, io, `cannot ${chosen} in etcd`, async (client) => {
        const [{ setCordon }, { whoAmI }] = await Promise.all([
          import("./fleet-cordon.ts"),
          import("./fleet-rollout.ts"),
        ]);
        io.stdout.write(await setCordon(client, names[0]!, chosen === "cordon", { who: whoAmI(), now: Date.now() }));
        return 0;
      });
      return;
    }
    if (chosen === "rollout") {
      const request = rolloutRequest(names, options, (message) => new UsageError(message, fleet));
      result = withEtcd(settings, io, "cannot roll out in etcd", async (client, signal) => {
        const { runRollout } = await import("./fleet-rollout-command.ts");
        return runRollout(request, { client, clock: systemClock, signal }, { out: io.stdout, err: io.stderr });
      });
      return;
    }
    if (placing) {
      const request = placementRequest(chosen, names, options, (message) => new UsageError(message, fleet));
      result = withEtcd(settings, io, `cannot ${chosen} in etcd`, (client) =>
        runPlacement(request, client, { out: io.stdout, err: io.stderr }),
      );
      return;
    }
    const format = outputFormat(options.output, ["table", "json", "yaml"], fleet) as "table" | "json" | "yaml";
    result = startFleet(settings, {
      section: chosen as FleetSection,
      format,
      watch: options.watch === true || options.watch === "true",
      io,
    });
  });
  const reset = withConfigFlags(
    cli.command("reset", "Remove the pods (sandboxes, containers) and the state the kubelet created on this node"),
  ).option("--dry-run", "Print what would be removed, remove nothing");
  reset.action((options) => {
    const { config } = resolve(options, reset);
    const log = createLogger({ format: config.logFormat || undefined, verbosity: Math.min(config.verbosity, 0) });
    const dryRun = options.dryRun === true || options.dryRun === "true";
    result = resetCommand(config, { dryRun, out: io.stdout, err: io.stderr, log });
  });
  const kubeconfig = withConfigFlags(
    cli.command("kubeconfig", "Print a kubeconfig for this node's API (server, CA, the admin token: run as root)"),
  )
    .option("--write <path>", "Write it to this file (mode 0600) instead of printing it")
    .option("--certificate-authority <path>", "The CA that signs the serving certificate, when it is not self-signed");
  kubeconfig.action((options) => {
    const { config } = resolve(options, kubeconfig);
    result = startApiCommand(config, options, io, async (connection) => {
      const { kubeconfigCommand } = await import("./kubeconfig.ts");
      return kubeconfigCommand(connection, {
        ...(options.write !== undefined ? { write: String(options.write) } : {}),
        out: io.stdout,
        err: io.stderr,
      });
    });
  });
  const get = withApiFlags(
    withConfigFlags(
      cli.command(
        "get <resource> [name]",
        "List pods, nodes, events, namespaces, configmaps or secrets from this node's API, as kubectl get prints them",
      ),
    ),
  )
    .option("-A, --all-namespaces", "List across all namespaces")
    .option("-l, --selector <selector>", "Label selector (app=web, tier in (a,b), !canary)")
    .option("--field-selector <selector>", "Field selector (metadata.name=x, involvedObject.kind=Pod)")
    .option("-o, --output <format>", "wide, yaml, json or name (default: the table)");
  get.action((resource: string, name: string | undefined, options) => {
    const kind = usage(() => resourceKind(resource), get);
    const { config } = resolve(options, get);
    const format =
      options.output === undefined ? "table" : outputFormat(options.output, ["wide", "yaml", "json", "name"], get);
    result = startApiCommand(config, options, io, async (connection) => {
      const [{ getCommand }, { createApiClient }] = await Promise.all([import("./get.ts"), import("./api-client.ts")]);
      const { out, note } = await getCommand(createApiClient(connection), {
        kind,
        ...(name ? { name } : {}),
        namespace: String(options.namespace ?? "default"),
        allNamespaces: options.allNamespaces === true || options.allNamespaces === "true",
        ...(options.selector !== undefined ? { labelSelector: String(options.selector) } : {}),
        ...(options.fieldSelector !== undefined ? { fieldSelector: String(options.fieldSelector) } : {}),
        format: format as "table" | "wide" | "yaml" | "json" | "name",
      });
      io.stdout.write(out);
      if (note) io.stderr.write(`${note}\n`);
      return 0;
    });
  });
  const describe = withApiFlags(
    withConfigFlags(cli.command("describe <resource> <name>", "Describe a pod or this node, as kubectl describe does")),
  );
  // describe.ts is imported here, not at the top: it brings the API's table printers, which runonce never uses.
  describe.action((resource: string, name: string, options) => {
    result = import("./describe.ts").then(({ describeKind, describeNode, describePod }) => {
      const kind = usage(() => describeKind(resource), describe);
      const { config } = resolve(options, describe);
      return startApiCommand(config, options, io, async (connection) => {
        const { createApiClient } = await import("./api-client.ts");
        const client = createApiClient(connection);
        io.stdout.write(
          kind === "pod"
            ? await describePod(client, String(options.namespace ?? "default"), name)
            : await describeNode(client, name),
        );
        return 0;
      });
    });
  });
  const logs = withConfigFile(
    cli.command("logs <pod>", "Print a container's log from the local kubelet (kubectl logs)"),
  )
    .option("-n, --namespace <namespace>", "The pod's namespace", { default: "default" })
    .option("-c, --container <name>", "The container (needed when the pod has several)")
    .option("-f, --follow", "Follow the log")
    .option("-p, --previous", "The log of the container's previous instance")
    .option("--tail <lines>", "Lines from the end (-1: all)", { default: -1 })
    .option("--timestamps", "Prefix each line with its time")
    .option("--port <value>", "The local kubelet's port (default: the configuration's)")
    .option("--root-dir <value>", "Where the admin token is (default: the configuration's)")
    .option("--certificate-authority <path>", "The CA that signs the serving certificate, when it is not self-signed");
  logs.action(async (pod: string, options) => {
    const { config } = resolve(options, logs, false);
    const { createStreamClient } = await import("./stream-client.ts");
    const client = await createStreamClient(config, certificateAuthority(options));
    const { logsCommand } = await import("./logs.ts");
    const tail = Number(options.tail);
    if (!Number.isInteger(tail))
      throw new UsageError(`--tail must be a whole number of lines, got "${options.tail}"`, logs);
    const yes = (value: unknown) => value === true || value === "true";
    result = logsCommand(
      client,
      {
        pod,
        namespace: String(options.namespace),
        ...(options.container ? { container: String(options.container) } : {}),
        follow: yes(options.follow),
        previous: yes(options.previous),
        tail,
        timestamps: yes(options.timestamps),
      },
      { out: io.stdout, err: io.stderr },
    );
  });
  const forward = withConfigFile(
    cli.command("port-forward <pod> [...ports]", "Forward local ports to a pod's ports through the local kubelet"),
  )
    .option("-n, --namespace <namespace>", "The pod's namespace", { default: "default" })
    .option("--port <value>", "The local kubelet's port (default: the configuration's)")
    .option("--root-dir <value>", "Where the admin token is (default: the configuration's)")
    .option("--certificate-authority <path>", "The CA that signs the serving certificate, when it is not self-signed");
  forward.action(async (pod: string, ports: string[], options) => {
    const { config } = resolve(options, forward, false);
    const { createStreamClient } = await import("./stream-client.ts");
    const client = await createStreamClient(config, certificateAuthority(options));
    const { parsePortPairs, portForwardCommand } = await import("./port-forward.ts");
    const pairs = parsePortPairs(ports);
    if (typeof pairs === "string") throw new UsageError(pairs, forward);
    const stop = new AbortController();
    const onSignal = () => stop.abort();
    process.once("SIGTERM", onSignal).once("SIGINT", onSignal);
    result = portForwardCommand(
      client,
      { pod, namespace: String(options.namespace), ports: pairs, signal: stop.signal },
      { out: io.stdout, err: io.stderr },
    ).finally(() => process.off("SIGTERM", onSignal).off("SIGINT", onSignal));
  });
  const exec = withConfigFile(
    cli.command(
      "exec <pod> [...command]",
      "Run a command in a pod's container through the local kubelet (kubectl exec)",
    ),
  )
    .option("-n, --namespace <namespace>", "The pod's namespace", { default: "default" })
    .option("-c, --container <name>", "The container (needed when the pod has several)")
    .option("-i, --stdin", "Pass standard input to the command")
    .option("-t, --tty", "Stdin is a terminal (with -i: raw mode, and the window size follows)")
    .option("--port <value>", "The local kubelet's port (default: the configuration's)")
    .option("--root-dir <value>", "Where the admin token is (default: the configuration's)")
    .option("--certificate-authority <path>", "The CA that signs the serving certificate, when it is not self-signed");
  exec.action(async (pod: string, words: string[], options) => {
    const { config } = resolve(options, exec, false);
    // kubectl's form puts the command after `--`; a bare command is taken as well.
    const command = [...words, ...((options["--"] as string[] | undefined) ?? [])];
    if (!command.length) throw new UsageError("give the command after --: kubelet exec POD -- COMMAND [ARG...]", exec);
    const { createStreamClient } = await import("./stream-client.ts");
    const client = await createStreamClient(config, certificateAuthority(options));
    const { execCommand } = await import("./exec.ts");
    const yes = (value: unknown) => value === true || value === "true";
    result = execCommand(
      client,
      {
        pod,
        namespace: String(options.namespace),
        ...(options.container ? { container: String(options.container) } : {}),
        command,
        stdin: yes(options.stdin),
        tty: yes(options.tty),
      },
      { in: process.stdin, out: io.stdout, err: io.stderr },
    );
  });
  // Help is ours (help.ts), written to io.stdout: cac's would list every flag of run for every command.
  cli.option("-h, --help", "Display this message");
  return { cli, result: () => result };
}

/**
 * cac's check that each flag taking a value got one (`--root_dir` alone), with cac's words, without its search of
 * every option for a negation once per option: 128 × 128 calls, 1-4 ms of every cold start (issue 41 item 7).
 */
function checkOptionValues(command: Command): void {
  const options = [...command.cli.globalCommand.options, ...command.options];
  const negated = new Set(options.filter((o) => o.negated).flatMap((o) => o.names));
  for (const option of options) {
    if (!option.required) continue;
    const value = command.cli.options[option.name.split(".", 1)[0]!];
    if (value === true || (value === false && !negated.has(option.name)))
      throw new UsageError(`option \`${option.rawName}\` value is missing`, command);
  }
}

/** A command's options and the global ones (-h, --help), as its help lists them. */
function withHelp(command: Command) {
  return { ...command, name: command.name, options: [...command.options, ...command.cli.globalCommand.options] };
}

/** `fn`'s value; its error (a name the command does not know) as a usage error of `command`. */
function usage<T>(fn: () => T, command: Command): T {
  try {
    return fn();
  } catch (error) {
    throw new UsageError((error as Error).message, command);
  }
}

/** The flags of the commands that read this node's API: the namespace and the CA of the serving certificate. */
function withApiFlags(command: Command): Command {
  return command
    .option("-n, --namespace <namespace>", "The namespace (default: default)")
    .option("--certificate-authority <path>", "The CA that signs the serving certificate, when it is not self-signed");
}

/** The --certificate-authority given, as localConnection takes it. */
function certificateAuthority(options: Record<string, unknown>): { certificateAuthority?: string } {
  const ca = options.certificateAuthority;
  return ca !== undefined ? { certificateAuthority: String(ca) } : {};
}

/** Runs a command against this node's API: the connection from `config` (a refusal says why), then `fn`. */
async function startApiCommand(
  config: KubeletConfig,
  options: Record<string, unknown>,
  io: Io,
  fn: (connection: ApiConnection) => Promise<number>,
): Promise<number> {
  const { localConnection } = await import("./api-client.ts");
  try {
    return await fn(await localConnection(config, certificateAuthority(options)));
  } catch (error) {
    io.stderr.write(
      `${(error as { code?: string }).code === "ApiError" ? "" : "kubelet: "}${(error as Error).message}\n`,
    );
    return 1;
  }
}

/** Adds --config_file. */
function withConfigFile(command: Command): Command {
  return command.option(
    "--config-file <path>",
    `YAML configuration file (keys: flag names or KubeletConfiguration names); default ${INSTALLED_CONFIG_FILE} when it exists, or $${CONFIG_FILE_ENV}; "" for none`,
  );
}

/**
 * cac's "Unknown option `--syncFrequncy`" in the spelling the user typed, with the closest flag of the command in
 * that spelling: `unknown flag --sync-frequncy: did you mean --sync-frequency?`. Undefined for other errors.
 */
export function unknownFlag(message: string, argv: string[], command: Command | undefined): string | undefined {
  const match = /^Unknown option `-{1,2}([^`]+)`/.exec(message);
  if (!match) return undefined;
  const camel = (flag: string) => flag.replace(/[-_]+([a-z0-9])/g, (_, c: string) => c.toUpperCase());
  const typed =
    argv
      .map((arg) => /^(-{1,2})([^=]+)/.exec(arg))
      // cac reads --no-x as the negation of --x, and names x.
      .find((m) => m && [m[2]!, m[2]!.replace(/^no[-_]/, "")].some((flag) => camel(flag) === match[1]))
      ?.slice(1, 3)
      .join("") ?? `--${match[1]}`;
  const underscores = typed.includes("_");
  const known = (command?.options ?? []).flatMap((o) => o.rawName.match(/--[a-z0-9-]+/g) ?? []);
  const guess = closestName(typed.replace(/_/g, "-"), known);
  const spelled = guess && (underscores ? `--${guess.slice(2).replace(/-/g, "_")}` : guess);
  return `unknown flag ${typed}${spelled ? `: did you mean ${spelled}?` : ""}`;
}

function outputFormat(value: unknown, allowed: string[], command: Command): string {
  const format = String(value);
  if (!allowed.includes(format))
    throw new UsageError(`invalid output format "${format}": use ${allowed.join(" or ")}`, command);
  return format;
}

function byteCount(value: unknown, command: Command): number {
  const bytes = Number(value);
  if (!Number.isSafeInteger(bytes) || bytes <= 0)
    throw new UsageError(`invalid byte count "${String(value)}": give a positive integer such as 10485760`, command);
  return bytes;
}

function checkRunOnce(config: KubeletConfig, origins: ResolvedConfig["origins"], command: Command): void {
  if (config.etcdServers.length > 0 || config.etcdConfig) {
    throw new UsageError(
      "runonce is exclusive with --etcd_servers and --etcd_config: it reads only --config and --manifest_url",
      command,
    );
  }
  if (origins.enableServer !== "default" && config.enableServer) {
    throw new UsageError("runonce is exclusive with --enable_server: runonce serves nothing", command);
  }
  if (!config.config && !config.manifestUrl)
    throw new UsageError(`runonce needs --config and/or --manifest_url${noConfigFileRead(config)}`, command);
}

/** The hint after "needs --config" when no config file was read, where one would have given the sources. */
function noConfigFileRead(config: KubeletConfig): string {
  return config.configFile
    ? ""
    : ` (none given, and no config file was read: install.sh writes ${INSTALLED_CONFIG_FILE}, read by default when present; --config_file FILE or $${CONFIG_FILE_ENV} names another)`;
}

async function startRun(resolved: ResolvedConfig & { notice?: string }, io: Io): Promise<number> {
  const { config } = resolved;
  const log = createLogger({ format: config.logFormat || undefined, verbosity: config.verbosity });
  if (resolved.notice) log.info(resolved.notice);
  const { runKubelet } = await import("../kubelet.ts");
  const stop = new AbortController();
  // A stop is bounded whatever holds it (a Docker Engine that does not answer, a handle left open):
  // past --stop_timeout the kubelet says so and exits. The timer is unref'd: a clean stop never waits on it.
  let deadline: ReturnType<typeof setTimeout> | undefined;
  const onSignal = (signal: string) => {
    log.info(`received ${signal}: stopping (at most ${formatDuration(config.stopTimeout)})`);
    stop.abort();
    deadline ??= setTimeout(() => {
      log.error(
        `did not stop within --stop_timeout ${formatDuration(config.stopTimeout)} of ${signal}: exiting now with code ${EXIT_STOP_TIMEOUT} (containers are left running)`,
      );
      io.exit(EXIT_STOP_TIMEOUT);
    }, config.stopTimeout);
    deadline.unref?.();
  };
  process.once("SIGTERM", onSignal).once("SIGINT", onSignal);
  let code = 0;
  try {
    await runKubelet(config, { log, signal: stop.signal, version: versionLine(), resolved });
  } catch (error) {
    log.error((error as Error).message, { code: (error as { code?: string }).code });
    code = 1;
  } finally {
    process.off("SIGTERM", onSignal).off("SIGINT", onSignal);
  }
  // The kubelet has stopped: calls still in flight (a pull, a request the engine has not answered)
  // are abandoned with it rather than holding the process open until their own deadlines.
  io.exit(code);
  return code;
}

async function startRunOnce(resolved: ResolvedConfig, command: Command, io: Io): Promise<number> {
  checkRunOnce(resolved.config, resolved.origins, command);
  const config = { ...resolved.config, enableServer: false, runonce: true };
  const log = createLogger({ format: config.logFormat || undefined, verbosity: config.verbosity });
  const { runOnce } = await import("../kubelet.ts");
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.once("SIGTERM", onSignal).once("SIGINT", onSignal);
  try {
    const ok = await runOnce(config, {
      log,
      signal: stop.signal,
      out: io.stdout,
      tty: io.stdout.isTTY === true,
      resolved,
    });
    return ok ? 0 : 1;
  } catch (error) {
    io.stderr.write(`kubelet: ${(error as Error).message}\n`);
    return 1;
  } finally {
    process.off("SIGTERM", onSignal).off("SIGINT", onSignal);
  }
}

async function startFleet(
  settings: EtcdClientSettings,
  options: { section: FleetSection; format: "table" | "json" | "yaml"; watch: boolean; io: Io },
): Promise<number> {
  const { fleetCommand } = await import("./fleet.ts");
  return withEtcd(settings, options.io, "cannot read the fleet from etcd", async (client, signal) => {
    await fleetCommand({ client, ...options, out: options.io.stdout, signal });
    return 0;
  });
}

/** Runs `fn` with an etcd client until it returns or SIGTERM/SIGINT; an error is one line naming `what` and the endpoints. */
async function withEtcd(
  settings: EtcdClientSettings,
  io: Io,
  what: string,
  fn: (client: EtcdClient, signal: AbortSignal) => Promise<number>,
): Promise<number> {
  const { createEtcdClient } = await import("../sources/etcd-client.ts");
  const client = createEtcdClient(settings);
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.once("SIGTERM", onSignal).once("SIGINT", onSignal);
  try {
    return await fn(client, stop.signal);
  } catch (error) {
    io.stderr.write(`kubelet: ${what} (${settings.endpoints.join(",")}): ${(error as Error).message}\n`);
    return 1;
  } finally {
    process.off("SIGTERM", onSignal).off("SIGINT", onSignal);
    client.close();
  }
}

function defaultIo(): Io {
  return {
    stdout: process.stdout,
    stderr: process.stderr,
    readStdin: async () => {
      const chunks: Buffer[] = [];
      for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
      return Buffer.concat(chunks).toString("utf8");
    },
    exit(code) {
      // Log lines still in the pipe go out first (process.exit drops them), for a second at most.
      process.exitCode = code;
      let pending = 2;
      const done = () => --pending === 0 && process.exit(code);
      process.stdout.write("", done);
      process.stderr.write("", done);
      setTimeout(() => process.exit(code), 1000).unref();
    },
  };
}
