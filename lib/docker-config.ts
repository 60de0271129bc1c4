// Registry credentials from Docker's config.json, matched to an image's registry host.
import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import type { RegistryAuth } from "./container/runtime.ts";

const DOCKER_HUB = ["docker.io", "index.docker.io", "registry-1.docker.io", "https://index.docker.io/v1/", "https://index.docker.io/v1"];

/** Where credentials are looked for, first match wins. */
export function defaultDockerConfigPaths(env: Record<string, string | undefined> = process.env): string[] {
  return [env.DOCKER_CONFIG ? join(env.DOCKER_CONFIG, "config.json") : "", join(homedir(), ".docker", "config.json"), "/root/.docker/config.json"].filter(Boolean);
}

/** The registry host of an image reference (`busybox` → docker.io). */
export function registryOf(image: string): string {
  const first = image.split("/")[0]!;
  return image.includes("/") && (first.includes(".") || first.includes(":") || first === "localhost") ? first : "docker.io";
}

/** Credentials for the image's registry, or undefined. */
export function credentialsFor(image: string, paths: string[]): RegistryAuth | undefined {
  const registry = registryOf(image);
  const candidates = registry === "docker.io" ? DOCKER_HUB : [registry, `https://${registry}`, `http://${registry}`];
  for (const path of paths) {
    let auths: Record<string, { auth?: string; username?: string; password?: string; identitytoken?: string }>;
    try {
      auths = (JSON.parse(readFileSync(path, "utf8")) as { auths?: typeof auths }).auths ?? {};
    } catch {
      continue;
    }
    for (const key of candidates) {
      const entry = auths[key] ?? auths[key.replace(/\/$/, "")];
      if (!entry) continue;
      const [username, ...rest] = entry.auth ? Buffer.from(entry.auth, "base64").toString("utf8").split(":") : [entry.username, entry.password];
      return { username, password: rest.join(":") || entry.password, serveraddress: registry === "docker.io" ? "https://index.docker.io/v1/" : registry, ...(entry.identitytoken ? { identitytoken: entry.identitytoken } : {}) };
    }
  }
  return undefined;
}
