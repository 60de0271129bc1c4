// The Docker shim's reading of a Localhost seccomp profile: Docker takes the profile's JSON, not a path,
// so the shim reads the file under the kubelet's seccomp root (as the dockershim's getSeccompDockerOpts did).
import { readFile } from "node:fs/promises";
import type { ContainerConfig } from "../cri-types.ts";
import { KubeletError } from "../../api/types.ts";

/** The JSON of the container's Localhost seccomp profile, or undefined when it asks for none. */
export async function localhostSeccompJson(config: ContainerConfig): Promise<string | undefined> {
  const profile = config.linux?.security_context?.seccomp;
  if (profile?.profile_type !== "Localhost") return undefined;
  const path = profile.localhost_ref ?? "";
  try {
    return JSON.stringify(JSON.parse(await readFile(path, "utf8")));
  } catch (error) {
    throw new KubeletError(
      "CreateContainerError",
      `failed to load seccomp profile "${path}" of container ${config.metadata.name}: ${(error as Error).message}`,
    );
  }
}
