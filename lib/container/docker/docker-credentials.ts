// Registry credentials from Docker's config.json, matched to an image's registry host.
import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import type { RegistryAuth } from "../runtime.ts";

const DOCKER_HUB = new Set(["docker.io", "index.docker.io", "registry-1.docker.io", "registry.hub.docker.com"]);

/** One registry's entry in a config.json `auths` map. */
export interface AuthEntry {
  auth?: string;
  username?: string;
  password?: string;
  identitytoken?: string;
}

/** Where credentials are looked for, first match wins: $DOCKER_CONFIG, ~/.docker, /root/.docker. */
export function defaultDockerConfigPaths(env: Record<string, string | undefined> = process.env): string[] {
  const paths = [
    env.DOCKER_CONFIG ? join(env.DOCKER_CONFIG, "config.json") : "",
    join(homedir(), ".docker", "config.json"),
    "/root/.docker/config.json",
  ];
  return [...new Set(paths.filter(Boolean))];
}

/** The registry host of an image reference (`busybox`, `library/busybox` → docker.io). */
export function registryOf(image: string): string {
  const first = image.split("/")[0]!;
  const host =
    image.includes("/") && (first.includes(".") || first.includes(":") || first === "localhost") ? first : "docker.io";
  return DOCKER_HUB.has(host) ? "docker.io" : host;
}

/** The registry host a config.json `auths` key names (`https://index.docker.io/v1/` → docker.io). */
function hostOfKey(key: string): string {
  const host = key
    .replace(/^[a-z]+:\/\//i, "")
    .split("/")[0]!
    .toLowerCase();
  return DOCKER_HUB.has(host) ? "docker.io" : host;
}

function readAuths(path: string): Record<string, AuthEntry> {
  try {
    return (JSON.parse(readFileSync(path, "utf8")) as { auths?: Record<string, AuthEntry> }).auths ?? {};
  } catch {
    return {};
  }
}

/** Credentials for the image's registry from the first config file that has them, or undefined. */
export function credentialsFor(image: string, paths: string[]): RegistryAuth | undefined {
  for (const path of paths) {
    const found = credentialsFromAuths(image, readAuths(path));
    if (found) return found;
  }
  return undefined;
}

/** Credentials for the image's registry from one config.json `auths` map (a file, or a dockerconfigjson Secret). */
export function credentialsFromAuths(image: string, auths: Record<string, AuthEntry>): RegistryAuth | undefined {
  const registry = registryOf(image);
  const entry = Object.entries(auths).find(([key]) => hostOfKey(key) === registry)?.[1];
  if (!entry) return undefined;
  const decoded = entry.auth ? Buffer.from(entry.auth, "base64").toString("utf8") : undefined;
  const colon = decoded?.indexOf(":") ?? -1;
  return {
    username: decoded !== undefined && colon >= 0 ? decoded.slice(0, colon) : entry.username,
    password: decoded !== undefined && colon >= 0 ? decoded.slice(colon + 1) : entry.password,
    serveraddress: registry === "docker.io" ? "https://index.docker.io/v1/" : registry,
    ...(entry.identitytoken ? { identitytoken: entry.identitytoken } : {}),
  };
}
